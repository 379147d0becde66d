"""HTML to markdown: the one converter for feed entries, article pages and e-mail.

Why not trafilatura's markdown (trafilatura still finds the article inside a page,
in :mod:`sources.fulltext`): on a fragment that already *is* the article it drops
headings, lists and emphasis, splits inline links onto lines of their own and returns
nothing for short fragments (``python -m bench.feed_markdown``), and every kind of
source should come out by the same rules (``python -m bench.fidelity``).

A :class:`HtmlProfile` holds what differs between kinds of source:

- :data:`FEED` (feed content and article pages): data tables stay pipe tables, every
  image is kept, links are kept as they are;
- :data:`MAIL` (newsletters): mail HTML is nested layout tables, so a table is
  unwrapped into plain blocks unless it is data with a ``<th>`` header row, only images
  with alt text are kept, and tracking parameters are stripped from links.

What both keep: headings (also the ``<font size="4">`` lines blogs use for them),
paragraphs, lists, quotes, code blocks line by line (``<br>`` inside ``<pre>`` too),
links with the spaces around them, emphasis. What both drop: scripts, styles, forms,
embeds, hidden elements (``display:none`` preheaders) and tracking pixels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urljoin

import lxml.etree
import lxml.html
from lxml.html import HtmlElement

from signaldesk.sources.html_clean import (
    DROP_TAGS,
    INVISIBLE,
    WHITESPACE,
    clean_tree,
    parse_html,
    strip_tags,
)
from signaldesk.sources.tracking import strip_tracking_params

__all__ = ["FEED", "MAIL", "HtmlProfile", "html_to_markdown", "html_to_text", "tree_to_markdown"]


@dataclass(frozen=True, slots=True)
class HtmlProfile:
    """How one kind of source's HTML becomes markdown.

    :param tables: ``detect``: tables of data (two or more columns, no table inside,
        no headings, lists or code in a cell) become pipe tables, others are unwrapped;
        ``headed``: only such tables whose first row is ``<th>`` header cells (mail: its
        layout tables never have them, the results table of a newsletter does); ``unwrap``:
        every table is read as plain blocks.
    :param images: ``all`` non-pixel images, or only those ``with_alt`` text.
    :param strip_tracking: remove click-tracking query parameters from links.
    """

    name: str
    tables: Literal["detect", "headed", "unwrap"]
    images: Literal["all", "with_alt"]
    strip_tracking: bool


FEED = HtmlProfile("feed", tables="detect", images="all", strip_tracking=False)
MAIL = HtmlProfile("mail", tables="headed", images="with_alt", strip_tracking=True)

_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = frozenset(
    [
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
    ]
) | frozenset(_HEADINGS)
_EMPHASIS = {
    "strong": "**",
    "b": "**",
    "em": "*",
    "i": "*",
    "del": "~~",
    "s": "~~",
    "strike": "~~",
}
_CODE = frozenset({"code", "kbd", "tt", "samp"})
# Inline elements read as one piece even when they wrap blocks.
_ATOMIC = frozenset({"a", "br", "img", "", *_CODE, *DROP_TAGS})
# A cell holding one of these is layout, not data.
_RICH_CELL = frozenset({"h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "pre", "blockquote"})

_FONT_SIZE = re.compile(
    r"font-size\s*:\s*(?:(xx-large|x-large|large)|(\d+(?:\.\d+)?)\s*(px|pt|em|rem))",
    re.IGNORECASE,
)
# Private-use markers, replaced once whitespace is collapsed: a <br>; the start and end
# of a link whose text starts / ends with a letter or digit (or of any other link); a
# line the page styled as a heading.
_BR = "\ue000"
_LINK_OPEN = "\ue001"
_LINK_CLOSE = "\ue002"
_HEAD_OPEN = "\ue003"
_HEAD_CLOSE = "\ue004"
_LINK_START = "\ue005"
_LINK_END = "\ue006"
_MARKERS = re.compile("[\ue000-\ue006]")
# A <br> in a table cell, which outlives the cell's collapsing to one line.
_CELL_BR = "\ue007"
_ADJACENT_LINKS = re.compile("[\ue002\ue006][\ue001\ue005]")
# A letter or digit of a script that separates words with spaces (not CJK, kana,
# hangul or Thai, where a link runs on from its neighbours by design).
_SPACED = r"(?:(?![\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af])[^\W_])"
_GLUE_BEFORE = re.compile(rf"(?<={_SPACED}){_LINK_OPEN}")
_GLUE_AFTER = re.compile(rf"{_LINK_CLOSE}(?={_SPACED})")
_STARTS_SPACED = re.compile(rf"^(?:{_SPACED}|[@#$(\u201c\u2018])")
_ENDS_SPACED = re.compile(rf"(?:{_SPACED}|[%)])$")
_BLOCK_START = re.compile(r"^(#{1,6}\s|[-+*>]\s|\d+[.)]\s|=+\s*$|-{3,}\s*$)")
_LINE_START = re.compile(r"^(#{1,6}\s|>\s?|=+\s*$|-{3,}\s*$)")
_PSEUDO_HEADING = re.compile(f"^(?:\\*{{1,3}})?{_HEAD_OPEN}(\\d)(.+?){_HEAD_CLOSE}(?:\\*{{1,3}})?$")

# Deeper than this, a subtree is rendered as its plain text: the renderer recurses.
_MAX_DEPTH = 100
_PSEUDO_HEADING_CHARS = 120


def _heading_level(el: HtmlElement) -> int | None:
    """The heading level a page gave an element by its font size, if it is heading-sized."""
    if el.tag == "font":
        raw = (el.get("size") or "").strip()
        if raw.startswith("+") and raw[1:].isdigit():
            return max(1, 4 - int(raw[1:]))
        if raw.isdigit() and int(raw) >= 4:
            return {4: 3, 5: 2}.get(int(raw), 1)
        return None
    match = _FONT_SIZE.search(el.get("style") or "")
    if match is None:
        return None
    keyword, number, unit = match.groups()
    if keyword:
        return {"large": 3, "x-large": 2, "xx-large": 1}[keyword.lower()]
    px = float(number) * {"px": 1.0, "pt": 4 / 3, "em": 16.0, "rem": 16.0}[unit.lower()]
    if px >= 28:
        return 1
    if px >= 22:
        return 2
    return 3 if px >= 18 else None


_ESCAPED = re.compile(r"[\\*`_<]")
_EDGE_UNDERSCORE = re.compile(r"(?<!\w)_|_(?!\w)")
_TAG_LIKE = re.compile(r"<(?=[A-Za-z/!])")
_HEAD_LEVEL = re.compile(f"{_HEAD_OPEN}\\d")
_LINK_MARKS = re.compile("[\ue001\ue002\ue005\ue006]")


def _escape(text: str) -> str:
    # Only what would turn prose into markup: backslashes, emphasis stars, backticks,
    # underscores at word edges (snake_case stays readable), and "<" before what
    # would read as an HTML tag.
    if not _ESCAPED.search(text):
        return text
    text = text.replace("\\", "\\\\").replace("*", "\\*").replace("`", "\\`")
    text = _EDGE_UNDERSCORE.sub(r"\\_", text)
    return _TAG_LIKE.sub(r"\\<", text)


def _md_url(url: str) -> str:
    return f"<{url}>" if re.search(r"[\s()<>]", url) else url


class _Renderer:
    def __init__(self, profile: HtmlProfile, base_url: str | None) -> None:
        self.profile = profile
        self.base_url = base_url
        self.depth = 0

    # -- blocks -----------------------------------------------------------------

    def blocks(self, el: HtmlElement) -> list[str]:
        """The children of a block element as markdown blocks."""
        if self.depth >= _MAX_DEPTH:
            return _finish_blocks(_escape(str(el.text_content())))
        self.depth += 1
        try:
            out: list[str] = []
            parts: list[str] = [_escape(el.text or "")]
            for child in el:
                tag = child.tag.lower() if isinstance(child.tag, str) else ""
                if tag in _BLOCKS:
                    out += _finish_blocks("".join(parts))
                    parts = []
                    out += self.block(child, tag)
                elif tag == "a" and (heading := _inner_heading(child)) is not None:
                    # <a><h3>Title</h3></a>, a card link: a heading that is a link.
                    out += _finish_blocks("".join(parts))
                    parts = []
                    link = _one_line(self.link(child))
                    out += [f"{'#' * heading} {link}"] if link else []
                elif tag not in _ATOMIC and _has_blocks(child):
                    # A <span> around a table or a code block (invalid, and common in
                    # pasted documents): read it as the block it holds, as browsers do.
                    out += _finish_blocks("".join(parts))
                    parts = []
                    out += self.blocks(child)
                elif tag and tag not in DROP_TAGS:
                    parts.append(self.inline(child, tag))
                parts.append(_escape(child.tail or ""))
            out += _finish_blocks("".join(parts))
            return out
        finally:
            self.depth -= 1

    def block(self, el: HtmlElement, tag: str) -> list[str]:
        if tag in _HEADINGS:
            text = _heading_text(self.inline_children(el))
            return [f"{'#' * _HEADINGS[tag]} {text}"] if text else []
        if tag == "hr":
            return ["---"]
        if tag == "pre":
            return self.pre(el)
        if tag in {"ul", "ol"}:
            return self.listing(el, ordered=tag == "ol")
        if tag == "li":  # an item outside any list
            item = self.blocks(el)
            return ["- " + "\n  ".join("\n".join(item).splitlines())] if item else []
        if tag == "blockquote":
            quoted = "\n\n".join(self.blocks(el))
            if not quoted.strip():
                return []
            return ["\n".join(f"> {line}".rstrip() for line in quoted.splitlines())]
        if tag == "table":
            return self.table(el)
        if tag == "dt":
            text = _one_line(self.inline_children(el))
            return [f"**{text}**"] if text else []
        if tag in {"p", "div"} and (level := _heading_level(el)) is not None:
            text = _heading_text(self.inline_children(el))
            if text and len(text) <= _PSEUDO_HEADING_CHARS and not _has_blocks(el):
                return [f"{'#' * level} {text}"]
        return self.blocks(el)

    def pre(self, el: HtmlElement) -> list[str]:
        code = _pre_text(el).strip("\n")
        if not code.strip():
            return []
        language = ""
        for node in (el, *el.iter("code")):
            for cls in (node.get("class") or "").split():
                if cls.startswith(("language-", "lang-")):
                    language = cls.split("-", 1)[1]
        fence = "```"
        while fence in code:
            fence += "`"
        return [f"{fence}{language}\n{code}\n{fence}"]

    def listing(self, el: HtmlElement, *, ordered: bool) -> list[str]:
        lines: list[str] = []
        start = (el.get("start") or "").strip()
        number = int(start) if start.isdigit() else 1
        for child in el:
            tag = child.tag.lower() if isinstance(child.tag, str) else ""
            if not tag or tag in DROP_TAGS:
                continue
            if tag == "li":
                inner = "\n".join(self.blocks(child))
            elif tag in _BLOCKS:
                inner = "\n".join(self.block(child, tag))
            else:
                inner = "\n".join(_finish_blocks(self.inline(child, tag)))
            if not inner.strip():
                continue
            marker = f"{number}. " if ordered else "- "
            number += 1
            pad = " " * len(marker)
            first, *rest = inner.splitlines()
            lines.append(marker + first)
            lines.extend((pad + line) if line.strip() else "" for line in rest)
        return ["\n".join(lines)] if lines else []

    def table(self, el: HtmlElement) -> list[str]:
        rows = [[c for c in tr if _tag(c) in {"td", "th"}] for tr in _direct_rows(el)]
        caption = [self.blocks(c) for c in el if _tag(c) == "caption"]
        out = [b for blocks in caption for b in blocks]
        # Trigger (mail): a newsletter's benchmark table came out one cell per paragraph.
        wanted = self.profile.tables == "detect" or (
            self.profile.tables == "headed" and _has_header_row(rows)
        )
        if wanted and _is_data_table(el, rows):
            cells = [[_cell(self.inline_children(c)) for c in row] for row in rows]
            cells = [row for row in cells if any(row)]
            width = max((len(r) for r in cells), default=0)
            if width >= 2 and len(cells) >= 2:
                cells = [r + [""] * (width - len(r)) for r in cells]
                lines = [_row(cells[0]), _row(["---"] * width), *(_row(r) for r in cells[1:])]
                return [*out, "\n".join(lines)]
        # Layout: each cell's content in reading order, each table's rows exactly once.
        for row in rows:
            for cell in row:
                out += self.blocks(cell)
        return out

    # -- inline -----------------------------------------------------------------

    def inline_children(self, el: HtmlElement) -> str:
        if self.depth >= _MAX_DEPTH:
            return _escape(str(el.text_content()))
        self.depth += 1
        try:
            parts = [_escape(el.text or "")]
            for child in el:
                tag = _tag(child)
                if tag and tag not in DROP_TAGS:
                    if tag in _BLOCKS:
                        # A block inside an inline context (a <div> in a link): keep its
                        # text, set apart, rather than lose it.
                        parts.append(" " + self.inline_children(child) + " ")
                    else:
                        parts.append(self.inline(child, tag))
                parts.append(_escape(child.tail or ""))
            return "".join(parts)
        finally:
            self.depth -= 1

    def inline(self, el: HtmlElement, tag: str) -> str:
        if tag == "br":
            return _BR
        if tag == "img":
            return self.image(el)
        if tag in _CODE:
            code = WHITESPACE.sub(" ", INVISIBLE.sub("", str(el.text_content())))
            if not code.strip():
                return code
            tick = "``" if "`" in code else "`"
            pad = " " if code.strip().startswith("`") or code.strip().endswith("`") else ""
            return f"{tick}{pad}{code.strip()}{pad}{tick}"
        if tag == "a":
            return self.link(el)
        inner = self.inline_children(el)
        if tag in {"font", "span"} and (level := _heading_level(el)) is not None:
            text = _one_line(inner)
            if text and _BR not in inner:
                return f"{_HEAD_OPEN}{level}{text}{_HEAD_CLOSE}"
        wrap = _EMPHASIS.get(tag)
        if wrap is None or not inner.strip() or _BR in inner:
            return inner
        # Markers hug the text; the spaces around it stay outside.
        lead = inner[: len(inner) - len(inner.lstrip())]
        trail = inner[len(inner.rstrip()) :]
        return f"{lead}{wrap}{WHITESPACE.sub(' ', inner.strip())}{wrap}{trail}"

    def link(self, el: HtmlElement) -> str:
        inner = self.inline_children(el)
        text = _one_line(inner)
        if not text:
            return ""
        target = self._target(el.get("href"))
        if target is None or (el.getparent() is not None and _inside_link(el)):
            return inner
        plain = text.replace("\\_", "_")
        if plain in {target, target.split("://", 1)[-1]} and not re.search(r"[\s<>]", target):
            markdown = f"<{target}>"
        else:
            # Brackets in the text would end the label early (an image's are markup).
            label = text if "![" in text else re.sub(r"(?<!\\)([\[\]])", r"\\\1", text)
            markdown = f"[{label}]({_md_url(target)})"
        # Trigger: Blogger and other exporters drop the newline between a word and a
        # link ("errors like<a>buffer overflow</a> and<a>…"); browsers showed a space.
        # Outcome: a link whose text starts or ends with a letter is kept apart from a
        # letter next to it (see _GLUE_BEFORE / _GLUE_AFTER).
        opens = _LINK_OPEN if _STARTS_SPACED.search(plain) else _LINK_START
        closes = _LINK_CLOSE if _ENDS_SPACED.search(plain) else _LINK_END
        return f"{opens}{markdown}{closes}"

    def image(self, el: HtmlElement) -> str:
        alt = _one_line(_escape(el.get("alt") or "")).replace("[", "").replace("]", "")
        if _inside_link(el) and self.profile.images == "with_alt":
            return f" {alt} " if alt else ""
        if self.profile.images == "with_alt" and not alt:
            return ""
        src = self._absolute(el.get("src") or el.get("data-src"))
        if src is None:
            return f" {alt} " if alt else ""
        # Set apart from a word it touches, as a link is, not padded on both sides:
        # "a chart ![x](u) ." read as a stray full stop.
        return f"{_LINK_OPEN}![{alt}]({_md_url(src)}){_LINK_CLOSE}"

    def _absolute(self, url: str | None) -> str | None:
        url = (url or "").strip()
        if not url or url.startswith("data:"):
            return None
        if self.base_url and not re.match(r"[a-z][a-z0-9+.-]*:", url, re.IGNORECASE):
            url = urljoin(self.base_url, url)
        return url if re.match(r"https?://", url, re.IGNORECASE) else None

    def _target(self, href: str | None) -> str | None:
        href = (href or "").strip()
        if href.lower().startswith("mailto:"):
            return href
        # Anchors, javascript: and relative links without a base become plain text.
        url = self._absolute(href)
        if url is None:
            return None
        return strip_tracking_params(url) if self.profile.strip_tracking else url


def _tag(el: lxml.etree._Element) -> str:
    return el.tag.lower() if isinstance(el.tag, str) else ""


def _inside_link(el: HtmlElement) -> bool:
    return any(_tag(a) == "a" for a in el.iterancestors())


def _inner_heading(el: HtmlElement) -> int | None:
    """The level of a heading that holds all of ``el``'s text, if there is one."""
    heading = next(el.iterdescendants(*_HEADINGS), None)
    if heading is None or WHITESPACE.sub("", str(heading.text_content())) != WHITESPACE.sub(
        "", str(el.text_content())
    ):
        return None
    return _HEADINGS[_tag(heading)]


