"""Records that cross the retrieval boundary (to the CLI, the MCP server, the pipeline)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

SearchMode = Literal["hybrid", "bm25", "vector"]


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Restricts a search or a listing. Every field left as ``None`` / empty matches all.

    :param folder: vault-relative folder prefix, e.g. ``"05-signals/security"``.
    :param tags: every listed tag must be on the note.
    :param since: notes updated (or created) on or after this day.
    :param until: notes updated (or created) on or before this day.
    :param vaults: only notes of these vaults (``None``: every vault). Only the
        PostgreSQL index holds several vaults; an SQLite index is one vault and
        ignores it. A confined retriever (``PgRetriever.confined``) narrows it and
        never widens it.
    """

    folder: str | None = None
    type: str | None = None
    domain: str | None = None
    tags: tuple[str, ...] = ()
    status: str | None = None
    since: date | None = None
    until: date | None = None
    vaults: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One retrieved chunk, shown for its note.

    ``bm25_rank`` and ``vector_rank`` are the chunk's 1-based positions in the
    chunk keyword and vector lists, ``note_rank`` its note's position in the
    note keyword list (``None`` when not in that list's top); ``score`` is the
    note's fused score.
    """

    path: str
    section: str
    text: str
    score: float
    title: str
    heading_path: tuple[str, ...] = ()
    bm25_rank: int | None = None
    vector_rank: int | None = None
    note_rank: int | None = None
    start_line: int | None = None
    note_type: str | None = None
    domain: str | None = None
    tags: tuple[str, ...] = ()
    updated: str | None = None
    vault: str | None = None  # the vault's name in a shared (PostgreSQL) index


@dataclass(frozen=True, slots=True)
class SearchPage:
    """Results of a search and how many more the token budget left out.

    ``omitted`` counts results that were ranked within ``limit`` but did not fit
    ``max_tokens`` (raise ``max_tokens`` or lower ``limit`` to see them).
    """

    results: tuple[SearchResult, ...]
    omitted: int = 0
    degraded: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NoteInfo:
    """One indexed note, from the index's notes table (no file read needed)."""

    path: str
    title: str
    note_type: str | None
    domain: str | None
    tags: tuple[str, ...]
    status: str | None
    created: str | None
    updated: str | None
    mtime: float
    frontmatter: dict[str, Any] = field(default_factory=dict)
    vault: str | None = None  # the vault's name in a shared (PostgreSQL) index


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """What is in the index and how it can be searched right now."""

    db_path: str
    exists: bool
    notes: int = 0
    chunks: int = 0
    vectors: int = 0
    db_bytes: int = 0
    model: str | None = None
    dimensions: int | None = None
    last_indexed: datetime | None = None
    degraded: tuple[str, ...] = ()
    folders: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What one indexing run did."""

    scanned: int = 0
    added: int = 0
    changed: int = 0
    deleted: int = 0
    unchanged: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    seconds: float = 0.0
    full_rebuild: bool = False
    rebuild_reason: str | None = None
    interrupted: bool = False
    errors: tuple[str, ...] = ()
