"""Feed entry HTML -> markdown: the bodies RSS/Atom/JSON feeds carry.

Why not trafilatura here (it is used for whole pages in :mod:`sources.fulltext`): it is
built to find the article inside a page, and on a fragment that already *is* the
article it throws structure away — headings, lists and inline emphasis vanish, inline
links are split onto lines of their own, short fragments come back empty (measured on
the rss-parser corpus: ``python -m bench.feed_markdown``). Feed content needs a
faithful converter, not an extractor. (E-mail HTML, all nested layout tables, has its
own converter in :mod:`sources.html_markdown`; feed content keeps data tables as tables.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urljoin

import lxml.html
from lxml import etree

__all__ = ["feed_html_to_markdown", "feed_html_to_text"]

_SKIP = frozenset(
    {
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
        "audio",
        "video",
        "source",
        "track",
    }
)
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "main",
        "header",
        "footer",
        "aside",
        "nav",
        "figure",
        "figcaption",
        "blockquote",
        "pre",
        "ul",
        "ol",
        "li",
        "dl",
        "dt",
        "dd",
        "table",
        "thead",
        "tbody",
        "tfoot",
        "tr",
        "td",
        "th",
        "caption",
        "hr",
        "address",
        "details",
        "summary",
        "center",
        "body",
        "html",
        *_HEADINGS,
    }
)
_BR = "\x01"  # stands for <br> while whitespace is collapsed
_WS = re.compile(r"[ \t\r\n\f\v\u00a0\u200b]+")
_LINE_START = re.compile(r"^(#{1,6}\s|[-+*>]\s|\d+[.)]\s|=+\s*$|-{3,}\s*$)")
_EMPHASIS = {"strong": "**", "b": "**", "em": "*", "i": "*", "del": "~~", "s": "~~"}


def feed_html_to_markdown(html: str, *, base_url: str | None = None) -> str:
    """Convert an HTML fragment (a feed entry's content) to tidy markdown.

    Keeps headings, paragraphs, lists, block quotes, code, tables, links, images and
    emphasis; drops scripts, styles, forms, embeds and 1x1 tracking pixels. Relative
    links are resolved against ``base_url``. Plain text (no tags) comes back as is,
    whitespace tidied.
    """
    if not html or not html.strip():
        return ""
    root = _parse(html)
    if root is None:
        return _tidy_text(html)
    return _Renderer(base_url).render(root)


def feed_html_to_text(html: str) -> str:
    """The visible text of an HTML fragment, whitespace collapsed (titles, names)."""
    if not html or ("<" not in html and "&" not in html):
        return _WS.sub(" ", html or "").strip()
    root = _parse(html)
    if root is None:
        return _WS.sub(" ", html).strip()
    for bad in list(root.iter(*_SKIP)):
        if bad.getparent() is not None:
            bad.drop_tree()
    return _WS.sub(" ", root.text_content()).strip()


def _parse(html: str) -> lxml.html.HtmlElement | None:
    try:
        fragment = lxml.html.fragment_fromstring(html, create_parent="div")
    except (etree.ParserError, ValueError):
        return None
    return fragment if isinstance(fragment, lxml.html.HtmlElement) else None


def _tidy_text(text: str) -> str:
    paragraphs = (_WS.sub(" ", p).strip() for p in re.split(r"\n\s*\n", text))
    return "\n\n".join(p for p in paragraphs if p)


def _escape(text: str) -> str:
    # Only what would otherwise turn prose into markup: emphasis stars, backticks,
    # underscores at word edges (snake_case stays readable).
    text = text.replace("\\", "\\\\").replace("*", "\\*").replace("`", "\\`")
    return re.sub(r"(?<!\w)_|_(?!\w)", r"\\_", text)


def _is_pixel(img: lxml.html.HtmlElement) -> bool:
    for attr in ("width", "height"):
        value = (img.get(attr) or "").strip().removesuffix("px")
        if value in {"0", "1"}:
            return True
    return False


class _Renderer:
    def __init__(self, base_url: str | None) -> None:
        self.base_url = base_url

    def render(self, root: lxml.html.HtmlElement) -> str:
        blocks = self._blocks(root)
        return "\n\n".join(b for b in blocks if b.strip()).strip()

    # -- blocks -----------------------------------------------------------------

    def _blocks(self, el: lxml.html.HtmlElement) -> list[str]:
        """Render the children of a block element as a list of markdown blocks."""
        blocks: list[str] = []
        buffer: list[str] = [_escape(el.text or "")]
        for child in el:
            if not isinstance(child.tag, str):  # comments, processing instructions
                buffer.append(_escape(child.tail or ""))
                continue
            tag = child.tag.lower()
            if tag in _BLOCKS:
                self._flush(buffer, blocks)
                blocks.extend(self._block(child, tag))
            elif tag not in _SKIP:
                buffer.append(self._inline(child, tag))
            buffer.append(_escape(child.tail or ""))
        self._flush(buffer, blocks)
        return blocks

    @staticmethod
    def _flush(buffer: list[str], blocks: list[str]) -> None:
        text = _finish_inline("".join(buffer))
        buffer.clear()
        if text:
            if _LINE_START.match(text):
                text = "\\" + text
            blocks.append(text)

    def _block(self, el: lxml.html.HtmlElement, tag: str) -> list[str]:
        if tag in _HEADINGS:
            text = _finish_inline(self._inline_children(el)).replace("\n", " ")
            return [f"{'#' * _HEADINGS[tag]} {text}"] if text else []
        if tag == "hr":
            return ["---"]
        if tag == "pre":
            return [self._pre(el)]
        if tag in {"ul", "ol"}:
            return self._list(el, ordered=tag == "ol")
        if tag == "blockquote":
            inner = "\n\n".join(self._blocks(el))
            if not inner.strip():
                return []
            return ["\n".join(f"> {line}".rstrip() for line in inner.splitlines())]
        if tag == "table":
            return self._table(el)
        if tag == "dt":
            text = _finish_inline(self._inline_children(el))
            return [f"**{text}**"] if text else []
        return self._blocks(el)

    def _pre(self, el: lxml.html.HtmlElement) -> str:
        code = el.text_content().strip("\n")
        language = ""
        for node in (el, *el.iterchildren("code")):
            for cls in (node.get("class") or "").split():
                if cls.startswith(("language-", "lang-")):
                    language = cls.split("-", 1)[1]
        fence = "```"
        while fence in code:
            fence += "`"
        return f"{fence}{language}\n{code}\n{fence}"

    def _list(self, el: lxml.html.HtmlElement, *, ordered: bool) -> list[str]:
        lines: list[str] = []
        start = el.get("start") or ""
        number = int(start) if start.isdigit() else 1
        for child in el:
            if not isinstance(child.tag, str) or child.tag.lower() in _SKIP:
                continue
            tag = child.tag.lower()
            if tag == "li":
                inner = "\n".join(self._blocks(child))
            elif tag in _BLOCKS:
                inner = "\n".join(self._block(child, tag))
            else:
                inner = _finish_inline(self._inline(child, tag))
            if not inner.strip():
                continue
            marker = f"{number}. " if ordered else "- "
            number += 1
            pad = " " * len(marker)
            first, *rest = inner.splitlines()
            lines.append(marker + first)
            lines.extend((pad + line) if line.strip() else "" for line in rest)
        return ["\n".join(lines)] if lines else []

    def _table(self, el: lxml.html.HtmlElement) -> list[str]:
        rows: list[list[str]] = []
        for tr in el.iter("tr"):
            cells = [
                _finish_inline(self._inline_children(cell)).replace("\n", " ").replace("|", "\\|")
                for cell in tr
                if isinstance(cell.tag, str) and cell.tag.lower() in {"td", "th"}
            ]
            if any(cells):
                rows.append(cells)
        if not rows:
            return []
        width = max(len(r) for r in rows)
        if width == 1:  # a layout table around content, not data
            return [r[0] for r in rows if r[0]]
        rows = [r + [""] * (width - len(r)) for r in rows]
        out = [_row(rows[0]), _row(["---"] * width), *(_row(r) for r in rows[1:])]
        return ["\n".join(out)]

    # -- inline -----------------------------------------------------------------

    def _inline_children(self, el: lxml.html.HtmlElement) -> str:
        parts = [_escape(el.text or "")]
        for child in el:
            if isinstance(child.tag, str) and child.tag.lower() not in _SKIP:
                tag = child.tag.lower()
                if tag in _BLOCKS:
                    # A block inside an inline context (a <div> in a link): keep its
                    # text, separated, rather than lose it.
                    parts.append(" " + self._inline_children(child) + " ")
                else:
                    parts.append(self._inline(child, tag))
            parts.append(_escape(child.tail or ""))
        return "".join(parts)

    def _inline(self, el: lxml.html.HtmlElement, tag: str) -> str:
        if tag == "br":
            return _BR
        if tag == "img":
            return self._image(el)
        if tag in {"code", "kbd", "tt", "samp"}:
            code = _WS.sub(" ", el.text_content())
            if not code.strip():
                return code
            tick = "``" if "`" in code else "`"
            return f"{tick}{code.strip()}{tick}"
        inner = self._inline_children(el)
        if tag == "a":
            return self._link(el, inner)
        wrap = _EMPHASIS.get(tag)
        if wrap is None or not inner.strip() or _BR in inner:
            return inner
        # Markers hug the text; the spaces around it stay outside.
        lead = inner[: len(inner) - len(inner.lstrip())]
        trail = inner[len(inner.rstrip()) :]
        return f"{lead}{wrap}{_WS.sub(' ', inner.strip())}{wrap}{trail}"

    def _link(self, el: lxml.html.HtmlElement, inner: str) -> str:
        href = (el.get("href") or "").strip()
        if not href or href.startswith(("#", "javascript:", "data:")):
            return inner
        href = self._url(href)
        text = _WS.sub(" ", inner).strip()
        if not text:
            return ""
        if text.replace("\\_", "_") in {href, href.split("://", 1)[-1]}:
            return f"<{href}>"
        target = f"<{href}>" if re.search(r"[\s()<>]", href) else href
        return f"[{text}]({target})"

    def _image(self, el: lxml.html.HtmlElement) -> str:
        src = (el.get("src") or el.get("data-src") or "").strip()
        if not src or src.startswith("data:") or _is_pixel(el):
            return ""
        alt = _WS.sub(" ", el.get("alt") or "").strip().replace("[", "").replace("]", "")
        src = self._url(src)
        target = f"<{src}>" if re.search(r"[\s()<>]", src) else src
        return f" ![{alt}]({target}) "

    def _url(self, href: str) -> str:
        return urljoin(self.base_url, href) if self.base_url else href


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _finish_inline(text: str) -> str:
    """Collapse whitespace, turn <br> markers into newlines, trim every line."""
    text = _WS.sub(" ", text)
    lines = (line.strip() for line in text.split(_BR))
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()
