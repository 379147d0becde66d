"""Cut a note into the chunks the index stores, embeds and returns.

Rules (SPEC section 6):

* A chunk boundary falls before every H1 and H2 heading. H1 counts as a
  boundary too because a second H1 (a footer such as "This note in GitHub")
  starts a new topic; under the usual single-H1 note this is the same as
  splitting at H2. H3 and deeper stay inside their section.
* A section longer than ``max_chars`` is split between blocks (paragraphs,
  lists, headings, code blocks separated by blank lines), never inside a fenced
  code block; an H3+ heading starts a new piece once the current one is at
  least half full, and a heading never ends a piece. A single block longer
  than ``max_chars`` is split between lines; a split code block is closed and
  reopened with its own fence so every piece still renders as code. A single
  line longer than that is cut at a space (or anywhere, in text without spaces).
* A fragment whose readable text (see :mod:`retrieval.cleaning`) is shorter
  than ``min_chars`` is merged into a neighbour: first a piece of its own
  section, then the previous chunk — or the next one when the fragment is the
  note's introduction (text before the first H2). A merged chunk may exceed
  ``max_chars``, but its readable text stays within ``max_chars + min_chars``
  and its raw markdown within ``2 * max_chars`` (markup such as a footer of
  long URLs is short to read but long to store); a fragment with no neighbour
  that fits stays on its own. A merged chunk keeps the heading
  information of its first part, where it starts; a tiny introduction merged
  into the section below it takes that section's path, which begins with the
  introduction's own headings (``("Guide", "Install")`` rather than ``("Guide",)``).
* Headings inside fenced code blocks, ``<!-- -->`` comments and ``%% %%``
  comments are not headings. Setext (underlined) headings are not recognised.
* A chunk with no readable text at all (only comments, embeds or markup) is
  dropped, so an empty or frontmatter-only note gives zero chunks. The note
  itself (title, tags, dates) is still known to the caller through
  :class:`ChunkedNote`.

``heading_path`` of a chunk is the chain of headings in force where the chunk
starts, outermost first; ``section`` is its last element ('' before any heading).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from signaldesk.frontmatter import (
    alias_values,
    first_text,
    frontmatter_date,
    note_title,
    parse_note,
    tag_values,
    unique_casefold,
)
from signaldesk.retrieval.cleaning import readable_text

__all__ = ["Chunk", "ChunkedNote", "chunk_note"]

# A backtick fence's info string cannot hold a backtick (```js``` is inline code).
_FENCE = re.compile(r" {0,3}(`{3,}(?=[^`]*$)|~{3,})")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_INLINE_CODE = re.compile(r"(`+).+?\1")
_COMMENTS = re.compile(r"<!--.*?(?:-->|\Z)|%%.*?(?:%%|\Z)", re.DOTALL)
# Obsidian's inline tag: '#' after whitespace or the line start, letters,
# digits, '_', '-', '/', at least one character that is not a digit.
# The nested look-behind comes after the literal '#' so the engine can skip ahead to it.
_INLINE_TAG = re.compile(r"#(?<=(?<!\S)#)([\w/-]*[^\W\d][\w/-]*)")
_HEADING_MARKUP = re.compile(r"[\[\]<>`*_~=%^&|#!]|://")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a note.

    :param ordinal: 0-based position in the note.
    :param section: the innermost heading where the chunk starts ('' before any heading).
    :param heading_path: headings in force at the chunk's start, outermost first.
    :param text: the chunk's markdown as it reads in the note.
    :param start_line: 1-based line in the file where the chunk starts.
    """

    ordinal: int
    section: str
    heading_path: tuple[str, ...]
    text: str
    start_line: int