def _has_blocks(el: HtmlElement) -> bool:
    return next(el.iterdescendants(*_BLOCKS), None) is not None


def _direct_rows(table: HtmlElement) -> list[HtmlElement]:
    """The table's own rows (in thead, tbody, tfoot or bare), never a nested table's."""
    rows: list[HtmlElement] = []
    for child in table:
        tag = _tag(child)
        if tag == "tr":
            rows.append(child)
        elif tag in {"thead", "tbody", "tfoot"}:
            rows += [tr for tr in child if _tag(tr) == "tr"]
    return rows


def _has_header_row(rows: list[list[HtmlElement]]) -> bool:
    return bool(rows) and len(rows[0]) >= 2 and all(_tag(c) == "th" for c in rows[0])


def _is_data_table(table: HtmlElement, rows: list[list[HtmlElement]]) -> bool:
    if len(rows) < 2 or max((len(r) for r in rows), default=0) < 2:
        return False
    return not any(
        _tag(d) == "table" or _tag(d) in _RICH_CELL
        for row in rows
        for cell in row
        for d in cell.iterdescendants()
    )


def _pre_text(el: HtmlElement) -> str:
    """A code block's text with its line breaks: ``<br>`` and block children end lines.

    Iterative (``iterwalk``), so a hostile nesting inside ``<pre>`` cannot exhaust the stack.
    """
    parts: list[str] = []
    walker = lxml.etree.iterwalk(el, events=("start", "end"))
    for event, node in walker:
        tag = _tag(node)
        if event == "start":
            if tag in DROP_TAGS:
                walker.skip_subtree()  # its "end" event still comes, with its tail
                continue
            parts.append("\n" if tag == "br" else node.text or "")
        else:
            if node is el:
                break
            if tag in _BLOCKS and parts and not parts[-1].endswith("\n"):
                parts.append("\n")
            parts.append(node.tail or "")
    return INVISIBLE.sub("", "".join(parts)).replace("\r\n", "\n").replace("\u00a0", " ")


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _unglue(text: str) -> str:
    """A space between a link and a word (or another link) it was glued to."""
    if not _LINK_MARKS.search(text):
        return text
    text = _ADJACENT_LINKS.sub(" ", text)
    text = _GLUE_AFTER.sub(" ", _GLUE_BEFORE.sub(" ", text))
    return _LINK_MARKS.sub("", text)


