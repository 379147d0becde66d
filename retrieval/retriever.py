"""Hybrid search over the index: BM25 (FTS5) and vector KNN, fused, filtered, budgeted.

The retriever only reads. It keeps a small pool of its own SQLite connections
(the database is in WAL mode, so reads go on while the indexer writes) and
runs each search's SQL in a worker thread inside one read transaction. Many
searches may run concurrently (the MCP server serves several requests at once):
connections are never shared between two searches at the same time, the query
embedding is serialised by a lock, and the in-memory vector matrix is an
immutable object swapped under a lock when the index's ``generation`` changes.

Ranking design and measurements: docs/ranking.md.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, get_args

import anyio
import anyio.to_thread
import numpy as np
import numpy.typing as npt

from signaldesk.retrieval import search_legs
from signaldesk.retrieval._connections import NO_INDEX_HINT, ReaderPool
from signaldesk.retrieval.budget import BudgetFit, fit_all, take
from signaldesk.retrieval.context_block import ContextExcerpts, Excerpt
from signaldesk.retrieval.embedder import Embedder
from signaldesk.retrieval.errors import (
    IndexUnavailableError,
    ModelError,
    QueryError,
    RetrievalError,
)
from signaldesk.retrieval.explanation import ExplainRow, SearchExplanation
from signaldesk.retrieval.filters import filters_sql
from signaldesk.retrieval.fts_query import build_match
from signaldesk.retrieval.fts_text import name_key
from signaldesk.retrieval.fusion import Candidate
from signaldesk.retrieval.links import link_targets, resolve_links
from signaldesk.retrieval.note_rank import NoteCandidate
from signaldesk.retrieval.query_vectors import QueryVectors
from signaldesk.retrieval.ranking import NOTES_NOT_READY, Ranked, RankRequest, rank
from signaldesk.retrieval.records import (
    IndexStatus,
    NoteInfo,
    SearchFilters,
    SearchMode,
    SearchPage,
    SearchResult,
)
from signaldesk.retrieval.search_legs import ChunkRow
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.retrieval.status import db_bytes, read_status, search_modes
from signaldesk.retrieval.store import (
    Connection,
    index_base_path,
    is_corruption_error,
    sqlite_module,
)

__all__ = ["Retriever"]

logger = logging.getLogger(__name__)

_POOL_SIZE = 4
_MODES: tuple[str, ...] = get_args(SearchMode)
_NO_INDEX_HINT = NO_INDEX_HINT
_DAMAGED_HINT = "run `signaldesk index` to rebuild it from the vault (the notes are not affected)"
T = TypeVar("T")


class Retriever:
    """Read-only hybrid search over one vault's index. Create with :meth:`open`."""

    def __init__(
        self,
        pool: ReaderPool,
        index: IndexSettings,
        search: SearchSettings,
        embedder: Embedder | None,
        *,
        fts_ok: bool,
        vec_ext_ok: bool,
        static_degraded: tuple[str, ...],
    ) -> None:
        self._pool = pool
        self._index = index
        self._settings = search
        self._vectors = QueryVectors(embedder, available=vec_ext_ok)
        self._fts_ok = fts_ok
        self._static_degraded = static_degraded
        self._closed = False

    # -- lifecycle ---------------------------------------------------------

    @classmethod
    async def open(
        cls,
        vault: Path,
        index: IndexSettings,
        search: SearchSettings,
        embedder: Embedder | None,
    ) -> Retriever:
        """Open the index of ``vault`` for searching.

        :raises IndexUnavailableError: there is no index (hint: `signaldesk index`), or
            it cannot be read.
        """
        pool = await ReaderPool.open(
            index_base_path(vault, index), size=_POOL_SIZE, check=cls._check_tables
        )
        try:
            async with pool.connection() as conn:
                fts_ok, vec_ext_ok, degraded = await anyio.to_thread.run_sync(cls._probe, conn)
        except BaseException:
            await pool.aclose()
            raise
        if embedder is None:
            degraded = (*degraded, "no embedding model: keyword (BM25) search only")
        if not fts_ok and (embedder is None or not vec_ext_ok):
            await pool.aclose()
            raise IndexUnavailableError(
                "the index can be searched neither by keyword nor by vector: "
                + "; ".join(degraded),
                hint="check `signaldesk doctor`, then run `signaldesk index --full`",
            )
        retriever = cls(
            pool,
            index,
            search,
            embedder,
            fts_ok=fts_ok,
            vec_ext_ok=vec_ext_ok,
            static_degraded=degraded,
        )
        pool.on_switch = retriever._on_new_generation
        return retriever

    @staticmethod
    def _check_tables(conn: Connection) -> None:
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
                f"the index cannot be read: {exc}", hint=_DAMAGED_HINT
            ) from exc
        if not {"notes", "chunks", "meta"} <= tables:
            raise IndexUnavailableError("the index is empty", hint=_NO_INDEX_HINT)

    def _on_new_generation(self, conn: Connection) -> None:
        """A full rebuild was published: what the new file can do may differ."""
        fts_ok, vec_ext_ok, degraded = self._probe(conn)
        if self._vectors.embedder is None:
            degraded = (*degraded, "no embedding model: keyword (BM25) search only")
        self._fts_ok, self._static_degraded = fts_ok, degraded
        self._vectors.new_generation(available=vec_ext_ok)

    @staticmethod
    def _probe(conn: Connection) -> tuple[bool, bool, tuple[str, ...]]:
        modes = search_modes(conn)
        return modes.keyword, modes.vector, modes.degraded

    async def aclose(self) -> None:
        """Close every connection. Searches after this raise :class:`RetrievalError`."""
        self._closed = True
        await self._pool.aclose()

    async def __aenter__(self) -> Retriever:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _run(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn(conn)`` in a worker thread inside one read transaction."""

        def in_snapshot(conn: Connection) -> T:
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
                        f"the index at {self._pool.path} is incomplete: {exc}",
                        hint=_NO_INDEX_HINT,
                    ) from exc
                if is_corruption_error(exc):
                    raise IndexUnavailableError(
                        f"the index at {self._pool.path} is damaged: {exc}", hint=_DAMAGED_HINT
                    ) from exc
                raise RetrievalError(f"index query failed: {exc}") from exc

        async with self._pool.connection() as conn:
            return await anyio.to_thread.run_sync(in_snapshot, conn)

    async def warm_up(self) -> None:
        """Load the model, open the database, load the vector matrix and run one query."""
        await self.search("warm up", limit=1)
        matrix = self._vectors.matrix
        if matrix is not None:
            # A server searches many times: build the float32 matrix now rather
            # than on its second query (a one-shot search never needs it).
            await anyio.to_thread.run_sync(lambda: matrix.matrix)

    # -- search ------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        max_tokens: int | None = None,
        fit: BudgetFit = "drop",
    ) -> list[SearchResult]:
        """The best notes for ``query``, each shown by its best chunk(s), cut to the token budget.

        :param fit: ``"drop"``: results are kept in rank order while they fit
            ``max_tokens`` (the first that does not is cut and ends the list);
            ``"trim"``: every result up to ``limit`` is kept and their texts are
            shortened to share the budget (what a person asking for ``--limit 30``
            wants).
        :raises QueryError: the query is empty, or the mode unknown.
        :raises IndexUnavailableError: the index is gone or unreadable.
        """
        page = await self.search_page(
            query, limit=limit, filters=filters, mode=mode, max_tokens=max_tokens, fit=fit
        )
        return list(page.results)

    async def search_page(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        max_tokens: int | None = None,
        fit: BudgetFit = "drop",
    ) -> SearchPage:
        """Like :meth:`search`, also saying how many results the budget left out."""
        exp = await self._execute(query, limit, filters, mode, max_tokens, fit, explain=False)
        return SearchPage(results=exp.results, omitted=exp.omitted, degraded=exp.degraded)

    async def explain(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        max_tokens: int | None = None,
        fit: BudgetFit = "drop",
    ) -> SearchExplanation:
        """Like :meth:`search`, with each candidate note's ranks and raw scores in every
        list, the MATCH expression, the weights, the effective mode and timings."""
        return await self._execute(query, limit, filters, mode, max_tokens, fit, explain=True)

    async def _execute(
        self,
        query: str,
        limit: int | None,
        filters: SearchFilters | None,
        mode: SearchMode | None,
        max_tokens: int | None,
        fit: BudgetFit,
        *,
        explain: bool,
    ) -> SearchExplanation:
        s = self._settings
        requested: SearchMode = mode or s.mode
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

        def in_snapshot(conn: Connection) -> tuple[SearchMode, Ranked]:
            # One worker hop per search: the model check, the query embedding and
            # the lists all run here (each hop cost ~0.3 ms against ~0.07 ms of
            # encoding, issue 15).
            return self._plan_and_rank(
                conn, query, match, requested, depth, limit, filters, degraded, timings
            )

        effective, ranked = await self._run(in_snapshot)
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
    ) -> tuple[SearchMode, Ranked]:
        """Choose the lists this search can use, embed the query and rank (worker thread)."""
        s = self._settings
        problem = self._vector_problem(conn)
        want_vec = requested in ("hybrid", "vector")
        want_bm25 = requested in ("hybrid", "bm25")
        use_vec = want_vec and problem is None
        use_bm25 = want_bm25 and self._fts_ok
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
        )
        return effective, self._rank(conn, request, timings)

    def _vector_problem(self, conn: Connection) -> str | None:
        """Why the vector list cannot be used right now (``None``: it can)."""
        return self._vectors.problem(conn)

    def _rank(self, conn: Connection, request: RankRequest, timings: dict[str, float]) -> Ranked:
        """The lists and the fusion of one search, on ``conn``'s snapshot (worker thread)."""
        return rank(conn, request, self._vectors.current_matrix, timings)

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

    # -- context, listing, status -------------------------------------------

    async def context(self, topic: str, *, filters: SearchFilters | None = None) -> ContextExcerpts:
        """The excerpts about ``topic``: the best results, then the openings of notes
        they link to. :func:`~retrieval.context_block.render_context` makes the
        markdown block, within a token budget."""
        results = await self.search(
            topic,
            limit=self._settings.context_results,
            filters=filters,
            max_tokens=10**9,
        )
        linked = await self._linked(results, filters)
        return ContextExcerpts(
            topic,
            (
                *(Excerpt(r) for r in results),
                *(Excerpt(r, linked_from=source) for r, source in linked),
            ),
        )

    async def _linked(
        self, results: list[SearchResult], filters: SearchFilters | None
    ) -> list[tuple[SearchResult, str]]:
        """The notes the results link to, each with the path that links to it."""
        limit = self._settings.context_links
        targets = link_targets(((r.path, r.text) for r in results), limit) if limit else []
        if not targets:
            return []
        shown = {r.path for r in results}

        def run(conn: Connection) -> list[tuple[SearchResult, str]]:
            links = resolve_links(conn, targets, exclude_paths=shown, filters=filters)
            rows = search_legs.chunk_rows(conn, [link.chunk_id for link in links])
            return [
                (self._result(Candidate(link.chunk_id), rows[link.chunk_id], row.text), link.source)
                for link in links
                if (row := rows.get(link.chunk_id)) is not None
            ]

        return await self._run(run)

    async def list_notes(
        self, filters: SearchFilters | None = None, *, limit: int = 50
    ) -> list[NoteInfo]:
        """Indexed notes passing ``filters``, most recently updated first."""
        where, params = filters_sql(filters)
        sql = (
            "SELECT n.path, n.title, n.type, n.domain, n.tags, n.status, n.created, n.updated, "
            "n.mtime_ns, n.frontmatter FROM notes n "
            f"WHERE {where} ORDER BY COALESCE(n.updated, n.created, '') DESC, n.path LIMIT ?"
        )

        def run(conn: Connection) -> list[NoteInfo]:
            import json

            out = []
            for r in conn.execute(sql, (*params, max(1, int(limit)))):
                try:
                    fm = json.loads(r[9] or "{}")
                except ValueError:
                    fm = {}
                out.append(
                    NoteInfo(
                        path=r[0],
                        title=r[1],
                        note_type=r[2],
                        domain=r[3],
                        tags=search_legs._tags(r[4]),
                        status=r[5],
                        created=r[6],
                        updated=r[7],
                        mtime=int(r[8]) / 1e9,
                        frontmatter=fm if isinstance(fm, dict) else {},
                    )
                )
            return out

        return await self._run(run)

    async def status(self) -> IndexStatus:
        """Counts, model, last run and any degraded mode of the index."""

        def run(conn: Connection) -> IndexStatus:
            status = read_status(conn, self._pool.path, db_bytes(self._pool.path))
            # What this process adds: no model loaded, or vectors from another model.
            degraded = list(status.degraded)
            for problem in (*self._static_degraded, self._vectors.problem(conn)):
                if problem is not None and problem not in degraded:
                    degraded.append(problem)
            return dataclasses.replace(status, degraded=tuple(degraded))

        return await self._run(run)


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
