"""What :meth:`Retriever.context` returns (the excerpts about a topic, with their sources),
and the one way to render it as a markdown block, which the CLI and the MCP server call
at their edge (after the server has dropped what it must not return)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from signaldesk.retrieval.budget import CHARS_PER_TOKEN, ELLIPSIS, MIN_EXCERPT_CHARS, cut
from signaldesk.retrieval.records import SearchResult

__all__ = [
    "SOURCE_SEPARATOR",
    "ContextExcerpts",
    "Excerpt",
    "RenderedContext",
    "render_context",
    "source_label",
]

# U+203A between the path and each heading: it reads as a breadcrumb and never
# occurs in a path or heading by accident, unlike ">" or "/".
SOURCE_SEPARATOR = " \u203a "


def source_label(result: SearchResult) -> str:
    """``path`` then each heading, joined by :data:`SOURCE_SEPARATOR` (just the path
    for text before any heading)."""
    headings = [h for h in result.heading_path if h] or ([result.section] if result.section else [])
    return SOURCE_SEPARATOR.join([result.path, *headings])


@dataclass(frozen=True, slots=True)
class Excerpt:
    """One excerpt: a search result, or the opening of a note a result links to."""

    result: SearchResult
    linked_from: str | None = None


@dataclass(frozen=True, slots=True)
class ContextExcerpts:
    """The excerpts about ``topic`` in rank order (results first, then linked notes)."""

    topic: str
    excerpts: tuple[Excerpt, ...]

    def without(self, excluded: Callable[[str], bool]) -> ContextExcerpts:
        """The same excerpts less those of notes ``excluded`` refuses."""
        kept = tuple(e for e in self.excerpts if not excluded(e.result.path))
        return ContextExcerpts(self.topic, kept)


@dataclass(frozen=True, slots=True)
class RenderedContext:
    """The markdown block and the note paths it quotes, in order."""

    text: str
    sources: tuple[str, ...]


def render_context(context: ContextExcerpts, max_tokens: int) -> RenderedContext:
    """Excerpts in rank order under ``### <source_label>`` headings, within ``max_tokens``.

    Linked notes' openings are headed ``(linked from <path>)``. The budget counts the
    whole block, headings included. The first excerpt always appears; the first one
    that does not fit is cut with ``...`` and ends the block.
    """
    if not context.excerpts:
        return RenderedContext(f"_No notes in the index match “{context.topic}”._\n", ())
    budget = max(1, max_tokens) * CHARS_PER_TOKEN
    parts: list[str] = []
    sources: list[str] = []
    for excerpt in context.excerpts:
        result = excerpt.result
        note = f" (linked from {excerpt.linked_from})" if excerpt.linked_from else ""
        header = f"### {source_label(result)}{note}\n\n"
        body = result.text.strip()
        block = header + body + "\n\n"
        if len(block) <= budget:
            parts.append(block)
            budget -= len(block)
        else:
            room = budget - len(header) - 2
            if parts and room < MIN_EXCERPT_CHARS:
                break
            parts.append(header + cut(body, max(room, len(ELLIPSIS) + 1)) + "\n\n")
            budget = 0
        if result.path not in sources:
            sources.append(result.path)
        if budget <= 0:
            break
    return RenderedContext("".join(parts).rstrip() + "\n", tuple(sources))