def _one_line(text: str) -> str:
    """Inline markdown as one line: breaks become spaces, heading markers go."""
    text = WHITESPACE.sub(" ", INVISIBLE.sub("", text.replace(_BR, " ")))
    text = _unglue(text)
    return _MARKERS.sub("", _HEAD_LEVEL.sub("", text)).strip()


def _cell(text: str) -> str:
    """A data table cell on its one line, its line breaks kept as ``<br>``.

    Why: a cell's lines ("**Text ads**: ...<br><br>**Lightbox ads**: ...") ran into
    one; a pipe-table cell cannot hold a newline, and Obsidian shows ``<br>`` as one.
    """
    text = _one_line(text.replace(_BR, _CELL_BR))
    lines = (line.strip() for line in text.split(_CELL_BR))
    return "<br>".join(line for line in lines if line).replace("|", "\\|")


def _heading_text(text: str) -> str:
    """A heading's text on one line, without the bold a page wrapped it in."""
    text = _one_line(text)
    match = re.fullmatch(r"(\*{1,3})([^*].*?)\1", text)
    return match.group(2).strip() if match else text


def _finish_blocks(text: str) -> list[str]:
    """Inline markdown as blocks: whitespace collapsed, ``<br>`` lines kept, a double
    ``<br>`` a paragraph break, and a line styled as a heading its own heading."""
    text = _unglue(WHITESPACE.sub(" ", INVISIBLE.sub("", text)))
    blocks: list[str] = []
    current: list[str] = []

    def close() -> None:
        if current:
            blocks.append(_escape_start("\n".join(current)))
            current.clear()

    for raw in text.split(_BR):
        line = raw.strip()
        heading = _PSEUDO_HEADING.match(line)
        if heading and len(heading.group(2)) <= _PSEUDO_HEADING_CHARS:
            close()
            blocks.append("#" * int(heading.group(1)) + " " + _heading_text(heading.group(2)))
            continue
        line = (
            _MARKERS.sub("", _HEAD_LEVEL.sub("", line)).strip() if _MARKERS.search(line) else line
        )
        if not line:
            close()
            continue
        if current and _LINE_START.match(line):
            line = "\\" + line
        current.append(line)
    close()
    return blocks


