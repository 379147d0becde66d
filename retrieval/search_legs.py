"""The SQL side of a search: the BM25 list, the sqlite-vec fallback, chunk metadata.

Plain synchronous functions over one connection; the retriever runs them in a
worker thread inside a single read transaction, so every query of one search
sees the same snapshot of the index even while the indexer commits.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from signaldesk.retrieval import bm25_topk
from signaldesk.retrieval.excerpt import shown_excerpt
from signaldesk.retrieval.filters import filters_sql
from signaldesk.retrieval.fts_query import match_phrases
from signaldesk.retrieval.records import SearchFilters
from signaldesk.retrieval.schema import FTS_TABLE, NOTE_FTS_TABLE, VECTOR_TABLE
from signaldesk.retrieval.store import Connection
from signaldesk.retrieval.weights import DECISIVE_DEPTH

__all__ = [
    "CHUNK_ROW_COLUMNS",
    "ChunkKey",
    "ChunkRow",
    "Relevance",
    "allowed_chunk_ids",
    "bm25_list",
    "chunk_keys",
    "chunk_row",
    "chunk_rows",
    "exact_notes",
    "note_bm25_list",
    "note_chunks",
    "note_updated",
    "string_tuple",
    "vec_knn",
    "vec_scores_for",
]


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A chunk with what a result needs to show about it and its note."""

    chunk_id: int
    ordinal: int
    section: str
    heading_path: tuple[str, ...]
    text: str
    start_line: int
    path: str
    title: str
    note_type: str | None
    domain: str | None
    tags: tuple[str, ...]
    updated: str | None
    vault: str | None = None


@dataclass(frozen=True, slots=True)
class ChunkKey:
    """Where a chunk sits: what ordering, grouping by note and explaining need."""

    path: str
    ordinal: int
    section: str
    note_id: int


def _weights_sql(weights: tuple[float, ...]) -> str:
    # Floats formatted by us, never text from a caller.
    return ", ".join(repr(float(w)) for w in weights)


def bm25_list(
    conn: Connection,
    match: str,
    limit: int,
    weights: tuple[float, float, float],
    filters: SearchFilters | None,
    counts: bm25_topk.Counts | None = None,
) -> tuple[list[tuple[int, float]], Relevance]:
    """The ``limit`` best chunks for ``match`` and their relevance.

    Relevance is FTS5's ``bm25()`` negated, so higher is better. The list is
    ``(chunk_id, relevance)`` best first (ties: lower chunk id first). The
    :class:`Relevance` holds at least the best ``max(limit, DECISIVE_DEPTH)``
    rows; :meth:`Relevance.cover` adds the scores of any other chunks a search
    needs (the vector list's candidates) before they are read.
    """
    return _keyword_list(
        conn, FTS_TABLE, "chunks_fts.rowid", match, limit, weights, filters, counts
    )


def _keyword_list(
    conn: Connection,
    table: str,
    joined_rowid: str,
    match: str,
    limit: int,
    weights: tuple[float, ...],
    filters: SearchFilters | None,
    counts: bm25_topk.Counts | None,
) -> tuple[list[tuple[int, float]], Relevance]:
    where, params = filters_sql(filters)
    w = _weights_sql(weights)
    if where == "1" and min(weights) >= 0.0:
        # The exact top rows without scoring every match (bm25_topk.py).
        depth = max(limit, DECISIVE_DEPTH)
        top = bm25_topk.top_rows(conn, table, match_phrases(match), w, depth, counts)
        if top is not None:
            relevance = Relevance(dict(top), conn=conn, table=table, match=match, weights_sql=w)
            return [(rowid, -raw) for rowid, raw in top[:limit]], relevance
    # Every match, scored: with filters (the top rows of the filtered set) or
    # with a negative column weight (no upper bound per phrase).
    if where == "1":
        sql = f"SELECT rowid, bm25({table}, {w}) FROM {table} WHERE {table} MATCH ?"
        rows = conn.execute(sql, (match,)).fetchall()
    else:
        join = (
            f"JOIN chunks c ON c.id = {joined_rowid} JOIN notes n ON n.id = c.note_id"
            if table == FTS_TABLE
            else f"JOIN notes n ON n.id = {joined_rowid}"
        )
        sql = (
            f"SELECT {joined_rowid}, bm25({table}, {w}) FROM {table} {join} "
            f"WHERE {table} MATCH ? AND {where}"
        )
        rows = conn.execute(sql, (match, *params)).fetchall()
    return _ranked(rows, limit)


