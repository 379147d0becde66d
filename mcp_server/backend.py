"""What the server needs from the retriever, and a slot that holds it.

The server is built from a retriever it is given (dependency injection); it
never opens the index itself. When the index does not exist yet at start-up,
the server still starts — every index-backed tool then answers with a
structured "run `signaldesk index`" error — and the slot retries opening the
index on later calls, so the client need not be restarted after indexing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

import anyio

from signaldesk.retrieval.context_block import ContextExcerpts
from signaldesk.retrieval.errors import IndexUnavailableError
from signaldesk.retrieval.records import (
    IndexStatus,
    NoteInfo,
    SearchFilters,
    SearchMode,
    SearchPage,
    SearchResult,
)

__all__ = ["RetrieverLike", "RetrieverOpener", "RetrieverSlot"]

_log = logging.getLogger(__name__)


class RetrieverLike(Protocol):
    """The read-only surface of :class:`retrieval.retriever.Retriever` the tools use."""

    async def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        max_tokens: int | None = None,
    ) -> list[SearchResult]: ...

    async def search_page(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        max_tokens: int | None = None,
    ) -> SearchPage: ...

    async def context(
        self, topic: str, *, filters: SearchFilters | None = None
    ) -> ContextExcerpts: ...

    async def list_notes(
        self, filters: SearchFilters | None = None, *, limit: int = 50
    ) -> list[NoteInfo]: ...

    async def status(self) -> IndexStatus: ...

    async def warm_up(self) -> None: ...

    async def aclose(self) -> None: ...


RetrieverOpener = Callable[[], Awaitable[RetrieverLike]]


class RetrieverSlot:
    """Holds the retriever, or the means to open it once the index exists.

    :param retriever: an open retriever, or ``None`` when the index was missing.
    :param opener: opens (and warms up) a retriever; used when ``retriever`` is ``None``.
    :param unavailable: the error to report while there is no retriever.
    """

    def __init__(
        self,
        retriever: RetrieverLike | None,
        *,
        opener: RetrieverOpener | None = None,
        unavailable: IndexUnavailableError | None = None,
    ) -> None:
        self._retriever = retriever
        self._opener = opener
        self._unavailable = unavailable
        self._lock = anyio.Lock()

    @property
    def ready(self) -> bool:
        """Whether a retriever is open."""
        return self._retriever is not None

    async def get(self) -> RetrieverLike:
        """The open retriever.

        :raises IndexUnavailableError: there is no index yet (hint: `signaldesk index`).
        """
        if self._retriever is not None:
            return self._retriever
        async with self._lock:
            if self._retriever is None and self._opener is not None:
                try:
                    self._retriever = await self._opener()
                    _log.info("index found: search is available")
                except IndexUnavailableError as exc:
                    self._unavailable = exc
        if self._retriever is None:
            known = self._unavailable
            raise IndexUnavailableError(
                known.message if known else "there is no index yet",
                hint=known.hint if known else "run `signaldesk index` to build it",
            )
        return self._retriever

    async def aclose(self) -> None:
        """Close the retriever if one was opened."""
        retriever, self._retriever = self._retriever, None
        if retriever is not None:
            await retriever.aclose()
