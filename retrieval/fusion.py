"""Fusing the keyword (BM25) and vector lists into one ranking.

Two methods, both pure functions over the candidates of one query:

* ``blend`` (the default): each list's scores are normalised over the union of
  candidates and mixed with per-list weights. Every candidate carries both
  scores -- the retriever looks up the BM25 score of vector-only candidates and
  the cosine of BM25-only ones -- so a chunk found by one list is not punished
  for merely falling below the other list's cut-off.
* ``rrf``: weighted Reciprocal Rank Fusion, ``sum(w / (k + rank))`` over the
  lists a candidate appears in (SPEC 7's k = 60 by default).

Why blend is the default: RRF throws the scores away and gives a weak list's
rank 1 as much say as a strong list's rank 1. On SciFact with a small static
model RRF (k = 60, equal weights) scores far below BM25 alone, while a blend
weighted toward BM25 beats it; docs/ranking.md has the measurements.

Ties are broken deterministically by the caller (see :func:`sort_key`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = [
    "NO_RANK",
    "Candidate",
    "FloatArray",
    "FusionMethod",
    "FusionParams",
    "IntArray",
    "Normalisation",
    "cosines_filled",
    "fuse",
    "fused_array",
    "fused_scores",
    "normalised",
    "rank_array",
    "score_array",
    "sort_key",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
FusionMethod = Literal["blend", "rrf"]
Normalisation = Literal["minmax", "zscore"]
NO_RANK = 1_000_000_000
"""The best rank of a candidate in no list: after every real rank (sorting by rank)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One chunk seen by either list.

    :param bm25_rank: 1-based rank in the keyword list, ``None`` if not in it.
    :param bm25_score: BM25 relevance as a positive number (FTS5's ``bm25()``
        negated); ``None`` when no query term occurs in the chunk.
    :param vector_rank: 1-based rank in the vector list, ``None`` if not in it.
    :param vector_score: cosine similarity to the query, ``None`` if unknown.
    :param score: the fused score, set by :func:`fuse`.
    """

    chunk_id: int
    bm25_rank: int | None = None
    bm25_score: float | None = None
    vector_rank: int | None = None
    vector_score: float | None = None
    score: float = 0.0

    @property
    def best_rank(self) -> int:
        ranks = [r for r in (self.bm25_rank, self.vector_rank) if r is not None]
        return min(ranks) if ranks else NO_RANK


@dataclass(frozen=True, slots=True)
class FusionParams:
    """How to fuse; built from :class:`~retrieval.settings.SearchSettings`."""

    method: FusionMethod = "blend"
    bm25_weight: float = 0.7
    vector_weight: float = 0.3
    rrf_k: int = 60
    normalisation: Normalisation = "minmax"


def normalised(raw: FloatArray, how: Normalisation = "minmax") -> FloatArray:
    """``raw`` scaled over the candidates (no NaN in it)."""
    if not raw.size:
        return raw
    if how == "zscore":
        # Left-to-right sums (cumsum), as a plain loop would add them: the same floats.
        mean = float(np.cumsum(raw)[-1]) / raw.size
        std = math.sqrt(float(np.cumsum((raw - mean) ** 2)[-1]) / raw.size)
        if std == 0.0:
            return np.zeros_like(raw)
        return (raw - mean) / std
    low, high = float(raw.min()), float(raw.max())
    if high == low:
        # One candidate, or all equal: the list cannot tell them apart, so it
        # contributes the same amount to each and leaves the order to the other.
        return np.full_like(raw, 1.0 if high > 0 else 0.0)
    return (raw - low) / (high - low)


def fused_array(
    bm25_rank: IntArray,
    bm25_score: FloatArray,
    vector_rank: IntArray,
    vector_score: FloatArray,
    params: FusionParams,
) -> FloatArray:
    """Every candidate's fused score, from one array per field: a rank is 0 where the
    candidate is not in that list, a score NaN where it is unknown (float64 throughout)."""
    if params.method == "rrf":
        k = params.rrf_k
        keyword = np.where(bm25_rank > 0, params.bm25_weight / (k + bm25_rank), 0.0)
        vector = np.where(vector_rank > 0, params.vector_weight / (k + vector_rank), 0.0)
        out: FloatArray = keyword + vector
        return out
    # A missing BM25 score means "no query word in the chunk": the lowest possible
    # relevance, i.e. raw 0 before normalising.
    bm25 = normalised(np.nan_to_num(bm25_score, nan=0.0), params.normalisation)
    vec = cosines_filled(vector_score, params.normalisation)
    fused: FloatArray = params.bm25_weight * bm25 + params.vector_weight * vec
    return fused


def cosines_filled(cosines: FloatArray, how: Normalisation = "minmax") -> FloatArray:
    """``cosines`` normalised, an unknown one (NaN) taking the lowest known (it is not
    known to be any worse); all 0 when none is known."""
    known = ~np.isnan(cosines)
    if not known.any():
        return np.zeros_like(cosines)
    return normalised(np.where(known, cosines, float(cosines[known].min())), how)


def fused_scores(candidates: Sequence[Candidate], params: FusionParams) -> list[float]:
    """Every candidate's fused score, in the candidates' order (:func:`fused_array`)."""
    scores = fused_array(
        rank_array(c.bm25_rank for c in candidates),
        score_array(c.bm25_score for c in candidates),
        rank_array(c.vector_rank for c in candidates),
        score_array(c.vector_score for c in candidates),
        params,
    )
    return [float(v) for v in scores.tolist()]


def rank_array(ranks: Iterable[int | None]) -> IntArray:
    """1-based ranks as an array, 0 for "not in the list" (``None``)."""
    return np.array([r or 0 for r in ranks], dtype=np.int64)


def score_array(scores: Iterable[float | None]) -> FloatArray:
    """Scores as a float64 array, NaN for "unknown" (``None``)."""
    return np.array([np.nan if v is None else v for v in scores], dtype=np.float64)


def fuse(candidates: Sequence[Candidate], params: FusionParams) -> list[Candidate]:
    """Give every candidate its fused score; the order is left to :func:`sort_key`."""
    return [
        replace(c, score=score)
        for c, score in zip(candidates, fused_scores(candidates, params), strict=True)
    ]


def sort_key(candidate: Candidate, path: str, ordinal: int) -> tuple[float, int, str, int]:
    """Deterministic order: fused score (high first), then the better of the two
    ranks, then the note path, then the chunk's position in the note."""
    return (-candidate.score, candidate.best_rank, path, ordinal)