def _escape_start(block: str) -> str:
    """A paragraph that would read as markup (a list, a heading, a rule) kept as text."""
    if not _BLOCK_START.match(block):
        return block
    numbered = re.match(r"^(\d+)([.)])", block)
    if numbered:
        return f"{numbered.group(1)}\\{block[numbered.end(1) :]}"
    return "\\" + block


def tree_to_markdown(
    root: HtmlElement, *, profile: HtmlProfile = FEED, base_url: str | None = None
) -> list[str]:
    """Render a (cleaned) tree as markdown blocks, in document order.

    :param base_url: resolves relative links and images; without it they become plain text.
    """
    body = root.find(".//body")
    blocks = _Renderer(profile, base_url).blocks(body if body is not None else root)
    return [b for b in blocks if b.strip()]


def html_to_markdown(html: str, *, profile: HtmlProfile = FEED, base_url: str | None = None) -> str:
    """Convert HTML (a fragment or a whole document) to tidy markdown.

    Plain text (no tags) comes back as paragraphs, whitespace tidied.

    :param profile: :data:`FEED` for feed content and pages, :data:`MAIL` for e-mail.
    :param base_url: resolves relative links and images; without it they become plain text.
    """
    if not html or not html.strip():
        return ""
    root = parse_html(html)
    parsed_empty = not str(root.text_content()).strip()
    clean_tree(root)
    markdown = "\n\n".join(tree_to_markdown(root, profile=profile, base_url=base_url))
    return strip_tags(html) if parsed_empty and not markdown else markdown


def html_to_text(html: str) -> str:
    """One line of plain text from an HTML snippet (a title, a name); entities decoded."""
    if not html or ("<" not in html and "&" not in html):
        return WHITESPACE.sub(" ", INVISIBLE.sub("", html or "")).strip()
    root = parse_html(f"<html><body>{html}</body></html>")
    clean_tree(root)
    for br in root.iter("br"):
        br.tail = " " + (br.tail or "")
    return WHITESPACE.sub(" ", INVISIBLE.sub("", str(root.text_content()))).strip()
