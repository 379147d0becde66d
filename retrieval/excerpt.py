"""What a search result or a context block shows of a chunk: its markdown as the note
reads in Obsidian, without what Obsidian hides and without status badges.

Why: Obsidian does not render ``%% comments %%`` or ``<!-- HTML comments -->``, and
a row of shields.io badges says nothing about a note. In a template-built vault they
are most of a short note's first chunk: on the Obsidian Hub every plugin note opens
with four badge images between ``%% ----- Badges ----- %%`` markers and ends with
three more comments, so a result's text and a context block's token budget went to
them before the note's one line of description. The index keeps every chunk as
written (BM25 and the vectors are built from it, see ``cleaning.py``); only the text
handed back is cleaned, before the token budget is applied, so the budget buys words.

Code is left exactly as written: ``%%`` inside a code span or fence is not a comment.
"""

from __future__ import annotations

import re

from signaldesk.retrieval.cleaning import (
    CODE_CLOSE,
    CODE_OPEN,
    CODE_PLACEHOLDER,
    HTML_COMMENT,
    without_badges,
)

__all__ = ["shown_excerpt"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)[^`]+?\1")
# An unclosed comment runs to the end, as Obsidian reads one (a chunk cut inside it).
_OBSIDIAN_COMMENT = re.compile(r"%%.*?(?:%%|\Z)", re.DOTALL)
_BLANK_RUN = re.compile(r"\n{3,}")


def shown_excerpt(markdown: str) -> tuple[str, int]:
    """``markdown`` without comments and badge images, and the number of lines dropped
    before its first shown line (so a result's line number points at what it shows).

    A removed span leaves its line breaks behind, then blank runs shrink to one empty
    line; text with nothing to remove comes back unchanged (but stripped of blank lines
    around it).
    """
    if "%%" not in markdown and "<!--" not in markdown and "![" not in markdown:
        return _trim(markdown)
    code: list[str] = []
    text = _hide_code(markdown.replace(CODE_OPEN, " ").replace(CODE_CLOSE, " "), code)
    if "%%" in text:
        text = _OBSIDIAN_COMMENT.sub(_line_breaks, text)
    if "<!--" in text:
        text = HTML_COMMENT.sub(_line_breaks, text)
    text = without_badges(text)
    if code:
        text = CODE_PLACEHOLDER.sub(lambda m: code[int(m.group(1))], text)
    text = "\n".join(line.rstrip() if not line.strip() else line for line in text.split("\n"))
    return _trim(text)


def _trim(text: str) -> tuple[str, int]:
    """``text`` without blank lines around it or blank runs inside it, and how many
    lines came before its first non-blank one."""
    stripped = text.lstrip("\n \t")
    skipped = text[: len(text) - len(stripped)].count("\n")
    return _BLANK_RUN.sub("\n\n", stripped.rstrip()), skipped


def _line_breaks(match: re.Match[str]) -> str:
    return "\n" * match.group(0).count("\n")


def _keep(code: list[str], original: str) -> str:
    code.append(original)
    return f"{CODE_OPEN}{len(code) - 1}{CODE_CLOSE}"


def _hide_code(text: str, code: list[str]) -> str:
    """Fenced blocks and inline code swapped for placeholders holding them verbatim."""
    if "`" not in text and "~~~" not in text:
        return text
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            line = lines[i]
            if "`" in line:
                line = _INLINE_CODE.sub(lambda m: _keep(code, m.group(0)), line)
            out.append(line)
            i += 1
            continue
        fence = opening.group(1)
        end = i + 1
        while end < len(lines):
            closing = lines[end].strip()
            if closing.startswith(fence) and not closing.strip(fence[0]):
                break
            end += 1
        block = lines[i : end + 1]  # an unclosed fence runs to the end of the chunk
        # One placeholder per line keeps the line count (and so the line number) right.
        out.extend(_keep(code, line) for line in block)
        i = end + 1
    return "\n".join(out)
