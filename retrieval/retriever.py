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
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from signaldesk.retrieval import search_legs
from signaldesk.retrieval._connections import ReaderPool
from signaldesk.retrieval.budget import BudgetFit
from signaldesk.retrieval.context_block import ContextExcerpts
from signaldesk.retrieval.embedder import Embedder
from signaldesk.retrieval.explanation import SearchExplanation
from signaldesk.retrieval.filters import filters_sql
from signaldesk.retrieval.records import (
    IndexStatus,
    NoteInfo,
    SearchFilters,
    SearchMode,
    SearchPage,
    SearchResult,
)
from signaldesk.retrieval.search_core import (
    Searchable,
    SearchCore,
    SearchRequest,
    context_excerpts,
)
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.retrieval.status import db_bytes, read_status
from signaldesk.retrieval.store import (
    Connection,
    index_base_path,
)

__all__ = ["Retriever"]

logger = logging.getLogger(__name__)

_POOL_SIZE = 4
T = TypeVar("T")


class Retriever(SearchCore):
    """Read-only hybrid search over one vault's index. Create with :meth:`open`."""

    def __init__(
        self,
        pool: ReaderPool,
        index: IndexSettings,
        search: SearchSettings,
        embedder: Embedder | None,
        able: Searchable,
    ) -> None:
        super().__init__(index, search, embedder, able)
        self._pool = pool
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
            index_base_path(vault, index), size=_POOL_SIZE, check=cls.check_tables
        )
        try:
            async with pool.connection() as conn:
                able = await anyio.to_thread.run_sync(cls.checked, conn, embedder)
        except BaseException:
            await pool.aclose()
            raise
        retriever = cls(pool, index, search, embedder, able)
        pool.on_switch = retriever._on_new_generation
        return retriever

    def _on_new_generation(self, conn: Connection) -> None:
        """A full rebuild was published: what the new file can do may differ."""
        able = self._searchable(conn, self._vectors.embedder)
        self._fts_ok, self._static_degraded = able.keyword, able.degraded
        self._vectors.new_generation(available=able.vector)

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
        async with self._pool.connection() as conn:
            return await anyio.to_thread.run_sync(self._snapshot, conn, self._pool.path, fn)

    async def warm_up(self) -> None:
        """Load the model, open the database, load the vector matrix and run one query."""
        await self.search("warm up", limit=1)
        await self._warm_store()

    async def _warm_store(self) -> None:
        """What a server reads once that a one-shot search never needs."""
        embedder = self._vectors.embedder
        if embedder is not None:
            # The first text a process embeds alone gets a tokenizer cut down to it
            # (static_tokenizer.py: a one-shot search's query); a server embeds many, so
            # a batch builds the whole tokenizer now and not in its first request.
            await anyio.to_thread.run_sync(embedder.encode, ["warm up", "warm up"])
        # The chunks' positions (chunk_keys.py), which a search reads from its second on.
        await self._run(lambda conn: self._keys.index_for(conn, load=True))
        await anyio.to_thread.run_sync(self._vectors.warm_matrix)

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
        request = SearchRequest(query, limit, filters, mode, max_tokens, fit)
        exp = await self._execute(request, explain=False)
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
        request = SearchRequest(query, limit, filters, mode, max_tokens, fit)
        return await self._execute(request, explain=True)

    async def _execute(self, request: SearchRequest, *, explain: bool) -> SearchExplanation:
        return await self._run_beside(
            lambda conn, side: self.execute_in(conn, request, explain=explain, side=side)
        )

    async def _run_beside(self, fn: Callable[[Any, Any], T]) -> T:
        """Like :meth:`_run`, with a second connection to the same file (``fn(conn,
        side)``): a search reads its note lists on it beside the chunk list."""
        async with self._pool.connections(2) as (conn, side):
            return await anyio.to_thread.run_sync(
                self._snapshot, conn, self._pool.path, lambda conn: fn(conn, side)
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
        return context_excerpts(topic, results, await self._linked(results, filters))

    async def _linked(
        self, results: list[SearchResult], filters: SearchFilters | None
    ) -> list[tuple[SearchResult, str]]:
        """The notes the results link to, each with the path that links to it."""
        if not self._settings.context_links:
            return []
        return await self._run(lambda conn: self._linked_in(conn, results, filters))

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
                        tags=search_legs.string_tuple(r[4]),
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
