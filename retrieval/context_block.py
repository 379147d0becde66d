"""The markdown block :meth:`Retriever.context` returns: excerpts with their sources."""

from __future__ import annotations

from collections.abc import Sequence

from signaldesk.retrieval.budget import CHARS_PER_TOKEN, ELLIPSIS, MIN_EXCERPT_CHARS, cut
from signaldesk.retrieval.records import SearchResult

__all__ = ["SOURCE_SEPARATOR", "render_context", "source_label"]

# U+203A between the path and each heading: it reads as a breadcrumb and never
# occurs in a path or heading by accident, unlike ">" or "/".
SOURCE_SEPARATOR = " \u203a "


def source_label(result: SearchResult) -> str:
    """``path`` then each heading, joined by :data:`SOURCE_SEPARATOR` (just the path
    for text before any heading)."""
    headings = [h for h in result.heading_path if h] or ([result.section] if result.section else [])
    return SOURCE_SEPARATOR.join([result.path, *headings])


def render_context(
    topic: str,
    results: list[SearchResult],
    max_tokens: int,
    *,
    linked: Sequence[tuple[SearchResult, str]] = (),
) -> str:
    """Excerpts in rank order under ``### <source_label>`` headings, within ``max_tokens``.

    ``linked`` (a note's opening, and the path of the result that links to it)
    follow the results, headed ``(linked from <path>)``. The budget counts the
    whole block, headings included. The first excerpt always appears; the first
    one that does not fit is cut with ``...`` and ends the block.
    """
    if not results:
        return f"_No notes in the index match “{topic}”._\n"
    budget = max(1, max_tokens) * CHARS_PER_TOKEN
    parts: list[str] = []
    entries = [(r, "") for r in results] + [(r, f" (linked from {src})") for r, src in linked]
    for result, note in entries:
        header = f"### {source_label(result)}{note}\n\n"
        body = result.text.strip()
        block = header + body + "\n\n"
        if len(block) <= budget:
            parts.append(block)
            budget -= len(block)
            continue
        room = budget - len(header) - 2
        if not parts or room >= MIN_EXCERPT_CHARS:
            parts.append(header + cut(body, max(room, len(ELLIPSIS) + 1)) + "\n\n")
        break
    return "".join(parts).rstrip() + "\n"
