"""Untrusted HTML made safe to render: parsed whatever it is, stripped of what a reader
never sees (scripts, styles, embeds, hidden elements, tracking pixels).

The first half of :mod:`sources.html_markdown`; :mod:`sources.newsletter_body` also
works on the cleaned tree (the "view online" link) before it is rendered.
"""

from __future__ import annotations

import html as html_lib
import re
import threading

import lxml.etree
import lxml.html
from lxml.html import HtmlElement

from signaldesk.sources.tracking import is_tracking_pixel_url

__all__ = ["DROP_TAGS", "INVISIBLE", "WHITESPACE", "clean_tree", "parse_html", "strip_tags"]

# Elements whose content is never text a reader sees.
DROP_TAGS = frozenset(
    [
        "script",
        "style",
        "noscript",
        "template",
        "head",
        "title",
        "meta",
        "link",
        "iframe",
        "form",
        "input",
        "button",
        "select",
        "textarea",
        "svg",
        "math",
        "object",
        "embed",
        "canvas",
        "map",
        "area",
        "audio",
        "video",
        "source",
        "track",
    ]
)
_HIDDEN_STYLE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|mso-hide\s*:\s*all"
    r"|max-height\s*:\s*0(?:px)?\s*(?:[;!]|$)|opacity\s*:\s*0(?:\.0+)?\s*(?:[;!]|$)",
    re.IGNORECASE,
)
_STYLE_SIZE = re.compile(r"(?<![-\w])(width|height)\s*:\s*(\d+(?:\.\d+)?)\s*(px)?", re.IGNORECASE)
# Characters libxml2 refuses in text (a NUL in a mail once stopped the converter).
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
INVISIBLE = re.compile("[\u00ad\u034f\u180e\u200b-\u200f\u2060-\u2064\ufeff]")
WHITESPACE = re.compile(r"[ \t\r\n\f\v\u00a0\u2000-\u200a\u202f\u205f\u3000]+")

# One parser per thread: a scan converts feed content, pages and mails in several
# worker threads at once, and an lxml parser object must not be used by two threads at
# the same time (a shared one is how trafilatura corrupted memory, see sources.fulltext).
_PARSERS = threading.local()


def _parser() -> lxml.html.HTMLParser:
    parser: lxml.html.HTMLParser | None = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = lxml.html.HTMLParser(huge_tree=True, remove_comments=True, remove_pis=True)
        _PARSERS.parser = parser
    return parser


def parse_html(html: str) -> HtmlElement:
    """Parse (possibly broken) HTML into a document; an empty one gives an empty body."""
    html = _XML_INVALID.sub("", re.sub(r"^\s*<\?xml[^>]*>", "", html))
    if not html.strip():
        return _empty()
    try:
        # huge_tree: libxml2 otherwise gives up on nesting deeper than 256 and returns an
        # empty document, losing all the text of a (hostile or badly generated) page.
        return lxml.html.document_fromstring(html, parser=_parser())
    except (lxml.etree.ParserError, ValueError):
        return _empty()


def _empty() -> HtmlElement:
    return lxml.html.fromstring("<html><body></body></html>")


def clean_tree(root: HtmlElement) -> int:
    """Remove scripts, embeds, hidden elements and tracking pixels in place.

    :returns: how many tracking pixels (images) went.
    """
    for el in list(root.iter()):
        if not isinstance(el.tag, str) or (
            el.tag.lower() in DROP_TAGS and el.getparent() is not None
        ):
            _drop(el)
    removed = 0
    for el in list(root.iter()):
        if not isinstance(el.tag, str) or el.getparent() is None:
            continue
        if el.get("hidden") is not None or _HIDDEN_STYLE.search(el.get("style") or ""):
            removed += sum(1 for _ in el.iter("img"))
            _drop(el)
    for img in list(root.iter("img")):
        if img.getparent() is not None and _is_pixel(img):
            removed += 1
            _drop(img)
    return removed


def _drop(el: lxml.etree._Element) -> None:
    """Remove ``el`` but keep its tail text (``drop_tree`` for any kind of node)."""
    parent = el.getparent()
    if parent is None:
        return
    tail = el.tail
    previous = el.getprevious()
    parent.remove(el)
    if tail:
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail


def _size(value: str | None) -> float | None:
    match = re.match(r"\s*(\d+(?:\.\d+)?)", value or "")
    return float(match.group(1)) if match else None


def _is_pixel(img: HtmlElement) -> bool:
    src = (img.get("src") or "").strip()
    if src and is_tracking_pixel_url(src):
        return True
    sizes = [_size(img.get("width")), _size(img.get("height"))]
    for _name, number, unit in _STYLE_SIZE.findall(img.get("style") or ""):
        if unit or number == "0":
            sizes.append(float(number))
    return any(size is not None and size <= 2 for size in sizes)


def strip_tags(html: str) -> str:
    """Last-resort plain text of HTML the parser could not build a tree for.

    Trigger: libxml2 drops everything below ~2,000 nested elements, so a hostile document
    could come out empty. Outcome: the text survives without its markup.
    """
    html = re.sub(r"(?is)<(script|style|head)\b.*?</\1\s*>", " ", html)
    text = html_lib.unescape(re.sub(r"<[^>]*>", " ", html))
    paragraphs = (
        WHITESPACE.sub(" ", INVISIBLE.sub("", p)).strip() for p in re.split(r"\n\s*\n", text)
    )
    return "\n\n".join(p for p in paragraphs if p)
