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
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

__all__ = [
    "Candidate",
    "FusionMethod",
    "FusionParams",
    "Normalisation",
    "fuse",
    "fused_scores",
    "sort_key",
]

FusionMethod = Literal["blend", "rrf"]
Normalisation = Literal["minmax", "zscore"]


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
        return min(ranks) if ranks else 1_000_000_000


@dataclass(frozen=True, slots=True)
class FusionParams:
    """How to fuse; built from :class:`~retrieval.settings.SearchSettings`."""

    method: FusionMethod = "blend"
    bm25_weight: float = 0.7
    vector_weight: float = 0.3
    rrf_k: int = 60
    normalisation: Normalisation = "minmax"


def _normalise(values: Sequence[float | None], how: Normalisation) -> list[float]:
    # A missing BM25 score means "no query word in the chunk": the lowest
    # possible relevance, i.e. raw 0 before normalising.
    raw = [0.0 if v is None else v for v in values]
    if not raw:
        return []
    if how == "zscore":
        mean = sum(raw) / len(raw)
        std = math.sqrt(sum((v - mean) ** 2 for v in raw) / len(raw))
        if std == 0.0:
            return [0.0 for _ in raw]
        return [(v - mean) / std for v in raw]
    low, high = min(raw), max(raw)
    if high == low:
        # One candidate, or all equal: the list cannot tell them apart, so it
        # contributes the same amount to each and leaves the order to the other.
        return [1.0 if high > 0 else 0.0 for _ in raw]
    return [(v - low) / (high - low) for v in raw]


def fused_scores(candidates: Sequence[Candidate], params: FusionParams) -> list[float]:
    """Every candidate's fused score, in the candidates' order."""
    if params.method == "rrf":
        k = params.rrf_k
        out = []
        for c in candidates:
            score = 0.0
            if c.bm25_rank is not None:
                score += params.bm25_weight / (k + c.bm25_rank)
            if c.vector_rank is not None:
                score += params.vector_weight / (k + c.vector_rank)
            out.append(score)
        return out
    bm25 = _normalise([c.bm25_score for c in candidates], params.normalisation)
    vec_raw = [c.vector_score for c in candidates]
    if all(v is None for v in vec_raw):
        vec = [0.0 for _ in candidates]
    else:
        floor = min(v for v in vec_raw if v is not None)
        vec = _normalise([floor if v is None else v for v in vec_raw], params.normalisation)
    return [
        params.bm25_weight * b + params.vector_weight * v for b, v in zip(bm25, vec, strict=True)
    ]


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
