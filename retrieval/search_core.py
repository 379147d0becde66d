"""The search itself, on one connection in the calling thread: what the async
:class:`~retrieval.retriever.Retriever` runs in its worker threads and what a one-shot
search (:mod:`retrieval.one_shot`) runs in its only thread.

One search is one read transaction (:meth:`SearchCore.execute_in` inside
:meth:`SearchCore._snapshot`): the model check, the query embedding, the lists, the
fusion and the budget. The PostgreSQL retriever overrides the hooks (``_vector_problem``,
``_rank``) and keeps the rest.

Ranking design and measurements: docs/ranking.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, get_args

import numpy as np
import numpy.typing as npt

from signaldesk.retrieval import search_legs
from signaldesk.retrieval._connections import NO_INDEX_HINT
from signaldesk.retrieval.bm25_topk import PhraseCounts
from signaldesk.retrieval.budget import BudgetFit, fit_all, take
from signaldesk.retrieval.chunk_keys import ChunkKeys
from signaldesk.retrieval.context_block import ContextExcerpts, Excerpt
from signaldesk.retrieval.embedder import Embedder
from signaldesk.retrieval.errors import (
    IndexUnavailableError,
    ModelError,
    QueryError,
    RetrievalError,
)
from signaldesk.retrieval.explanation import ExplainRow, SearchExplanation
from signaldesk.retrieval.fts_query import build_match
from signaldesk.retrieval.fts_text import name_key
from signaldesk.retrieval.fusion import Candidate
from signaldesk.retrieval.links import link_targets, resolve_links
from signaldesk.retrieval.note_rank import NoteCandidate
from signaldesk.retrieval.query_vectors import NO_MODEL, QueryVectors
from signaldesk.retrieval.ranking import NOTES_NOT_READY, Ranked, RankRequest, rank
from signaldesk.retrieval.records import SearchFilters, SearchMode, SearchResult
from signaldesk.retrieval.search_legs import ChunkRow
from signaldesk.retrieval.status import search_modes
from signaldesk.retrieval.store import Connection, is_corruption_error, sqlite_module
from signaldesk.retrieval.vector_cache import cache_token

if TYPE_CHECKING:
    from signaldesk.retrieval.settings import IndexSettings, SearchSettings

__all__ = ["DAMAGED_HINT", "SearchCore", "SearchRequest", "Searchable", "context_excerpts"]

logger = logging.getLogger(__name__)

DAMAGED_HINT = "run `signaldesk index` to rebuild it from the vault (the notes are not affected)"
_MODES: tuple[str, ...] = get_args(SearchMode)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search as the retrievers take it: the query and its knobs (``None``: the
    settings' value)."""

    query: str
    limit: int | None = None
    filters: SearchFilters | None = None
    mode: SearchMode | None = None
    max_tokens: int | None = None
    fit: BudgetFit = "drop"


@dataclass(frozen=True, slots=True)
class Searchable:
    """What an index can be searched with (:meth:`SearchCore.checked`)."""

    keyword: bool  # FTS5 works
    vector: bool  # sqlite-vec is loaded
    degraded: tuple[str, ...]  # what a search cannot do, in words


