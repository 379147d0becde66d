"""What :meth:`Retriever.explain` returns: how a ranking came about."""

from __future__ import annotations

from dataclasses import dataclass, field

from signaldesk.retrieval.records import SearchMode, SearchResult

__all__ = ["ExplainRow", "SearchExplanation"]


@dataclass(frozen=True, slots=True)
class ExplainRow:
    """One candidate of one query, with each list's rank and raw score.

    ``bm25_score`` is FTS5's ``bm25()`` negated (higher is better; ``None``: no
    query word in the chunk); ``vector_score`` is the cosine similarity.
    """

    path: str
    section: str
    ordinal: int
    chunk_id: int
    score: float
    bm25_rank: int | None
    bm25_score: float | None
    vector_rank: int | None
    vector_score: float | None


@dataclass(frozen=True, slots=True)
class SearchExplanation:
    """The full story of one search: inputs, effective mode, per-list detail, timing."""

    query: str
    match: str | None
    requested_mode: SearchMode
    mode: SearchMode
    fusion: str
    weights: dict[str, float]
    rrf_k: int
    candidates: int
    column_weights: tuple[float, float, float]
    degraded: tuple[str, ...]
    rows: tuple[ExplainRow, ...]
    results: tuple[SearchResult, ...]
    timings_ms: dict[str, float] = field(default_factory=dict)
