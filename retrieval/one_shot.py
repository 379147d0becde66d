"""Searching in the calling thread, for a process that searches and exits (the CLI).

Trigger: `signaldesk search QUERY --json` runs from editor hooks and agents before a
tool call, so its whole process is the latency they pay; the async
:class:`~retrieval.retriever.Retriever` costs such a process ~40 ms of asyncio and an
event loop before any work, and a thread hop per search (issue 15). Why it can go: a
process that runs one search (or one batch, one after the other) has nothing to overlap.
Outcome: the retriever's own search (:class:`~retrieval.search_core.SearchCore`) on one
connection to the live index generation, leased for the life of the block, with no
event loop; the same results, the same errors.

A batch sees one generation: a full rebuild published during it is searched by the
next process (the lease keeps the old file until the block ends).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from signaldesk.retrieval._connections import lease_and_check
from signaldesk.retrieval.budget import BudgetFit
from signaldesk.retrieval.context_block import ContextExcerpts
from signaldesk.retrieval.embedder import Embedder
from signaldesk.retrieval.explanation import SearchExplanation
from signaldesk.retrieval.records import SearchFilters, SearchMode
from signaldesk.retrieval.search_core import (
    Searchable,
    SearchCore,
    SearchRequest,
    context_excerpts,
)
from signaldesk.retrieval.store import Connection, index_base_path

if TYPE_CHECKING:
    from signaldesk.retrieval.settings import IndexSettings, SearchSettings

__all__ = ["OneShot", "open_one_shot"]


class OneShot(SearchCore):
    """Searches on one connection, in this thread. Create with :func:`open_one_shot`."""

    def __init__(
        self,
        conn: Connection,
        path: Path,
        index: IndexSettings,
        search: SearchSettings,
        embedder: Embedder | None,
        able: Searchable,
    ) -> None:
        super().__init__(index, search, embedder, able)
        self._conn = conn
        self._path = path

    def explain(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        max_tokens: int | None = None,
        fit: BudgetFit = "drop",
        explain: bool = True,
    ) -> SearchExplanation:
        """As :meth:`Retriever.explain <retrieval.retriever.Retriever.explain>`; with
        ``explain=False`` the candidate rows are not built (a plain search)."""
        return self._snapshot(
            self._conn,
            self._path,
            lambda conn: self.execute_in(
                conn, SearchRequest(query, limit, filters, mode, max_tokens, fit), explain=explain
            ),
        )

    def context(self, topic: str, *, filters: SearchFilters | None = None) -> ContextExcerpts:
        """As :meth:`Retriever.context <retrieval.retriever.Retriever.context>`."""
        results = list(
            self.explain(
                topic,
                limit=self._settings.context_results,
                filters=filters,
                max_tokens=10**9,
                explain=False,
            ).results
        )
        linked = self._snapshot(
            self._conn, self._path, lambda conn: self._linked_in(conn, results, filters)
        )
        return context_excerpts(topic, results, linked)


@contextmanager
def open_one_shot(
    vault: Path,
    index: IndexSettings,
    search: SearchSettings,
    embedder: Embedder | None,
) -> Iterator[OneShot]:
    """The index of ``vault`` opened for searching in this thread until the block ends.

    :raises IndexUnavailableError: there is no index (hint: `signaldesk index`), or it
        cannot be read or searched.
    """
    generation, conn = lease_and_check(index_base_path(vault, index), OneShot.check_tables)
    try:
        able = OneShot.checked(conn, embedder)
        yield OneShot(conn, generation.path, index, search, embedder, able)
    finally:
        conn.close()
        generation.lease.release()
