"""Feed bytes -> :class:`signaldesk.items.Item` records (RSS, Atom, RDF, CDF and JSON Feed).

feedparser reads the XML flavours; it is handed the raw bytes *and* the HTTP
``Content-Type`` so that it decides the character encoding by its own rules (RFC 3023:
a header charset wins over the XML declaration, ``text/xml`` without one means
us-ascii, ...). feedparser does not read JSON Feed (jsonfeed.org 1.0/1.1), so that is
parsed here with :mod:`json`.
"""

from __future__ import annotations

import calendar
import dataclasses
import hashlib
import html
import io
import json
import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import feedparser

from signaldesk.items import Item
from signaldesk.sources.errors import FeedParseError
from signaldesk.sources.html_markdown import FEED, html_to_text
from signaldesk.sources.html_markdown import html_to_markdown as _to_markdown

__all__ = ["ParsedFeed", "parse_feed"]

logger = logging.getLogger(__name__)

_JSONFEED_PREFIX = "https://jsonfeed.org/version/"
_JSONFEED_PREFIX_HTTP = "http://jsonfeed.org/version/"
_UNTITLED = "(untitled)"
_HTML_ROOT = re.compile(rb"<html[\s>]", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ParsedFeed:
    """One parsed feed document.

    :param items: the entries, newest first as the feed ordered them.
    :param title: the feed's own title (used as each item's ``site_name``).
    :param link: the site's home page, if the feed names it.
    :param ttl_seconds: the feed's ``<ttl>`` (minutes in RSS), in seconds.
    :param warning: why the document was malformed, when it still yielded entries.
    :param version: feedparser's version string (``rss20``, ``atom10``, ...) or ``json1.1``.
    :param encoding: the character encoding the parser settled on.
    """

    items: tuple[Item, ...]
    title: str | None = None
    link: str | None = None
    ttl_seconds: float | None = None
    warning: str | None = None
    version: str = ""
    encoding: str | None = None


def parse_feed(
    data: bytes,
    *,
    url: str,
    content_type: str | None = None,
    source_id: str | None = None,
) -> ParsedFeed:
    """Parse a feed document into items.

    :param data: the raw response body (never pre-decoded: the encoding is the parser's call).
    :param url: where the bytes came from; the base for relative links.
    :param content_type: the HTTP ``Content-Type`` header, exactly as received.
    :param source_id: the subscription's URL for ``Item.source_id`` (defaults to ``url``).
    :raises FeedParseError: nothing usable — not a feed, or so broken it has no entries.
    """
    source = source_id or url
    if _looks_like_json(data, content_type):
        return _parse_json_feed(data, url=url, source_id=source)
    # No Content-Type at all is read as generic XML (the XML declaration decides, else
    # UTF-8); telling feedparser "no header" would make it assume ISO-8859-1.
    headers = {"content-type": content_type or "application/xml", "content-location": url}
    try:
        # A stream, never the bytes themselves: feedparser.parse() tries bytes as a file
        # name first, so a body of b"/etc/passwd" would be read from the local disk.
        parsed = feedparser.parse(io.BytesIO(data), response_headers=headers, sanitize_html=True)
    except Exception as exc:  # feedparser catches nearly everything; a crash is still ours
        raise FeedParseError(f"feed parser crashed on {url}: {exc!r}") from exc
    warning = _bozo_warning(parsed)
    feed = parsed.get("feed", {})
    title = _text_field(feed, "title") or None
    entries = parsed.get("entries", [])
    # A well-formed document with channel data but no entries yet is an empty feed;
    # a broken one without entries, or XML that is no feed at all, is an error.
    version = parsed.get("version") or ""
    if not entries and not version and _HTML_ROOT.search(data[:4096]):
        raise FeedParseError(
            f"not a readable feed: {url} is an HTML page",
            hint="use the feed's own URL (look for an RSS or Atom link on the page)",
        )
    if not entries and (warning or not (version or feed)):
        raise FeedParseError(
            f"not a readable feed: {url}" + (f" ({warning})" if warning else ""),
            hint="check the URL points at an RSS, Atom, RDF or JSON feed",
        )
    feed_authors = _names(feed.get("authors"), feed.get("author"))
    items = tuple(
        item
        for entry in entries
        if (
            item := _item_from_entry(
                entry, source_id=source, feed_title=title, feed_authors=feed_authors
            )
        )
        is not None
    )
    return ParsedFeed(
        items=_without_people_tags(items),
        title=title,
        link=feed.get("link") or None,
        ttl_seconds=_ttl(feed.get("ttl")),
        warning=warning,
        version=version,
        encoding=parsed.get("encoding") or None,
    )


def _markdown(html: str, *, base_url: str | None) -> str:
    """Feed content as markdown (the feed profile of the one converter)."""
    return _to_markdown(html, profile=FEED, base_url=base_url)


def _bozo_warning(parsed: Mapping[str, Any]) -> str | None:
    if not parsed.get("bozo"):
        return None
    exc = parsed.get("bozo_exception")
    return f"{type(exc).__name__}: {exc}" if exc is not None else "malformed feed"


def _ttl(raw: object) -> float | None:
    try:
        minutes = float(str(raw).strip())
    except (TypeError, ValueError):
        return None
    return minutes * 60 if minutes > 0 else None


def _item_from_entry(
    entry: dict[str, Any], *, source_id: str, feed_title: str | None, feed_authors: str | None
) -> Item | None:
    link = _first_link(entry)
    text = _content_markdown(entry, link)
    summary_html = entry.get("summary", "")
    if _is_plain(entry, "summary"):
        summary = summary_html.strip()
    else:
        summary = _markdown(summary_html, base_url=link) if summary_html else ""
    if not text:
        text = summary
    title = _text_field(entry, "title")
    if not (title or text or link):
        return None
    # dict.get, not entry.get: FeedParserDict maps a missing updated_parsed onto
    # published_parsed with a DeprecationWarning; read the real keys only.
    published = _struct_to_datetime(
        dict.get(entry, "published_parsed")
        or dict.get(entry, "updated_parsed")
        or dict.get(entry, "created_parsed")
    )
    guid = (entry.get("id") or "").strip() or link or _hash_guid(title, published, text)
    extra: dict[str, Any] = {}
    enclosures = [
        e.get("href")
        for e in entry.get("enclosures", [])
        if isinstance(e, Mapping) and e.get("href")
    ]
    if enclosures:
        extra["enclosures"] = enclosures
    if entry.get("comments"):
        extra["comments"] = entry["comments"]
    return Item(
        source_kind="rss",
        source_id=source_id,
        title=title or _title_from_text(text) or link or _UNTITLED,
        text=text,
        guid=guid,
        url=link,
        summary=summary or None,
        author=_names(entry.get("authors"), entry.get("author")) or feed_authors,
        published=published,
        tags=_tags(entry.get("tags")),
        site_name=feed_title,
        extra=extra,
    )


def _is_plain(element: Mapping[str, Any], key: str) -> bool:
    """Whether feedparser read ``element[key]`` as plain text (``<title type="text">``).

    Why: plain text is already decoded, so its ``<`` is a character: "The &lt;dialog&gt;
    element" arrives as "The <dialog> element", and read as HTML again it lost the
    element name (a ``<script>`` in a title lost all that followed it).
    """
    detail = element.get(f"{key}_detail")
    return isinstance(detail, Mapping) and detail.get("type") == "text/plain"


def _text_field(element: Mapping[str, Any], key: str) -> str:
    """A title (of a feed or an entry) as one line of plain text."""
    value = element.get(key, "")
    if not isinstance(value, str):
        return ""
    return html_to_text(html.escape(value, quote=False) if _is_plain(element, key) else value)


def _first_link(entry: Mapping[str, Any]) -> str | None:
    """The entry's web address: its link, else its first alternate link, if http(s).

    Why: an entry without a link gets its id as ``link`` from feedparser
    (``guidislink``), and a note was filed with ``source: urn:uuid:6f1c…`` or
    ``tag:github.com,2008:…`` (and its page was asked for); an id is no address.
    """
    candidates = [entry.get("link")] + [
        c.get("href")
        for c in entry.get("links", [])
        if isinstance(c, Mapping) and c.get("rel", "alternate") == "alternate"
    ]
    for candidate in candidates:
        link = str(candidate or "").strip()
        if link and urlsplit(link).scheme.lower() in {"http", "https"}:
            return link
    return None


def _content_markdown(entry: Mapping[str, Any], base_url: str | None) -> str:
    """The richest body the entry carries (content:encoded, atom:content), as markdown."""
    best = ""
    for content in entry.get("content", []):
        value = content.get("value", "") if isinstance(content, Mapping) else ""
        if not value.strip():
            continue
        if content.get("type", "text/html") == "text/plain":
            rendered = value.strip()
        else:
            rendered = _markdown(value, base_url=base_url)
        if len(rendered) > len(best):
            best = rendered
    return best


def _struct_to_datetime(value: time.struct_time | None) -> datetime | None:
    # feedparser normalises every date it understands to a UTC struct_time.
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(calendar.timegm(value), tz=UTC)
    except (OverflowError, ValueError, OSError):
        return None


def _hash_guid(title: str, published: datetime | None, text: str) -> str:
    basis = f"{title}\n{published.isoformat() if published else ''}"
    if not title and published is None:
        basis += "\n" + text
    return "sha256:" + hashlib.sha256(basis.encode("utf-8")).hexdigest()[:32]


def _title_from_text(text: str, words: int = 12) -> str:
    plain = " ".join(text.split())
    head = " ".join(plain.split(" ")[:words])
    return head + ("…" if len(head) < len(plain) else "")


def _names(authors: object, author: object) -> str | None:
    names: list[str] = []
    if isinstance(authors, Sequence) and not isinstance(authors, str):
        for entry in authors:
            if isinstance(entry, Mapping):
                name = html_to_text(str(entry.get("name") or ""))
                if name and name not in names:
                    names.append(name)
    if not names and isinstance(author, str) and author.strip():
        names.append(html_to_text(author))
    return ", ".join(names) or None


def _tags(raw: object) -> tuple[str, ...]:
    out: list[str] = []
    if isinstance(raw, Iterable) and not isinstance(raw, str | bytes):
        for tag in raw:
            term = ""
            if isinstance(tag, Mapping):
                term = str(tag.get("term") or tag.get("label") or "")
            elif isinstance(tag, str):
                term = tag
            term = " ".join(term.split())
            if term and term not in out:
                out.append(term)
    return tuple(out)


_BYLINE = re.compile(r"^\W*(?:(?:written|posted)\s+)?(?:by|authors?)\b\W*", re.IGNORECASE)
_MD_MARKUP = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|[*_`\\]")


def _bylines(text: str) -> str:
    """The entry's credit lines ("By Ann Lee and Bo Chen (Security)"), joined."""
    found: list[str] = []
    for block in text.split("\n\n"):
        for line in block.splitlines():
            plain = " ".join(_MD_MARKUP.sub(lambda m: m.group(1) or "", line).split())
            if _BYLINE.match(plain) and len(plain) <= 400:
                found.append(plain)
    return "\n".join(found)


def _without_people_tags(items: Sequence[Item]) -> tuple[Item, ...]:
    """The items with categories that name their authors taken out of their tags.

    Trigger: blogs (Blogger among them) label each post with its authors' names, so
    every person became a tag (``Patrik-Höglund``). A category counts as a name when,
    anywhere in the feed, it is an entry's author or appears in an entry's opening
    byline; such a category is then dropped from every entry. Topic labels stay.
    """
    people: set[str] = set()
    for item in items:
        names = [n.strip() for n in re.split(r",|\band\b|&", item.author or "")]
        people.update(n.casefold() for n in names if n)
        byline = _bylines(item.text)
        if byline:
            folded = byline.casefold()
            people.update(t.casefold() for t in item.tags if t.casefold() in folded)
    if not people:
        return tuple(items)
    return tuple(
        dataclasses.replace(item, tags=tuple(t for t in item.tags if t.casefold() not in people))
        if any(t.casefold() in people for t in item.tags)
        else item
        for item in items
    )


# -- JSON Feed ---------------------------------------------------------------------


def _looks_like_json(data: bytes, content_type: str | None) -> bool:
    # The body decides, not the header: servers label feeds wrongly both ways
    # (RSS as application/json, JSON Feed as text/plain).
    head = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"{"):
        return True
    mime = (content_type or "").split(";")[0].strip().lower()
    return (mime == "application/feed+json" or mime.endswith("+json")) and not head.startswith(b"<")


def _parse_json_feed(data: bytes, *, url: str, source_id: str) -> ParsedFeed:
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise FeedParseError(f"invalid JSON from {url}: {exc}") from exc
    except RecursionError as exc:
        # Trigger: a body of 50,000 nested brackets. Why: json recurses per level, and
        # an uncaught RecursionError once stopped every scan. Outcome: this feed fails.
        raise FeedParseError(f"JSON from {url} is nested too deeply to be a feed") from exc
    version = doc.get("version", "") if isinstance(doc, dict) else ""
    if not isinstance(version, str) or not version.startswith(
        (_JSONFEED_PREFIX, _JSONFEED_PREFIX_HTTP)
    ):
        raise FeedParseError(
            f"JSON from {url} is not a JSON Feed (no jsonfeed.org version)",
            hint="check the URL points at an RSS, Atom, RDF or JSON feed",
        )
    raw_items = doc.get("items")
    if not isinstance(raw_items, list):
        raise FeedParseError(f"JSON Feed from {url} has no items list")
    title = _str(doc.get("title")) or None
    feed_authors = _json_authors(doc)
    items: list[Item] = []
    for raw in raw_items:
        if isinstance(raw, dict) and (
            item := _json_item(
                raw, source_id=source_id, feed_title=title, feed_authors=feed_authors
            )
        ):
            items.append(item)
    return ParsedFeed(
        items=_without_people_tags(items),
        title=title,
        link=_str(doc.get("home_page_url")) or None,
        version="json" + version.rsplit("/", 1)[-1],
        encoding="utf-8",
    )


def _str(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _json_authors(obj: Mapping[str, Any]) -> str | None:
    authors = obj.get("authors")  # 1.1
    if not isinstance(authors, list):
        single = obj.get("author")  # 1.0
        authors = [single] if isinstance(single, dict) else []
    names = [_str(a.get("name")) for a in authors if isinstance(a, dict)]
    return ", ".join(n for n in names if n) or None


def _json_date(value: object) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _json_item(
    raw: Mapping[str, Any], *, source_id: str, feed_title: str | None, feed_authors: str | None
) -> Item | None:
    link = _str(raw.get("url")) or _str(raw.get("external_url")) or None
    html = _str(raw.get("content_html"))
    text = _markdown(html, base_url=link) if html else _str(raw.get("content_text"))
    summary = _str(raw.get("summary")) or None
    if not text and summary:
        text = summary
    title = html_to_text(_str(raw.get("title")))
    if not (title or text or link):
        return None
    published = _json_date(raw.get("date_published")) or _json_date(raw.get("date_modified"))
    raw_id = raw.get("id")
    guid = (str(raw_id).strip() if raw_id is not None else "") or link
    guid = guid or _hash_guid(title, published, text)
    tags = raw.get("tags")
    extra: dict[str, Any] = {}
    attachments = raw.get("attachments")
    if isinstance(attachments, list):
        hrefs = [_str(a.get("url")) for a in attachments if isinstance(a, dict) and a.get("url")]
        if hrefs:
            extra["enclosures"] = hrefs
    if _str(raw.get("external_url")) and _str(raw.get("url")):
        extra["external_url"] = _str(raw.get("external_url"))
    return Item(
        source_kind="rss",
        source_id=source_id,
        title=title or _title_from_text(text) or link or _UNTITLED,
        text=text,
        guid=guid,
        url=link,
        summary=summary,
        author=_json_authors(raw) or feed_authors,
        published=published,
        tags=_tags(tags if isinstance(tags, list) else ()),
        site_name=feed_title,
        extra=extra,
    )
