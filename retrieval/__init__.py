"""Retrieval: chunking, credential scrubbing, embedding, the index and hybrid search.

Knows nothing about the pipeline, routing or how notes were created. Records and
settings are imported eagerly; everything else loads on first use (see
:mod:`signaldesk.lazy`), so importing the settings does not pull in numpy or the model.
"""

from __future__ import annotations

import typing

from retrieval.errors import (
    IndexLockedError,
    IndexUnavailableError,
    ModelError,
    QueryError,
    RetrievalError,
    StoreError,
)
from retrieval.records import (
    IndexReport,
    IndexStatus,
    NoteInfo,
    SearchFilters,
    SearchMode,
    SearchResult,
)
from retrieval.settings import IndexSettings, SearchSettings
from signaldesk.lazy import lazy_attributes as _lazy_attributes

if typing.TYPE_CHECKING:
    from retrieval.chunker import Chunk, ChunkedNote, chunk_note
    from retrieval.cleaning import embedding_input, readable_text
    from retrieval.embedder import (
        BUNDLED_MODEL_NAME,
        Embedder,
        LazyEmbedder,
        bundled_model_path,
        load_embedder,
    )
    from retrieval.explanation import ExplainRow, SearchExplanation
    from retrieval.frontmatter import ParsedNote, parse_note
    from retrieval.ignore import (
        INDEXIGNORE_FILE,
        IndexIgnoreError,
        VaultFilter,
        excluded_by_frontmatter,
        iter_vault_notes,
    )
    from retrieval.indexer import Indexer, IndexProgress
    from retrieval.retriever import Retriever
    from retrieval.scrubber import PATTERN_NAMES, ScrubResult, scrub
    from retrieval.status import index_status
    from retrieval.store import index_db_path

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
    "ModelError",
    "NoteInfo",
    "ParsedNote",
    "QueryError",
    "RetrievalError",
    "Retriever",
    "ScrubResult",
    "SearchExplanation",
    "SearchFilters",
    "SearchMode",
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
    "iter_vault_notes",
    "load_embedder",
    "parse_note",
    "readable_text",
    "scrub",
]

_EXPORTS = {
    "Chunk": "retrieval.chunker",
    "ChunkedNote": "retrieval.chunker",
    "chunk_note": "retrieval.chunker",
    "embedding_input": "retrieval.cleaning",
    "readable_text": "retrieval.cleaning",
    "BUNDLED_MODEL_NAME": "retrieval.embedder",
    "Embedder": "retrieval.embedder",
    "LazyEmbedder": "retrieval.embedder",
    "bundled_model_path": "retrieval.embedder",
    "load_embedder": "retrieval.embedder",
    "ParsedNote": "retrieval.frontmatter",
    "parse_note": "retrieval.frontmatter",
    "INDEXIGNORE_FILE": "retrieval.ignore",
    "IndexIgnoreError": "retrieval.ignore",
    "VaultFilter": "retrieval.ignore",
    "excluded_by_frontmatter": "retrieval.ignore",
    "iter_vault_notes": "retrieval.ignore",
    "ExplainRow": "retrieval.explanation",
    "SearchExplanation": "retrieval.explanation",
    "IndexProgress": "retrieval.indexer",
    "Indexer": "retrieval.indexer",
    "Retriever": "retrieval.retriever",
    "PATTERN_NAMES": "retrieval.scrubber",
    "ScrubResult": "retrieval.scrubber",
    "scrub": "retrieval.scrubber",
    "index_status": "retrieval.status",
    "index_db_path": "retrieval.store",
}
__getattr__ = _lazy_attributes(__name__, _EXPORTS)