class Relevance(Mapping[int, float]):
    """Matching rows' relevance by id: ``bm25()`` negated when read.

    Trigger: a broad query matches 30k chunks. Why: negating and re-boxing
    every row in Python cost ~0.6 us a row, while a search reads the scores of
    only ~200 candidates. Outcome: the rows stay as SQLite returned them
    (``dict(rows)`` runs in C) and the same values come out.

    Built from every match (``complete``), or from the top rows only, with what
    :meth:`cover` needs to score more rows of the same query on demand.
    """

    __slots__ = ("_conn", "_match", "_raw", "_table", "_weights_sql")

    def __init__(
        self,
        raw: dict[int, float],
        *,
        conn: Connection | None = None,
        table: str = "",
        match: str = "",
        weights_sql: str = "",
    ) -> None:
        self._raw = raw
        self._conn = conn
        self._table = table
        self._match = match
        self._weights_sql = weights_sql

    @property
    def complete(self) -> bool:
        """Whether every matching row is here (else only those read so far)."""
        return self._conn is None

    def cover(self, rowids: Iterable[int]) -> None:
        """Read the relevance of those of ``rowids`` not yet known (same connection and
        snapshot); a row that does not match stays absent, as in a complete map."""
        if self._conn is None:
            return
        missing = [r for r in rowids if r not in self._raw]
        if missing:
            self._raw.update(
                bm25_topk.scores_for(
                    self._conn, self._table, self._match, self._weights_sql, missing
                )
            )

    def __getitem__(self, key: int) -> float:
        return -self._raw[key]

    def get(self, key: int, default: float | None = None) -> float | None:  # type: ignore[override]
        # A search asks for ~330 ids: one dict lookup each rather than Mapping.get's
        # __getitem__ and KeyError for every chunk a keyword list did not match.
        raw = self._raw.get(key)
        return default if raw is None else -raw

    def __iter__(self) -> Iterator[int]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


# (bm25 ascending, rowid): best first, ties by the lower id, as -relevance then id.
_BEST_FIRST = itemgetter(1, 0)


def _ranked(rows: list[tuple[int, float]], limit: int) -> tuple[list[tuple[int, float]], Relevance]:
    top = heapq.nsmallest(limit, rows, key=_BEST_FIRST)
    return [(int(rowid), -float(raw)) for rowid, raw in top], Relevance(dict(rows))


def note_bm25_list(
    conn: Connection,
    match: str,
    limit: int,
    weights: tuple[float, ...],
    filters: SearchFilters | None,
    counts: bm25_topk.Counts | None = None,
) -> tuple[list[tuple[int, float]], Relevance]:
    """The ``limit`` best notes for ``match`` in ``notes_fts`` and their scores.

    Like :func:`bm25_list` but one row per note (rowid = ``notes.id``), with the
    note-level column weights (title, aliases, file, tags, headings, body).
    """
    table = NOTE_FTS_TABLE
    return _keyword_list(conn, table, f"{table}.rowid", match, limit, weights, filters, counts)


def exact_notes(conn: Connection, key: str, filters: SearchFilters | None) -> set[int]:
    """Notes whose title, an alias or file name equals ``key`` (a :func:`name_key`)."""
    if not key:
        return set()
    where, params = filters_sql(filters)
    sql = (
        "SELECT k.note_id FROM note_keys k JOIN notes n ON n.id = k.note_id "
        f"WHERE k.key = ? AND {where}"
    )
    return {int(r[0]) for r in conn.execute(sql, (key, *params))}


def note_chunks(conn: Connection, note_ids: list[int]) -> dict[int, ChunkKey]:
    """Every chunk of each listed note, by chunk id."""
    if not note_ids:
        return {}
    sql = (
        "SELECT c.id, n.path, c.ordinal, c.section, c.note_id FROM chunks c "
        "JOIN notes n ON n.id = c.note_id WHERE c.note_id IN (SELECT value FROM json_each(?))"
    )
    return {
        int(r[0]): ChunkKey(str(r[1]), int(r[2]), str(r[3]), int(r[4]))
        for r in conn.execute(sql, (json.dumps(note_ids),))
    }


def note_updated(conn: Connection, note_ids: list[int]) -> dict[int, str]:
    """The ``updated`` (else ``created``) value of each listed note."""
    if not note_ids:
        return {}
    sql = (
        "SELECT id, COALESCE(updated, created) FROM notes "
        "WHERE id IN (SELECT value FROM json_each(?))"
    )
    return {
        int(r[0]): str(r[1]) for r in conn.execute(sql, (json.dumps(note_ids),)) if r[1] is not None
    }