@dataclass(frozen=True, slots=True)
class ChunkedNote:
    """A note's metadata and its chunks.

    ``title`` is the frontmatter title, else the first H1, else the file stem.
    ``tags`` joins frontmatter tags and inline ``#tags`` ('#' stripped, nested
    ``a/b`` kept, spelling of the first occurrence, deduplicated ignoring case).
    Dates are ISO strings when the frontmatter holds a readable date, else None.
    ``frontmatter_error`` says why the YAML had to be read forgivingly, if it had to.
    """

    path: str
    title: str
    tags: tuple[str, ...]
    note_type: str | None
    domain: str | None
    status: str | None
    created: str | None
    updated: str | None
    aliases: tuple[str, ...]
    frontmatter: dict[str, Any]
    chunks: tuple[Chunk, ...]
    frontmatter_error: str | None = None


@dataclass(slots=True)
class _Unit:
    """A block of body lines that is never split when a section is: heading, code or text."""

    start: int  # index into body lines
    end: int  # exclusive
    kind: str  # "heading" | "code" | "text"
    path: tuple[str, ...]
    level: int = 0


@dataclass(slots=True)
class _Piece:
    text: str
    first: int  # body line index of the first line
    last: int  # body line index of the last line
    path: tuple[str, ...]
    section: int
    intro: bool
    _readable: int | None = field(default=None)

    @property
    def readable(self) -> int:
        if self._readable is None:
            self._readable = len(readable_text(self.text))
        return self._readable


def chunk_note(path: str, text: str, *, max_chars: int = 1800, min_chars: int = 200) -> ChunkedNote:
    """Parse ``text`` (the note at vault-relative ``path``) and cut it into chunks.

    Never raises on odd input; see the module docstring for the rules.
    """
    max_chars = max(max_chars, 1)
    min_chars = max(min(min_chars, max_chars), 0)
    parsed = parse_note(text)
    fm = parsed.frontmatter
    lines = parsed.body.split("\n")
    units = _scan(lines)

    pieces: list[_Piece] = []
    for section_id, section in enumerate(_sections(units)):
        pieces.extend(_split_section(lines, section, section_id, max_chars, min_chars))
    pieces = _merge_small(pieces, max_chars, min_chars)

    chunks = tuple(
        Chunk(
            ordinal=i,
            section=p.path[-1] if p.path else "",
            heading_path=p.path,
            text=p.text.rstrip(),
            start_line=parsed.body_line + p.first,
        )
        for i, p in enumerate(p for p in pieces if _has_readable(p))
    )
    first_h1 = next((u.path[0] for u in units if u.kind == "heading" and u.level == 1), None)
    return ChunkedNote(
        path=path,
        title=note_title(fm, path, heading=first_h1),
        tags=tuple(
            unique_casefold(
                [
                    *tag_values(fm.get("tags")),
                    *tag_values(fm.get("tag")),
                    *_inline_tags(lines, units),
                ]
            )
        ),
        note_type=first_text(fm.get("type")),
        domain=first_text(fm.get("domain")),
        status=first_text(fm.get("status")),
        created=frontmatter_date(fm, ("created", "date created", "date", "created_at")),
        updated=frontmatter_date(
            fm, ("updated", "modified", "date modified", "updated_at", "last_modified")
        ),
        aliases=tuple(
            unique_casefold(alias_values(fm.get("aliases")) + alias_values(fm.get("alias")))
        ),
        frontmatter=fm,
        chunks=chunks,
        frontmatter_error=parsed.error,
    )


# --- scanning -----------------------------------------------------------------------------


