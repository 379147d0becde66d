"""The configured index backend (``[index] backend``): SQLite or the PostgreSQL team database.

The one place that chooses: the CLI, intake, triage and the service build their indexer,
retriever and status through these, so every path indexes into and searches the same store.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from signaldesk.postgres import PostgresSettings
from signaldesk.retrieval.records import IndexStatus
from signaldesk.retrieval.settings import IndexSettings, SearchSettings

if TYPE_CHECKING:
    # A one-shot search imports neither the indexer (the scrubber's rules, the chunker)
    # nor more than it searches with: each function imports what it builds.
    from signaldesk.retrieval.embedder import Embedder
    from signaldesk.retrieval.indexer import Indexer
    from signaldesk.retrieval.retriever import Retriever

__all__ = ["index_status_of", "make_indexer", "open_retriever"]


def make_indexer(
    vault: Path,
    settings: IndexSettings,
    embedder: Embedder,
    *,
    vault_name: str,
    postgres: PostgresSettings,
    **options: Any,
) -> Indexer:
    """The indexer of ``vault`` for the configured backend.

    :param options: :class:`~retrieval.indexer.Indexer` options (``verify`` is SQLite's
        own page check and is dropped for PostgreSQL).
    """
    if settings.backend == "postgres":
        from signaldesk.retrieval.pg_indexer import PgIndexer

        options.pop("verify", None)
        return PgIndexer(vault, vault_name, settings, postgres, embedder, **options)
    from signaldesk.retrieval.indexer import Indexer

    return Indexer(vault, settings, embedder, **options)


async def open_retriever(
    vault: Path,
    index: IndexSettings,
    search: SearchSettings,
    embedder: Embedder | None,
    *,
    postgres: PostgresSettings,
    vaults: frozenset[str] | None = None,
) -> Retriever:
    """A retriever over the configured backend (PostgreSQL: confined to ``vaults``)."""
    if index.backend == "postgres":
        from signaldesk.retrieval.pg_retriever import PgRetriever

        return await PgRetriever.connect(postgres, index, search, embedder, vaults=vaults)
    from signaldesk.retrieval.retriever import Retriever

    return await Retriever.open(vault, index, search, embedder)


def index_status_of(
    vault: Path, settings: IndexSettings, postgres: PostgresSettings
) -> IndexStatus:
    """:func:`~retrieval.status.index_status` for the configured backend (never raises for
    an index that is missing or unreadable; PostgreSQL: every vault in the database)."""
    if settings.backend == "postgres":
        from signaldesk.retrieval.pg_status import pg_index_status

        return pg_index_status(postgres)
    from signaldesk.retrieval.status import index_status

    return index_status(vault, settings)