def allowed_chunk_ids(conn: Connection, filters: SearchFilters | None) -> set[int] | None:
    """Chunk ids that pass ``filters``; ``None`` when there is nothing to filter."""
    where, params = filters_sql(filters)
    if where == "1":
        return None
    sql = f"SELECT c.id FROM chunks c JOIN notes n ON n.id = c.note_id WHERE {where}"
    return {int(r[0]) for r in conn.execute(sql, params)}


def vec_knn(
    conn: Connection, query_blob: bytes, vector_type: str, k: int, allowed: set[int] | None
) -> list[tuple[int, float]]:
    """KNN through sqlite-vec itself (used until the in-memory matrix is loaded).

    With filters, over-fetches and filters afterwards; the list can then be
    shorter than ``k`` when the filter is very selective.
    """
    fetch = k if allowed is None else min(max(k * 10, 200), 4096)
    wrap = "vec_int8(?)" if vector_type == "int8" else "?"
    sql = (
        f"SELECT rowid, distance FROM {VECTOR_TABLE} WHERE embedding MATCH {wrap} "
        "AND k = ? ORDER BY distance"
    )
    rows = conn.execute(sql, (query_blob, fetch)).fetchall()
    # vec0 allows only ORDER BY distance; equal distances are ordered by chunk
    # id here, like the in-memory matrix does.
    hits = sorted(
        ((int(rowid), 1.0 - float(distance)) for rowid, distance in rows),
        key=lambda hit: (-hit[1], hit[0]),
    )
    return [hit for hit in hits if allowed is None or hit[0] in allowed][:k]


def vec_scores_for(
    conn: Connection, query_blob: bytes, vector_type: str, chunk_ids: list[int]
) -> dict[int, float]:
    """Cosine similarity of the listed chunks through sqlite-vec."""
    if not chunk_ids:
        return {}
    wrap = "vec_int8(?)" if vector_type == "int8" else "?"
    sql = (
        f"SELECT rowid, vec_distance_cosine(embedding, {wrap}) FROM {VECTOR_TABLE} "
        "WHERE rowid IN (SELECT value FROM json_each(?))"
    )
    return {
        int(r[0]): 1.0 - float(r[1]) for r in conn.execute(sql, (query_blob, json.dumps(chunk_ids)))
    }


def string_tuple(value: Any) -> tuple[str, ...]:
    """A stored list of strings (tags, a heading path): SQLite keeps its JSON text,
    PostgreSQL hands back the decoded list; anything else is no list."""
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return ()
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def chunk_keys(conn: Connection, chunk_ids: list[int]) -> dict[int, ChunkKey]:
    """Where each listed chunk that still exists sits, without reading any chunk text."""
    if not chunk_ids:
        return {}
    sql = (
        "SELECT c.id, n.path, c.ordinal, c.section, c.note_id FROM chunks c "
        "JOIN notes n ON n.id = c.note_id WHERE c.id IN (SELECT value FROM json_each(?))"
    )
    return {
        int(r[0]): ChunkKey(str(r[1]), int(r[2]), str(r[3]), int(r[4]))
        for r in conn.execute(sql, (json.dumps(chunk_ids),))
    }


CHUNK_ROW_COLUMNS = (
    "c.id, c.ordinal, c.section, c.heading_path, c.text, c.start_line, "
    "n.path, n.title, n.type, n.domain, n.tags, COALESCE(n.updated, n.created)"
)
"""What :func:`chunk_row` reads, in its order (``c``: the chunks, ``n``: their notes)."""


def chunk_row(r: Sequence[Any], vault: str | None = None) -> ChunkRow:
    """The :class:`ChunkRow` of one row of :data:`CHUNK_ROW_COLUMNS`, its text as it is
    shown (comments and badges left out, the line number of what is shown)."""
    text, skipped = shown_excerpt(str(r[4]))
    return ChunkRow(
        chunk_id=int(r[0]),
        ordinal=int(r[1]),
        section=str(r[2]),
        heading_path=string_tuple(r[3]),
        text=text,
        start_line=int(r[5]) + skipped,
        path=str(r[6]),
        title=str(r[7]),
        note_type=r[8],
        domain=r[9],
        tags=string_tuple(r[10]),
        updated=r[11],
        vault=vault,
    )


def chunk_rows(conn: Connection, chunk_ids: list[int]) -> dict[int, ChunkRow]:
    """Chunk and note fields for each listed chunk that still exists."""
    if not chunk_ids:
        return {}
    sql = (
        f"SELECT {CHUNK_ROW_COLUMNS} FROM chunks c JOIN notes n ON n.id = c.note_id "
        "WHERE c.id IN (SELECT value FROM json_each(?))"
    )
    return {int(r[0]): chunk_row(r) for r in conn.execute(sql, (json.dumps(chunk_ids),))}
