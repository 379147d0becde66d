"""E-mail HTML to markdown, keeping every section and link, dropping hidden bits and pixels.

Why not trafilatura here (it is used for web pages in ``sources.fulltext``): its main-content
extraction is built for article pages, and on the real newsletters in the test data it either
rendered the layout tables as pipe tables full of empty cells or dropped whole sections. Mail
HTML is nested layout tables, so this converter unwraps every table into plain blocks and
keeps everything visible.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable
from urllib.parse import urljoin

import lxml.etree
import lxml.html
from lxml.html import HtmlElement

from signaldesk.sources.tracking import is_tracking_pixel_url, strip_tracking_params

__all__ = [
    "clean_tree",
    "html_to_markdown",
    "html_to_text",
    "parse_html",
    "strip_tags",
    "tree_to_markdown",
]

_DROP_TAGS = frozenset(
    {
        "script",
        "style",
        "head",
        "title",
        "meta",
        "link",
        "noscript",
        "template",
        "svg",
        "object",
        "embed",
        "iframe",
        "form",
        "input",
        "button",
        "select",
        "textarea",
        "map",
        "area",
        "video",
        "audio",
        "canvas",
    }
)
_BLOCK_TAGS = frozenset(
    {
        "p",
        "div",
        "table",
        "tbody",
        "thead",
        "tfoot",
        "tr",
        "td",
        "th",
        "center",
        "section",
        "article",
        "header",
        "footer",
        "main",
        "aside",
        "nav",
        "address",
        "figure",
        "figcaption",
        "dl",
        "dt",
        "dd",
        "body",
        "html",
        "caption",
        "details",
        "summary",
    }
)
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_HIDDEN_STYLE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|mso-hide\s*:\s*all|max-height\s*:\s*0(?:px)?\s*[;!]"
    r"|opacity\s*:\s*0(?:\.0+)?\s*(?:;|$)",
    re.IGNORECASE,
)
_STYLE_SIZE = re.compile(r"(?<![-\w])(width|height)\s*:\s*(\d+(?:\.\d+)?)\s*(px)?", re.IGNORECASE)
_INVISIBLE = re.compile("[\u00ad\u034f\u180e\u200b-\u200f\u2060-\u2064\ufeff]")
_SPACES = re.compile(r"[ \t\r\n\f\v\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_BR = "\ue000"  # a private-use marker for <br>, turned into a newline after squashing spaces


_PARSER = lxml.html.HTMLParser(huge_tree=True, remove_comments=True, remove_pis=True)
# Deeper than this, a subtree is rendered as plain text: the renderer recurses per element.
_MAX_DEPTH = 120


def parse_html(html: str) -> HtmlElement:
    """Parse (possibly broken) HTML into an lxml tree; an empty document gives an empty body."""
    # lxml refuses str input that carries an XML encoding declaration; drop it, we decoded.
    html = re.sub(r"^\s*<\?xml[^>]*>", "", html)
    if not html.strip():
        return lxml.html.fromstring("<html><body></body></html>")
    try:
        # huge_tree: libxml2 otherwise gives up on nesting deeper than 256 and returns an
        # empty document, losing all the text of a (hostile or badly generated) mail.
        return lxml.html.document_fromstring(html, parser=_PARSER)
    except (lxml.etree.ParserError, ValueError):
        return lxml.html.fromstring("<html><body></body></html>")


def _size_attr(value: str | None) -> float | None:
    if value is None:
        return None
    match = re.match(r"\s*(\d+(?:\.\d+)?)", value)
    return float(match.group(1)) if match else None


def _is_pixel(img: HtmlElement) -> bool:
    src = (img.get("src") or "").strip()
    if src and is_tracking_pixel_url(src):
        return True
    sizes = [_size_attr(img.get("width")), _size_attr(img.get("height"))]
    for _name, number, unit in _STYLE_SIZE.findall(img.get("style") or ""):
        if unit or number == "0":
            sizes.append(float(number))
    return any(size is not None and size <= 2 for size in sizes)


def clean_tree(root: HtmlElement) -> int:
    """Remove scripts, hidden elements and tracking pixels in place; returns pixels removed."""
    for comment in root.xpath("//comment() | //processing-instruction()"):
        _drop(comment)
    for el in list(root.iter()):
        if not isinstance(el.tag, str):
            continue
        tag = el.tag.lower()
        if tag in _DROP_TAGS and el.getparent() is not None:
            _drop(el)
    removed = 0
    for el in list(root.iter()):
        if not isinstance(el.tag, str) or el.getparent() is None:
            continue
        hidden = el.get("hidden") is not None or _HIDDEN_STYLE.search(el.get("style") or "")
        if hidden:
            removed += sum(1 for _ in el.iter("img"))
            _drop(el)
    for img in list(root.iter("img")):
        if img.getparent() is not None and _is_pixel(img):
            removed += 1
            _drop(img)
    return removed


def _drop(el: lxml.etree._Element) -> None:
    """Remove ``el`` but keep its tail text (lxml's ``drop_tree`` semantics for any node)."""
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


def _squash(text: str) -> str:
    text = _SPACES.sub(" ", _INVISIBLE.sub("", text))
    text = re.sub(r" ?" + _BR + " ?", _BR, text).strip(" ")
    return re.sub(_BR + "{2,}", "\n\n", text).replace(_BR, "\n").strip()


def _absolute(url: str | None, base_url: str | None) -> str | None:
    if not url:
        return None
    url = url.strip()
    if base_url and not re.match(r"[a-z][a-z0-9+.-]*:", url, re.IGNORECASE):
        url = urljoin(base_url, url)
    return url if re.match(r"https?://", url, re.IGNORECASE) else None


def _link_target(href: str | None, base_url: str | None) -> str | None:
    if href and href.strip().lower().startswith("mailto:"):
        return href.strip()
    # Anchors, javascript: and relative links without a base (mail has none) become plain text.
    url = _absolute(href, base_url)
    return strip_tracking_params(url) if url else None


def _md_url(url: str) -> str:
    return f"<{url}>" if re.search(r"[\s()<>]", url) else url


class _Renderer:
    """Walks a cleaned tree and collects markdown blocks."""

    def __init__(self, *, in_link: bool = False, base_url: str | None = None) -> None:
        self.blocks: list[str] = []
        self.inline: list[str] = []
        self.in_link = in_link
        self.base_url = base_url
        self.depth = 0

    def sub(self, *, in_link: bool | None = None) -> _Renderer:
        renderer = _Renderer(
            in_link=self.in_link if in_link is None else in_link, base_url=self.base_url
        )
        renderer.depth = self.depth
        return renderer

    def flush(self) -> None:
        text = _squash("".join(self.inline))
        self.inline = []
        if text:
            self.blocks.append(text)

    def children(self, el: HtmlElement) -> None:
        if el.text:
            self.inline.append(el.text)
        for child in el:
            if isinstance(child.tag, str):
                self.render(child)
            if child.tail:
                self.inline.append(child.tail)

    def inline_text(self, el: HtmlElement, *, in_link: bool | None = None) -> str:
        sub = self.sub(in_link=in_link)
        sub.children(el)
        sub.flush()
        return " ".join(" ".join(b.split()) for b in sub.blocks)

    def _wrap(self, el: HtmlElement, mark: str) -> None:
        text = self.inline_text(el)
        if not text:
            return
        # Emphasis marks must hug the text ("**bold**," not "** bold **,"); spaces that were
        # inside the element move outside it, so words do not run together.
        inner = el.text_content()
        before = " " if inner[:1].isspace() else ""
        after = " " if inner[-1:].isspace() else ""
        self.inline.append(f"{before}{mark}{text}{mark}{after}")

    def render(self, el: HtmlElement) -> None:
        if self.depth >= _MAX_DEPTH:
            self.inline.append(" " + el.text_content() + " ")
            return
        self.depth += 1
        try:
            self._render(el)
        finally:
            self.depth -= 1

    def _render(self, el: HtmlElement) -> None:
        tag = el.tag.lower()
        handler = _HANDLERS.get(tag)
        if handler is not None:
            handler(self, el)
        elif tag in _BLOCK_TAGS:
            self.flush()
            self.children(el)
            self.flush()
        else:
            self.children(el)

    def heading(self, el: HtmlElement) -> None:
        self.flush()
        text = self.inline_text(el).replace("**", "")
        if text:
            self.blocks.append("#" * _HEADINGS[el.tag.lower()] + " " + text)

    def br(self, el: HtmlElement) -> None:
        self.inline.append(_BR)

    def hr(self, el: HtmlElement) -> None:
        self.flush()
        self.blocks.append("---")

    def pre(self, el: HtmlElement) -> None:
        self.flush()
        code = el.text_content().strip("\n")
        if code.strip():
            self.blocks.append(f"```\n{code}\n```")

    def blockquote(self, el: HtmlElement) -> None:
        self.flush()
        sub = self.sub()
        sub.children(el)
        sub.flush()
        if sub.blocks:
            quoted = "\n>\n".join("\n".join("> " + ln for ln in b.split("\n")) for b in sub.blocks)
            self.blocks.append(quoted)

    def listing(self, el: HtmlElement) -> None:
        self.flush()
        ordered = el.tag.lower() == "ol"
        lines: list[str] = []
        for number, li in enumerate(el.iterchildren("li"), start=1):
            sub = self.sub()
            sub.children(li)
            sub.flush()
            if not sub.blocks:
                continue
            marker = f"{number}. " if ordered else "- "
            body = "\n".join(sub.blocks).split("\n")
            lines.append(marker + body[0])
            lines.extend(" " * len(marker) + ln if ln else "" for ln in body[1:])
        if lines:
            self.blocks.append("\n".join(lines))

    def list_item(self, el: HtmlElement) -> None:  # an <li> outside a list
        self.flush()
        text = self.inline_text(el)
        if text:
            self.blocks.append("- " + text)

    def link(self, el: HtmlElement) -> None:
        text = self.inline_text(el, in_link=True).replace("[", "(").replace("]", ")")
        target = None if self.in_link else _link_target(el.get("href"), self.base_url)
        href = (el.get("href") or "").strip()
        if text and target and text in (href, target) and not re.search(r"[\s<>]", target):
            self.inline.append(f"<{target}>")
        elif text and target:
            self.inline.append(f"[{text}]({_md_url(target)})")
        elif text:
            self.inline.append(text)

    def image(self, el: HtmlElement) -> None:
        alt = " ".join((el.get("alt") or "").split()).replace("[", "(").replace("]", ")")
        src = _absolute(el.get("src"), self.base_url)
        if not alt:
            return
        if self.in_link:
            self.inline.append(f" {alt} ")
        elif src:
            self.inline.append(f"![{alt}]({_md_url(src)})")

    def bold(self, el: HtmlElement) -> None:
        self._wrap(el, "**")

    def italic(self, el: HtmlElement) -> None:
        self._wrap(el, "*")

    def code(self, el: HtmlElement) -> None:
        text = " ".join(el.text_content().split())
        if text:
            self.inline.append(f"`{text}`")


_HANDLERS: dict[str, Callable[[_Renderer, HtmlElement], None]] = {
    **dict.fromkeys(_HEADINGS, _Renderer.heading),
    "br": _Renderer.br,
    "hr": _Renderer.hr,
    "pre": _Renderer.pre,
    "blockquote": _Renderer.blockquote,
    "ul": _Renderer.listing,
    "ol": _Renderer.listing,
    "li": _Renderer.list_item,
    "a": _Renderer.link,
    "img": _Renderer.image,
    "b": _Renderer.bold,
    "strong": _Renderer.bold,
    "em": _Renderer.italic,
    "i": _Renderer.italic,
    "code": _Renderer.code,
    "kbd": _Renderer.code,
    "tt": _Renderer.code,
}


def tree_to_markdown(root: HtmlElement, *, base_url: str | None = None) -> list[str]:
    """Render a (cleaned) tree as a list of markdown blocks, in document order.

    :param base_url: resolves relative links and images (feeds and pages have one, mail not).
    """
    renderer = _Renderer(base_url=base_url)
    body = root.find(".//body")
    renderer.render(body if body is not None else root)
    renderer.flush()
    return [b for b in renderer.blocks if b.strip()]


def html_to_markdown(html: str, *, base_url: str | None = None) -> str:
    """Convert HTML to markdown: links kept (tracking stripped), pixels and hidden parts gone.

    :param base_url: resolves relative links and images; without it they become plain text.
    """
    root = parse_html(html)
    parsed_empty = not root.text_content().strip()
    clean_tree(root)
    markdown = "\n\n".join(tree_to_markdown(root, base_url=base_url))
    return strip_tags(html) if parsed_empty and not markdown else markdown


def strip_tags(html: str) -> str:
    """Last-resort plain text of HTML the parser could not build a tree for.

    Trigger: libxml2 drops everything below ~2,000 nested elements, so a hostile mail could
    come out empty. Outcome: the text survives without its markup.
    """
    html = re.sub(r"(?is)<(script|style|head)\b.*?</\1\s*>", " ", html)
    text = html_lib.unescape(re.sub(r"<[^>]*>", " ", html))
    return _squash(text)


def html_to_text(html: str) -> str:
    """One line of plain text from an HTML snippet (a title, a name); entities decoded."""
    if "<" not in html:
        return " ".join(_INVISIBLE.sub("", html_lib.unescape(html)).split())
    blocks = tree_to_markdown(_cleaned_fragment(html))
    text = " ".join(" ".join(b.split()) for b in blocks)
    # Inline markdown marks are not wanted in a title.
    return re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text).replace("**", "").strip()


def _cleaned_fragment(html: str) -> HtmlElement:
    root = parse_html(f"<html><body>{html}</body></html>")
    clean_tree(root)
    return root
