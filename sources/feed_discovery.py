"""Finding a site's feeds from one of its web pages (`feeds add https://blog.example/`).

Trigger: people paste the address of the blog, not of its feed; every feed reader
accepts that. Why it works: a page announces its feeds in its head, as
``<link rel="alternate" type="application/rss+xml" href="/feed.xml" title="...">``
(RSS, Atom, RDF or JSON Feed). Outcome: those links, resolved against the page's URL
(and its ``<base href>``), in page order, without repeats; the caller tries them in turn.
"""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

__all__ = ["FEED_LINK_TYPES", "feed_links"]

FEED_LINK_TYPES = frozenset(
    {
        "application/rss+xml",
        "application/atom+xml",
        "application/rdf+xml",
        "application/feed+json",
        "application/json",
        "text/xml",
        "application/xml",
    }
)
"""The ``type`` of a ``<link rel="alternate">`` that names a feed."""

# A JSON or generic XML alternate is a feed only where it says so ("JSON Feed", "RSS").
_WEAK_TYPES = frozenset({"application/json", "text/xml", "application/xml"})
_MAX_LINKS = 5  # tried in turn by `feeds add`: a page's first feeds are its main ones


class _LinkParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base: str | None = None
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name.lower(): (value or "").strip() for name, value in attrs}
        if tag == "base" and self.base is None and values.get("href"):
            self.base = values["href"]
        elif tag == "link" and "alternate" in values.get("rel", "").lower().split():
            kind = values.get("type", "").lower().split(";")[0].strip()
            title = values.get("title", "").lower()
            if kind in _WEAK_TYPES and not any(w in title for w in ("feed", "rss", "atom")):
                return
            if kind in FEED_LINK_TYPES and values.get("href"):
                self.links.append(values["href"])


def feed_links(html: bytes, page_url: str) -> list[str]:
    """The feed URLs ``html`` (the page at ``page_url``) links to, in page order.

    Only absolute http(s) URLs come back; a page that cannot be parsed gives what was
    read before the fault.
    """
    parser = _LinkParser()
    try:
        parser.feed(html.decode("utf-8", errors="replace"))
        parser.close()
    except (AssertionError, ValueError):  # HTMLParser's faults on badly broken markup
        pass
    base = urljoin(page_url, parser.base) if parser.base else page_url
    found: list[str] = []
    for href in parser.links:
        url = urljoin(base, href)
        if urlsplit(url).scheme in ("http", "https") and url not in found and url != page_url:
            found.append(url)
    return found[:_MAX_LINKS]
