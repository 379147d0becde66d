"""Following a note's wiki-links, so a context block can bring in what it points to.

A note that answers a question often leans on the notes it links to (a MOC, a
definition, the project it belongs to) without repeating their words, so
neither search list finds them. Links resolve the way Obsidian resolves them:
by file name (with or without folders) or by title.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from signaldesk.retrieval.filters import filters_sql
from signaldesk.retrieval.records import SearchFilters
from signaldesk.retrieval.store import Connection

__all__ = ["LinkedChunk", "link_targets", "resolve_links"]

# [[Target]], [[Target|alias]], [[Target#Heading]], [[Target^block]]; not ![[embeds]].
_WIKILINK = re.compile(r"(?<!!)\[\[([^\[\]|#^\n]+)(?:[#^][^\]|\n]*)?(?:\|[^\]\n]*)?\]\]")


@dataclass(frozen=True, slots=True)
class LinkedChunk:
    """The first chunk of a note that ``source`` links to."""

    chunk_id: int
    source: str


def link_targets(texts: Iterable[tuple[str, str]], limit: int) -> list[tuple[str, str]]:
    """``(target, source path)`` for the first ``limit`` distinct wiki-links in ``texts``.

    :param texts: ``(source path, markdown)`` pairs, best first.
    """
    seen: set[str] = set()
    found: list[tuple[str, str]] = []
    for source, text in texts:
        for match in _WIKILINK.finditer(text):
            target = match.group(1).strip().removesuffix(".md")
            key = target.casefold()
            if target and key not in seen:
                seen.add(key)
                found.append((target, source))
                if len(found) >= limit:
                    return found
    return found


def resolve_links(
    conn: Connection,
    targets: list[tuple[str, str]],
    *,
    exclude_paths: set[str],
    filters: SearchFilters | None,
) -> list[LinkedChunk]:
    """The first chunk of each indexed note a target names, skipping ``exclude_paths``.

    A note outside ``filters`` is not followed, and neither is one the index does
    not hold (an ``.indexignore``d or missing note).
    """
    where, params = filters_sql(filters)
    sql = (
        "SELECT n.path, (SELECT c.id FROM chunks c WHERE c.note_id = n.id "
        "ORDER BY c.ordinal LIMIT 1) FROM notes n "
        "WHERE (lower(n.path) = ? OR lower(substr(n.path, -?)) = ? OR lower(n.title) = ?) "
        f"AND {where} ORDER BY length(n.path), n.path LIMIT 1"
    )
    linked: list[LinkedChunk] = []
    taken = set(exclude_paths)
    for target, source in targets:
        name = target.casefold()
        suffix = f"/{name}.md"
        row = conn.execute(sql, (f"{name}.md", len(suffix), suffix, name, *params)).fetchone()
        if row is None or row[1] is None or row[0] in taken:
            continue
        taken.add(row[0])
        linked.append(LinkedChunk(chunk_id=int(row[1]), source=source))
    return linked