def _scan(lines: list[str]) -> list[_Unit]:
    """Group body lines into units, tracking code fences, comments and the heading stack."""
    units: list[_Unit] = []
    stack: list[tuple[int, str]] = []
    path: tuple[str, ...] = ()
    in_html = in_pct = False
    text_start: int | None = None
    n = len(lines)
    i = 0

    def flush(end: int) -> None:
        nonlocal text_start
        if text_start is not None:
            # Blank lines inside an open comment belong to it, but not at the end.
            while end > text_start + 1 and not lines[end - 1].strip():
                end -= 1
            units.append(_Unit(text_start, end, "text", path))
            text_start = None

    while i < n:
        line = lines[i]
        first = line[:1]
        if not first:  # an empty line ends a paragraph, unless a comment is open
            if not (in_html or in_pct):
                flush(i)
            i += 1
            continue
        # Only a line starting with a space, tab, fence or '#' can be anything
        # but text; most lines skip the checks below.
        if first in " \t`~#" and not (in_html or in_pct):
            fence = _FENCE.match(line)
            if fence is not None:
                flush(i)
                marker = fence.group(1)
                j = i + 1
                while j < n and not _closes(lines[j], marker):
                    j += 1
                # An unclosed fence runs to the end of the note (CommonMark).
                units.append(_Unit(i, min(j + 1, n), "code", path))
                i = j + 1
                continue
            if line.lstrip(" ").startswith("#"):
                heading = _ATX.fullmatch(line)
                title = _heading_text(heading.group(2) or "") if heading else ""
                if heading is not None and (title or (heading.group(2) or "").strip()):
                    flush(i)
                    level = len(heading.group(1))
                    while stack and stack[-1][0] >= level:
                        stack.pop()
                    stack.append((level, title or (heading.group(2) or "").strip()))
                    path = tuple(t for _, t in stack)
                    units.append(_Unit(i, i + 1, "heading", path, level))
                    i += 1
                    continue
            if not line.strip():
                flush(i)
                i += 1
                continue
        if text_start is None:
            text_start = i
        if "<!--" in line or "-->" in line or "%%" in line:
            in_html, in_pct = _comment_state(line, in_html, in_pct)
        i += 1
    flush(n)
    return units


def _heading_text(raw: str) -> str:
    # Most headings are plain words; clean only those carrying markup.
    if _HEADING_MARKUP.search(raw) is None:
        return raw.strip()
    return readable_text(raw)


def _closes(line: str, marker: str) -> bool:
    stripped = line.strip()
    return (
        len(line) - len(line.lstrip(" ")) <= 3
        and stripped.startswith(marker)
        and not stripped.strip(marker[0])
    )


def _comment_state(line: str, in_html: bool, in_pct: bool) -> tuple[bool, bool]:
    pos = 0
    while True:
        if in_html:
            j = line.find("-->", pos)
            if j < 0:
                return in_html, in_pct
            in_html, pos = False, j + 3
        elif in_pct:
            j = line.find("%%", pos)
            if j < 0:
                return in_html, in_pct
            in_pct, pos = False, j + 2
        else:
            a, b = line.find("<!--", pos), line.find("%%", pos)
            if a < 0 and b < 0:
                return in_html, in_pct
            if b < 0 or 0 <= a < b:
                in_html, pos = True, a + 4
            else:
                in_pct, pos = True, b + 2


def _sections(units: list[_Unit]) -> Iterable[list[_Unit]]:
    current: list[_Unit] = []
    for unit in units:
        if unit.kind == "heading" and unit.level <= 2 and current:
            yield current
            current = []
        current.append(unit)
    if current:
        yield current


# --- splitting ----------------------------------------------------------------------------