class SearchCore:
    """One vault's search state (settings, the query model, what the index can do) and
    the search on a given connection; it opens nothing itself."""

    def __init__(
        self,
        index: IndexSettings,
        search: SearchSettings,
        embedder: Embedder | None,
        able: Searchable,
    ) -> None:
        self._index = index
        self._settings = search
        self._vectors = QueryVectors(embedder, available=able.vector)
        self._keys = ChunkKeys()
        self._counts = PhraseCounts()
        self._fts_ok = able.keyword
        self._static_degraded = able.degraded

    @classmethod
    def checked(cls, conn: Connection, embedder: Embedder | None) -> Searchable:
        """What ``conn``'s index can be searched with, ``embedder`` given.

        :raises IndexUnavailableError: neither keyword nor vector search is possible.
        """
        able = cls._searchable(conn, embedder)
        if not able.keyword and (embedder is None or not able.vector):
            raise IndexUnavailableError(
                "the index can be searched neither by keyword nor by vector: "
                + "; ".join(able.degraded),
                hint="check `signaldesk doctor`, then run `signaldesk index --full`",
            )
        return able

    @classmethod
    def _searchable(cls, conn: Connection, embedder: Embedder | None) -> Searchable:
        fts_ok, vec_ext_ok, degraded = cls._probe(conn)
        if embedder is None:
            degraded = (*degraded, NO_MODEL)
        return Searchable(fts_ok, vec_ext_ok, degraded)

    @staticmethod
    def check_tables(conn: Connection) -> None:
        """Raise :class:`IndexUnavailableError` unless ``conn``'s database can be searched."""
        db_error = sqlite_module().Error
        try:
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if {"notes", "chunks", "meta"} <= tables:
                conn.execute("SELECT value FROM meta LIMIT 1").fetchall()
        except db_error as exc:
            raise IndexUnavailableError(
                f"the index cannot be read: {exc}", hint=DAMAGED_HINT
            ) from exc
        if not {"notes", "chunks", "meta"} <= tables:
            raise IndexUnavailableError("the index is empty", hint=NO_INDEX_HINT)

    @staticmethod
    def _probe(conn: Connection) -> tuple[bool, bool, tuple[str, ...]]:
        modes = search_modes(conn)
        return modes.keyword, modes.vector, modes.degraded

    def _snapshot(self, conn: Connection, path: Path, fn: Callable[[Connection], T]) -> T:
        """``fn(conn)`` inside one read transaction, SQLite's errors made ours."""
        db_error = sqlite_module().Error
        try:
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                conn.execute("COMMIT")
        except db_error as exc:
            if "no such table" in str(exc):
                raise IndexUnavailableError(
                    f"the index at {path} is incomplete: {exc}", hint=NO_INDEX_HINT
                ) from exc
            if is_corruption_error(exc):
                raise IndexUnavailableError(
                    f"the index at {path} is damaged: {exc}", hint=DAMAGED_HINT
                ) from exc
            raise RetrievalError(f"index query failed: {exc}") from exc

    def execute_in(
        self,
        conn: Connection,
        request: SearchRequest,
        *,
        explain: bool,
        side: Connection | None = None,
    ) -> SearchExplanation:
        """One search on ``conn``'s snapshot (call it inside :meth:`_snapshot`).

        ``side``, a second idle connection to the same file, lets the note lists be
        read beside the chunk list when it sees the same commit.

        :raises QueryError: the query is empty, or the mode unknown.
        """
        s = self._settings
        query, filters, fit = request.query, request.filters, request.fit
        limit, max_tokens = request.limit, request.max_tokens
        requested: SearchMode = request.mode or s.mode
        if requested not in _MODES:
            raise QueryError(
                f"unknown search mode {requested!r}", hint="use hybrid, bm25 or vector"
            )
        match = build_match(query)  # raises QueryError on an empty query
        limit = s.limit if limit is None else max(1, int(limit))
        budget = s.max_tokens if max_tokens is None else max(1, int(max_tokens))
        depth = max(s.candidates, limit)
        timings: dict[str, float] = {}
        degraded = list(self._static_degraded)

        started = time.perf_counter()

        effective, ranked = self._plan_and_rank(
            conn, query, match, requested, depth, limit, filters, degraded, timings, side, explain
        )
        use_bm25 = effective in ("hybrid", "bm25")
        if use_bm25 and not ranked.notes_used and NOTES_NOT_READY not in degraded:
            degraded.append(NOTES_NOT_READY)
        top = [c for c in ranked.shown if c.chunk_id in ranked.rows]
        texts = [ranked.rows[c.chunk_id].text for c in top]
        kept = fit_all(texts, budget) if fit == "trim" else take(texts, budget)
        results = tuple(
            self._result(c, ranked.rows[c.chunk_id], text, ranked.note_of_shown.get(c.chunk_id))
            for c, text in zip(top, kept, strict=False)
        )
        timings["total"] = (time.perf_counter() - started) * 1000
        return SearchExplanation(
            query=query,
            match=match if use_bm25 else None,
            requested_mode=requested,
            mode=effective,
            fusion=s.fusion if effective == "hybrid" else effective,
            weights={
                "note": ranked.weights.note if ranked.notes_used else 0.0,
                "bm25": ranked.weights.bm25,
                "vector": ranked.weights.vector,
            },
            rrf_k=s.rrf_k,
            candidates=depth,
            column_weights=s.column_weights,
            note_column_weights=s.note_column_weights,
            degraded=tuple(degraded),
            rows=tuple(_explain_rows(ranked)) if explain else (),
            results=results,
            omitted=len(top) - len(results),
            timings_ms=timings,
        )

    def _plan_and_rank(
        self,
        conn: Connection,
        query: str,
        match: str | None,
        requested: SearchMode,
        depth: int,
        limit: int,
        filters: SearchFilters | None,
        degraded: list[str],
        timings: dict[str, float],
        side: Connection | None,
        explain: bool = False,
    ) -> tuple[SearchMode, Ranked]:
        """Choose the lists this search can use, embed the query and rank (worker thread)."""
        s = self._settings
        want_vec = requested in ("hybrid", "vector")
        want_bm25 = requested in ("hybrid", "bm25")
        use_bm25 = want_bm25 and self._fts_ok
        # Asked only when vectors may be used: the check loads the model (~30 ms for a
        # one-shot keyword search that never embeds anything).
        problem = self._vector_problem(conn) if want_vec or not use_bm25 else None
        use_vec = want_vec and problem is None
        if problem is not None and problem not in degraded:
            degraded.append(problem)
        if want_vec and not use_vec and not use_bm25 and self._fts_ok:
            use_bm25 = True  # vector search asked for but impossible: keyword instead
        if want_bm25 and not use_bm25 and not use_vec and problem is None:
            use_vec = True  # keyword search asked for but no FTS5: vectors instead
        if not use_vec and not use_bm25:
            raise RetrievalError(
                "no search method is available: " + "; ".join(degraded),
                hint="check `signaldesk doctor`, then run `signaldesk index --full`",
            )

        qvec: npt.NDArray[np.float32] | None = None
        if use_vec:
            t0 = time.perf_counter()
            try:
                qvec = self._vectors.embed(query)
            except ModelError as exc:
                if not use_bm25 and not self._fts_ok:
                    raise
                logger.warning("query embedding failed, keyword search only: %s", exc)
                degraded.append(f"{exc.message}: keyword search only")
                use_vec, use_bm25 = False, True
            timings["embed"] = (time.perf_counter() - t0) * 1000
            if qvec is not None and not qvec.any():
                # No token of the query is in the model's vocabulary (only punctuation,
                # say): its zero vector is as far from every chunk as from any other, and
                # the vector list would be notes in storage order, each scored 0.
                # Such a query finds nothing (SPEC 7: punctuation must not raise).
                qvec = None
        effective: SearchMode = (
            "hybrid" if use_vec and use_bm25 else "vector" if use_vec else "bm25"
        )
        request = RankRequest(
            mode=effective,
            match=match if use_bm25 else None,
            key=name_key(query),
            qvec=qvec,
            depth=depth,
            limit=limit,
            filters=filters,
            settings=s,
            query=query,
            explain=explain,
        )
        return effective, self._rank(conn, request, timings, side)

    def _vector_problem(self, conn: Connection) -> str | None:
        """Why the vector list cannot be used right now (``None``: it can)."""
        return self._vectors.problem(conn)

    def _rank(
        self,
        conn: Connection,
        request: RankRequest,
        timings: dict[str, float],
        side: Connection | None,
    ) -> Ranked:
        """The lists and the fusion of one search, on ``conn``'s snapshot (worker thread)."""
        token = cache_token(conn)
        keys = self._keys.index_at(conn, token)
        counts = self._counts.for_commit(token)
        matrix_for = self._vectors.current_matrix
        if side is None or request.match is None or token is None:
            return rank(conn, request, matrix_for, timings, keys, counts)
        with _same_commit(side, token) as beside:
            return rank(conn, request, matrix_for, timings, keys, counts, beside)

    def _linked_in(
        self, conn: Connection, results: list[SearchResult], filters: SearchFilters | None
    ) -> list[tuple[SearchResult, str]]:
        """The notes ``results`` link to, each with the path that links to it."""
        limit = self._settings.context_links
        targets = link_targets(((r.path, r.text) for r in results), limit) if limit else []
        if not targets:
            return []
        shown = {r.path for r in results}
        links = resolve_links(conn, targets, exclude_paths=shown, filters=filters)
        rows = search_legs.chunk_rows(conn, [link.chunk_id for link in links])
        return [
            (self._result(Candidate(link.chunk_id), rows[link.chunk_id], row.text), link.source)
            for link in links
            if (row := rows.get(link.chunk_id)) is not None
        ]

    @staticmethod
    def _result(
        c: Candidate, row: ChunkRow, text: str, note: NoteCandidate | None = None
    ) -> SearchResult:
        return SearchResult(
            path=row.path,
            section=row.section,
            text=text,
            score=note.score if note is not None else c.score,
            title=row.title,
            heading_path=row.heading_path,
            bm25_rank=c.bm25_rank,
            vector_rank=c.vector_rank,
            note_rank=note.note_rank if note is not None else None,
            start_line=row.start_line,
            note_type=row.note_type,
            domain=row.domain,
            tags=row.tags,
            updated=row.updated,
            vault=row.vault,
        )


