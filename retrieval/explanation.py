"""What :meth:`Retriever.explain` returns: how a ranking came about."""

from __future__ import annotations

from dataclasses import dataclass, field

from signaldesk.retrieval.records import SearchMode, SearchResult

__all__ = ["ExplainRow", "SearchExplanation"]


@dataclass(frozen=True, slots=True)
class ExplainRow:
    """One candidate note of one query, shown by its best chunk, with each list's
    rank and raw score.

    ``bm25_rank`` / ``bm25_score`` are the best among the note's chunks in the
    chunk keyword list (FTS5's ``bm25()`` negated: higher is better; ``None``: no
    query word), ``vector_rank`` / ``vector_score`` the best cosine among its
    chunks, ``note_rank`` / ``note_score`` the note's rank and BM25 in the
    note-level keyword list; ``exact`` says the query equals its title, an alias
    or its file name; ``recency`` is the recency factor (0 when not used).
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
    note_rank: int | None = None
    note_score: float | None = None
    exact: bool = False
    recency: float = 0.0


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
    note_column_weights: tuple[float, ...] = ()
    omitted: int = 0