def _split_section(
    lines: list[str], units: list[_Unit], section_id: int, max_chars: int, min_chars: int
) -> list[_Piece]:
    head = units[0]
    intro = not (head.kind == "heading" and head.level == 2)

    def piece(text: str, first: int, last: int, path: tuple[str, ...]) -> _Piece:
        return _Piece(text, first, last, path, section_id, intro)

    whole = "\n".join(lines[head.start : units[-1].end])
    if len(whole) <= max_chars:
        return [piece(whole, head.start, units[-1].end - 1, head.path)]

    pieces: list[_Piece] = []
    cur: list[_Unit] = []  # the units of the piece being filled

    def text_of(group: list[_Unit]) -> str:
        return "\n".join(lines[group[0].start : group[-1].end])

    def close() -> None:
        nonlocal cur
        if cur:
            pieces.append(piece(text_of(cur), cur[0].start, cur[-1].end - 1, cur[0].path))
        cur = []

    def take_dangling_headings() -> list[_Unit]:
        # A heading must not end a piece while its text starts the next one.
        carried: list[_Unit] = []
        while len(cur) > 1 and cur[-1].kind == "heading":
            carried.insert(0, cur.pop())
        return carried

    tail_sizes = _tail_sizes(lines, units)
    cur_len = 0
    for index, unit in enumerate(units):
        unit_len = sum(len(line) + 1 for line in lines[unit.start : unit.end]) - 1
        if cur:
            gap = unit.start - cur[-1].end + 1
            fits = cur_len + gap + unit_len <= max_chars
            # The rest of the section is a scrap: keep it here rather than alone.
            scrap = (
                tail_sizes[index] < min_chars
                and cur_len + gap + tail_sizes[index] <= max_chars + min_chars
            )
            # Once a piece is half full, a subheading is a better place to cut
            # than wherever the limit happens to fall.
            subheading = unit.kind == "heading" and 2 * cur_len >= max_chars
            if (fits and not subheading) or scrap:
                cur.append(unit)
                cur_len += gap + unit_len
                continue
        carried = take_dangling_headings()
        close()
        if unit_len <= max_chars:
            cur = [*carried, unit]
            cur_len = len(text_of(cur))
            continue
        parts = _split_long_unit(lines, unit, max_chars)
        if carried:
            lead = text_of(carried)
            text, first, last = parts[0]
            if len(lead) + 1 + len(text) <= max_chars + min_chars:
                parts[0] = (f"{lead}\n{text}", carried[0].start, last)
            else:
                pieces.append(piece(lead, carried[0].start, carried[-1].end - 1, carried[0].path))
        for text, first, last in parts:
            pieces.append(piece(text, first, last, unit.path))
        cur_len = 0
    close()
    return pieces


def _tail_sizes(lines: list[str], units: list[_Unit]) -> list[int]:
    """For each unit, the length of the section text from its first line to the end."""
    sizes = [0] * len(units)
    total = 0
    for index in range(len(units) - 1, -1, -1):
        unit = units[index]
        total += sum(len(line) + 1 for line in lines[unit.start : unit.end])
        sizes[index] = total
    return sizes


def _split_long_unit(lines: list[str], unit: _Unit, max_chars: int) -> list[tuple[str, int, int]]:
    """Cut one oversized block between lines; a code block keeps its fences on every piece."""
    block = lines[unit.start : unit.end]
    fence = _FENCE.match(block[0]) if unit.kind == "code" else None
    if fence is None or len(block) < 2:
        return _group_lines(block, unit.start, max_chars)
    opening = block[0]
    closed = _closes(block[-1], fence.group(1))
    closing = block[-1] if closed else fence.group(1)
    inner = block[1:-1] if closed else block[1:]
    budget = max(max_chars - len(opening) - len(closing) - 2, 1)
    groups = _group_lines(inner, unit.start + 1, budget)
    # The first piece starts at the real opening fence; later pieces at their
    # first code line (their opening fence is a copy).
    groups[0] = (groups[0][0], unit.start, groups[0][2])
    return [(f"{opening}\n{text}\n{closing}", first, last) for text, first, last in groups]


def _group_lines(block: list[str], offset: int, budget: int) -> list[tuple[str, int, int]]:
    """Pack lines into groups of at most ``budget`` characters: (text, first, last line index)."""
    groups: list[tuple[str, int, int]] = []
    buf: list[tuple[str, int]] = []
    size = 0
    for index, line in enumerate(block):
        for part in _cut_line(line, budget):
            if buf and size + 1 + len(part) > budget:
                groups.append(("\n".join(t for t, _ in buf), buf[0][1], buf[-1][1]))
                buf, size = [], 0
            if not buf and not part.strip():
                continue  # a piece does not start with blank lines
            size += len(part) + (1 if buf else 0)
            buf.append((part, offset + index))
    if buf:
        groups.append(("\n".join(t for t, _ in buf), buf[0][1], buf[-1][1]))
    return groups or [("", offset, offset)]


