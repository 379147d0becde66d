"""Retrieval: chunking, credential scrubbing, embedding, the index and hybrid search.

Knows nothing about the pipeline, routing or how notes were created. Every name
loads on first use (see :mod:`signaldesk.lazy`), so importing one module of the layer
(its settings, its errors) does not pull in numpy, pydantic or the model.
"""

from __future__ import annotations

import typing

from signaldesk.lazy import lazy_attributes as _lazy_attributes

if typing.TYPE_CHECKING:
    from signaldesk.frontmatter import ParsedNote, parse_note
    from signaldesk.retrieval.backends import index_status_of, make_indexer, open_retriever
    from signaldesk.retrieval.chunker import Chunk, ChunkedNote, chunk_note
    from signaldesk.retrieval.cleaning import embedding_input, readable_text
    from signaldesk.retrieval.embedder import (
        BUNDLED_MODEL_NAME,
        Embedder,
        LazyEmbedder,
        bundled_model_path,
        load_embedder,
    )
    from signaldesk.retrieval.errors import (
        IndexLockedError,
        IndexUnavailableError,
        ModelError,
        QueryError,
        RetrievalError,
        StoreError,
    )
    from signaldesk.retrieval.explanation import ExplainRow, SearchExplanation
    from signaldesk.retrieval.ignore import (
        INDEXIGNORE_FILE,
        IndexIgnoreError,
        LiveVaultFilter,
        VaultFilter,
        excluded_by_frontmatter,
        iter_vault_notes,
    )
    from signaldesk.retrieval.index_progress import IndexProgress
    from signaldesk.retrieval.indexer import Indexer
    from signaldesk.retrieval.pg_indexer import PgIndexer
    from signaldesk.retrieval.pg_retriever import PgRetriever
    from signaldesk.retrieval.records import (
        IndexReport,
        IndexStatus,
        NoteInfo,
        SearchFilters,
        SearchMode,
        SearchPage,
        SearchResult,
    )
    from signaldesk.retrieval.retriever import Retriever
    from signaldesk.retrieval.scrub_logging import ScrubbingFilter
    from signaldesk.retrieval.scrubber import (
        PATTERN_NAMES,
        ScrubResult,
        scrub,
        scrub_text,
        scrub_value,
    )
    from signaldesk.retrieval.settings import IndexSettings, SearchSettings
    from signaldesk.retrieval.status import index_status
    from signaldesk.retrieval.store import index_db_path

__all__ = [
    "BUNDLED_MODEL_NAME",
    "INDEXIGNORE_FILE",
    "PATTERN_NAMES",
    "Chunk",
    "ChunkedNote",
    "Embedder",
    "ExplainRow",
    "IndexIgnoreError",
    "IndexLockedError",
    "IndexProgress",
    "IndexReport",
    "IndexSettings",
    "IndexStatus",
    "IndexUnavailableError",
    "Indexer",
    "LazyEmbedder",
    "LiveVaultFilter",
    "ModelError",
    "NoteInfo",
    "ParsedNote",
    "PgIndexer",
    "PgRetriever",
    "QueryError",
    "RetrievalError",
    "Retriever",
    "ScrubResult",
    "ScrubbingFilter",
    "SearchExplanation",
    "SearchFilters",
    "SearchMode",
    "SearchPage",
    "SearchResult",
    "SearchSettings",
    "StoreError",
    "VaultFilter",
    "bundled_model_path",
    "chunk_note",
    "embedding_input",
    "excluded_by_frontmatter",
    "index_db_path",
    "index_status",
    "index_status_of",
    "iter_vault_notes",
    "load_embedder",
    "make_indexer",
    "open_retriever",
    "parse_note",
    "readable_text",
    "scrub",
    "scrub_text",
    "scrub_value",
]

_EXPORTS = {
    **{
        name: "signaldesk.retrieval.errors"
        for name in (
            "IndexLockedError",
            "IndexUnavailableError",
            "ModelError",
            "QueryError",
            "RetrievalError",
            "StoreError",
        )
    },
    **{
        name: "signaldesk.retrieval.records"
        for name in (
            "IndexReport",
            "IndexStatus",
            "NoteInfo",
            "SearchFilters",
            "SearchMode",
            "SearchPage",
            "SearchResult",
        )
    },
    "IndexSettings": "signaldesk.retrieval.settings",
    "SearchSettings": "signaldesk.retrieval.settings",
    "Chunk": "signaldesk.retrieval.chunker",
    "ChunkedNote": "signaldesk.retrieval.chunker",
    "chunk_note": "signaldesk.retrieval.chunker",
    "embedding_input": "signaldesk.retrieval.cleaning",
    "readable_text": "signaldesk.retrieval.cleaning",
    "BUNDLED_MODEL_NAME": "signaldesk.retrieval.embedder",
    "Embedder": "signaldesk.retrieval.embedder",
    "LazyEmbedder": "signaldesk.retrieval.embedder",
    "bundled_model_path": "signaldesk.retrieval.embedder",
    "load_embedder": "signaldesk.retrieval.embedder",
    "ParsedNote": "signaldesk.frontmatter",
    "parse_note": "signaldesk.frontmatter",
    "INDEXIGNORE_FILE": "signaldesk.retrieval.ignore",
    "IndexIgnoreError": "signaldesk.retrieval.ignore",
    "LiveVaultFilter": "signaldesk.retrieval.ignore",
    "VaultFilter": "signaldesk.retrieval.ignore",
    "excluded_by_frontmatter": "signaldesk.retrieval.ignore",
    "iter_vault_notes": "signaldesk.retrieval.ignore",
    "ExplainRow": "signaldesk.retrieval.explanation",
    "SearchExplanation": "signaldesk.retrieval.explanation",
    "IndexProgress": "signaldesk.retrieval.index_progress",
    "Indexer": "signaldesk.retrieval.indexer",
    "PgIndexer": "signaldesk.retrieval.pg_indexer",
    "PgRetriever": "signaldesk.retrieval.pg_retriever",
    "index_status_of": "signaldesk.retrieval.backends",
    "make_indexer": "signaldesk.retrieval.backends",
    "open_retriever": "signaldesk.retrieval.backends",
    "Retriever": "signaldesk.retrieval.retriever",
    "PATTERN_NAMES": "signaldesk.retrieval.scrubber",
    "ScrubResult": "signaldesk.retrieval.scrubber",
    "scrub": "signaldesk.retrieval.scrubber",
    "scrub_text": "signaldesk.retrieval.scrubber",
    "scrub_value": "signaldesk.retrieval.scrubber",
    "ScrubbingFilter": "signaldesk.retrieval.scrub_logging",
    "index_status": "signaldesk.retrieval.status",
    "index_db_path": "signaldesk.retrieval.store",
}
__getattr__ = _lazy_attributes(__name__, _EXPORTS)
