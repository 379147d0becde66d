"""Retrieval: chunking, credential scrubbing, embedding, the index and hybrid search.

Knows nothing about the pipeline, routing or how notes were created.
"""

from __future__ import annotations

from retrieval.records import (
    IndexReport,
    IndexStatus,
    NoteInfo,
    SearchFilters,
    SearchMode,
    SearchResult,
)
from retrieval.settings import IndexSettings, SearchSettings

__all__ = [
    "IndexReport",
    "IndexSettings",
    "IndexStatus",
    "NoteInfo",
    "SearchFilters",
    "SearchMode",
    "SearchResult",
    "SearchSettings",
]