def _cut_line(line: str, budget: int) -> list[str]:
    """A single line longer than ``budget``, cut at the last space before the limit."""
    parts: list[str] = []
    while len(line) > budget:
        cut = line.rfind(" ", budget // 2, budget)
        if cut <= 0:
            cut = budget
        parts.append(line[:cut].rstrip())
        line = line[cut:].lstrip()
    parts.append(line)
    return parts


# --- merging ------------------------------------------------------------------------------


def _merge_small(pieces: list[_Piece], max_chars: int, min_chars: int) -> list[_Piece]:
    ceiling = max_chars + min_chars
    # Markup (URLs, comments) is what makes a readable-tiny fragment long in raw
    # text, e.g. a template footer of three long links. Such a fragment alone
    # embeds as noise shared by every note, so it may still join its neighbour.
    raw_ceiling = 2 * max_chars
    i = 0
    while i < len(pieces) and len(pieces) > 1:
        piece = pieces[i]
        if piece.readable >= min_chars:
            i += 1
            continue
        prev = pieces[i - 1] if i > 0 else None
        nxt = pieces[i + 1] if i + 1 < len(pieces) else None
        order: list[tuple[_Piece | None, bool]] = [
            (prev, True) if prev is not None and prev.section == piece.section else (None, True),
            (nxt, False) if nxt is not None and nxt.section == piece.section else (None, False),
        ]
        order += [(nxt, False), (prev, True)] if piece.intro else [(prev, True), (nxt, False)]
        for other, before in order:
            if other is None:
                continue
            merged = _join(other, piece) if before else _join(piece, other)
            size = len(merged.text)
            if size > raw_ceiling:
                continue
            # Cleaning never lengthens text, so only a long merge is measured exactly.
            if size > ceiling:
                merged._readable = len(readable_text(merged.text))
                if merged._readable > ceiling:
                    continue
            if before:
                pieces[i - 1 : i + 1] = [merged]
            else:
                pieces[i : i + 2] = [merged]
            break
        else:
            i += 1
    return pieces


def _has_readable(piece: _Piece) -> bool:
    """Whether cleaning leaves any text, without cleaning when one line settles it.

    A line that starts with a letter or digit keeps that word through cleaning,
    unless it is a URL or sits inside a comment; most notes have such a line.
    """
    if piece._readable is None and "<!--" not in piece.text and "%%" not in piece.text:
        for line in piece.text.split("\n"):
            if line[:1].isalnum() and "://" not in line and "www." not in line:
                return True
    return piece.readable > 0


def _join(a: _Piece, b: _Piece) -> _Piece:
    gap = "\n" * max(b.first - a.last, 1)
    # The chunk is labelled by where it starts, except that a tiny intro merged
    # forward (a title and a line) takes the path of what follows when that
    # path lies under it: ("Guide", "Install") still names "Guide".
    lead = a
    if a.intro and a.readable < b.readable and b.path[: len(a.path)] == a.path:
        lead = b
    merged = _Piece(a.text + gap + b.text, a.first, b.last, lead.path, lead.section, a.intro)
    # Lengths add up unless a comment or fence opened in one part closes in the
    # other; then the joined text is measured again. (The sum is an estimate
    # used to spot tiny pieces; the size ceiling is checked exactly.)
    if _balanced(a.text) and _balanced(b.text):
        merged._readable = a.readable + b.readable + 1
    return merged


def _balanced(text: str) -> bool:
    return (
        text.count("<!--") == text.count("-->")
        and text.count("%%") % 2 == 0
        and text.count("```") % 2 == 0
        and text.count("~~~") % 2 == 0
    )


# --- metadata -----------------------------------------------------------------------------


def _inline_tags(lines: list[str], units: list[_Unit]) -> list[str]:
    texts = ["\n".join(lines[u.start : u.end]) for u in units if u.kind != "code"]
    if not texts:
        return []
    text = "\n".join(texts)
    if _INLINE_TAG.search(text) is None:
        return []
    if "`" in text:
        text = _INLINE_CODE.sub(" ", text)
    if "<!--" in text or "%%" in text:
        text = _COMMENTS.sub(" ", text)
    tags: list[str] = []
    for match in _INLINE_TAG.finditer(text):
        tag = match.group(1).strip("/")
        if tag:
            tags.append(tag)
    return tags