def context_excerpts(
    topic: str, results: list[SearchResult], linked: list[tuple[SearchResult, str]]
) -> ContextExcerpts:
    """A context block's excerpts: the results, then the notes they link to."""
    return ContextExcerpts(
        topic,
        (
            *(Excerpt(r) for r in results),
            *(Excerpt(r, linked_from=source) for r, source in linked),
        ),
    )


@contextmanager
def _same_commit(side: Connection, token: str) -> Iterator[Connection | None]:
    """``side`` in a read transaction if it sees the commit ``token`` names, else ``None``.

    Every write bumps the generation and its id (``_writer.transaction``), so equal
    tokens mean the same commit; a write between the two snapshots leaves the
    search on one connection.
    """
    side.execute("BEGIN")
    try:
        yield side if cache_token(side) == token else None
    finally:
        side.execute("COMMIT")


def _explain_rows(ranked: Ranked) -> list[ExplainRow]:
    """One row per candidate note (fused order), shown by its best chunk."""
    rows = []
    for note in ranked.notes:
        key = ranked.keys[note.best_chunk]
        rows.append(
            ExplainRow(
                path=key.path,
                section=key.section,
                ordinal=key.ordinal,
                chunk_id=note.best_chunk,
                score=note.score,
                bm25_rank=note.chunk_rank,
                bm25_score=note.chunk_score,
                vector_rank=note.vector_rank,
                vector_score=note.vector_score,
                note_rank=note.note_rank,
                note_score=note.note_score,
                exact=note.exact,
                recency=note.recency,
            )
        )
    return rows
