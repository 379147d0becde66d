"""OPML import and export of feed subscriptions.

Import is tolerant of what feed readers really write (nested folders, ``text`` without
``title``, odd attribute case, a stray unescaped ``&``) and safe: lxml with entity
resolution, DTD loading and network access all off, so an entity-expansion or external
entity document cannot hurt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lxml import etree

from signaldesk.sources.errors import OpmlError

__all__ = ["OpmlFeed", "export_opml", "parse_opml"]

_DOCTYPE = re.compile(rb"<!DOCTYPE\b(?:[^\[>]*\[.*?\]\s*>|[^>]*>)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class OpmlFeed:
    """One subscription from (or for) an OPML file.

    :param category: the folder path, ``/``-separated (``"Tech/Security"``), if any.
    """

    url: str
    title: str | None = None
    html_url: str | None = None
    category: str | None = None


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        recover=True,  # real-world OPML has unescaped "&" in titles and URLs
        remove_comments=True,
        remove_pis=True,
    )


def _attr(element: etree._Element, name: str) -> str | None:
    """An attribute by case-insensitive name (``xmlUrl``, ``xmlurl``, ``XMLURL`` ...)."""
    wanted = name.lower()
    attrib: Mapping[str, str] = element.attrib
    for key, value in attrib.items():
        if key.lower() == wanted and value and value.strip():
            return value.strip()
    return None


def parse_opml(data: bytes) -> list[OpmlFeed]:
    """The feeds listed in an OPML document, in document order, each URL once.

    :raises OpmlError: the document is not OPML (or not XML at all).
    """
    if not data.strip():
        raise OpmlError("empty OPML document")
    # libxml2 expands *internal* entities in attribute values even with
    # resolve_entities=False (a billion-laughs title): OPML never needs a DTD, so the
    # DOCTYPE goes before parsing and any entity left undefined is dropped by recover.
    data = _DOCTYPE.sub(b"", data, count=1)
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        raise OpmlError(f"not an XML document: {exc}") from exc
    if (
        root is None
        or not isinstance(root.tag, str)
        or etree.QName(root).localname.lower() != "opml"
    ):
        raise OpmlError(
            "not an OPML document (no <opml> root)", hint="export OPML from your reader"
        )
    body = next((el for el in root if isinstance(el.tag, str) and el.tag.lower() == "body"), None)
    if body is None:
        raise OpmlError("OPML document has no <body>")
    feeds: list[OpmlFeed] = []
    seen: set[str] = set()
    _walk(body, [], feeds, seen)
    return feeds


def _walk(parent: etree._Element, path: list[str], feeds: list[OpmlFeed], seen: set[str]) -> None:
    for outline in parent:
        if not isinstance(outline.tag, str) or outline.tag.lower() != "outline":
            continue
        title = _attr(outline, "title") or _attr(outline, "text")
        url = _attr(outline, "xmlUrl")
        if url:
            if url not in seen:
                seen.add(url)
                category = "/".join(path) or _category_attr(outline)
                feeds.append(
                    OpmlFeed(
                        url=url,
                        title=title,
                        html_url=_attr(outline, "htmlUrl"),
                        category=category or None,
                    )
                )
            # A feed outline's children (rare) are still looked at.
            _walk(outline, path, feeds, seen)
        else:
            _walk(outline, [*path, title] if title else path, feeds, seen)


def _category_attr(outline: etree._Element) -> str | None:
    # OPML 2.0 "category": comma-separated slash-delimited paths; the first one wins.
    raw = _attr(outline, "category")
    if not raw:
        return None
    first = raw.split(",")[0].strip().strip("/")
    return first or None


def export_opml(feeds: Iterable[OpmlFeed], *, title: str = "signaldesk subscriptions") -> bytes:
    """An OPML 2.0 document of ``feeds``, folders nested by ``category`` paths."""
    root = etree.Element("opml", version="2.0")
    head = etree.SubElement(root, "head")
    etree.SubElement(head, "title").text = title
    body = etree.SubElement(root, "body")
    folders: dict[tuple[str, ...], etree._Element] = {(): body}
    for feed in feeds:
        parts = tuple(p.strip() for p in (feed.category or "").split("/") if p.strip())
        parent = body
        for depth in range(1, len(parts) + 1):
            key = parts[:depth]
            if key not in folders:
                folders[key] = etree.SubElement(
                    folders[key[:-1]], "outline", text=key[-1], title=key[-1]
                )
            parent = folders[key]
        attributes = {"type": "rss", "text": feed.title or feed.url}
        if feed.title:
            attributes["title"] = feed.title
        attributes["xmlUrl"] = feed.url
        if feed.html_url:
            attributes["htmlUrl"] = feed.html_url
        etree.SubElement(parent, "outline", attributes)
    result: bytes = etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)
    return result
