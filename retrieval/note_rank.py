"""Ranking notes, not chunks: every piece of evidence about a note, fused per note.

A question is answered by a note; chunks are how a note is searched and shown.
Each candidate note carries up to four signals:

* ``note_score``: BM25 of the note as a whole (``notes_fts``: title, aliases,
  file name, tags and headings weighted above the body). Its length
  normalisation is over the whole note, so a list note that mentions every
  word once per line stays low unless the question is about it;
* ``chunk_score``: the best BM25 among the note's chunks (a section that
  matches closely);
* ``vector_score``: the best cosine among the note's chunks;
* ``exact``: the whole query equals the note's title, an alias or its file name.

:func:`fuse_notes` normalises each signal over the candidate notes (min-max,
like the chunk blend) and mixes them with per-list weights; an exact name match
adds a bonus worth ``exact_boost`` times the sum of the list weights, which at
1.0 puts the note above any note without an exact match. ``rrf`` mode uses the
three lists' ranks instead. An optional recency term (off by default) adds
``weight * 0.5 ** (age / half life)``. Ties are broken by an exact name match,
then the note's best rank in any list, then its path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from signaldesk.retrieval.fusion import (
    NO_RANK,
    FloatArray,
    IntArray,
    cosines_filled,
    normalised,
    rank_array,
    score_array,
)

__all__ = [
    "NoteCandidate",
    "NoteParams",
    "NoteSignals",
    "fuse_notes",
    "note_array",
    "note_scores",
    "note_sort_key",
    "recency_factor",
]


@dataclass(slots=True)
class NoteCandidate:
    """One note seen by any list, with its best chunk.

    :param note_rank: 1-based rank in the note keyword list (``None``: not in its top).
    :param note_score: note-level BM25 relevance (positive; ``None``: no query word).
    :param chunk_rank: best rank of one of its chunks in the chunk keyword list.
    :param chunk_score: best chunk BM25 relevance among its chunks.
    :param vector_rank: best rank of one of its chunks in the vector list.
    :param vector_score: best cosine among its chunks (``None``: unknown).
    :param exact: the query equals the note's title, an alias or its file name.
    :param recency: in (0, 1], 1 for a note updated now (0 when not used).
    :param best_chunk: the chunk shown for the note.
    :param score: the fused score, set by :func:`fuse_notes`.
    """

    note_id: int
    path: str
    best_chunk: int
    note_rank: int | None = None
    note_score: float | None = None
    chunk_rank: int | None = None
    chunk_score: float | None = None
    vector_rank: int | None = None
    vector_score: float | None = None
    exact: bool = False
    recency: float = 0.0
    score: float = 0.0

    @property
    def best_rank(self) -> int:
        ranks = [r for r in (self.note_rank, self.chunk_rank, self.vector_rank) if r is not None]
        return min(ranks) if ranks else NO_RANK


@dataclass(frozen=True, slots=True)
class NoteParams:
    """How notes are fused; built from :class:`~retrieval.settings.SearchSettings`."""

    method: Literal["blend", "rrf"] = "blend"
    note_weight: float = 0.5
    chunk_weight: float = 0.25
    vector_weight: float = 0.25
    exact_boost: float = 1.0
    recency_weight: float = 0.0
    rrf_k: int = 60


def fuse_notes(candidates: Sequence[NoteCandidate], params: NoteParams) -> list[NoteCandidate]:
    """Copies of the candidates with their fused score; the order is left to
    :func:`note_sort_key`."""
    return [
        replace(c, score=score)
        for c, score in zip(candidates, note_scores(candidates, params), strict=True)
    ]


def note_scores(candidates: Sequence[NoteCandidate], params: NoteParams) -> list[float]:
    """Every candidate note's fused score, in the candidates' order (:func:`note_array`)."""
    if not candidates:
        return []
    scores = note_array(
        NoteSignals(
            note_rank=rank_array(c.note_rank for c in candidates),
            note_score=score_array(c.note_score for c in candidates),
            chunk_rank=rank_array(c.chunk_rank for c in candidates),
            chunk_score=score_array(c.chunk_score for c in candidates),
            vector_rank=rank_array(c.vector_rank for c in candidates),
            vector_score=score_array(c.vector_score for c in candidates),
            exact=np.array([c.exact for c in candidates], dtype=bool),
            recency=np.array([c.recency for c in candidates], dtype=np.float64),
        ),
        params,
    )
    return [float(v) for v in scores.tolist()]


@dataclass(frozen=True, slots=True)
class NoteSignals:
    """The candidate notes' signals, one array each (a rank 0 where the note is not in
    that list, a score NaN where it is unknown): what :func:`note_array` fuses."""

    note_rank: IntArray
    note_score: FloatArray
    chunk_rank: IntArray
    chunk_score: FloatArray
    vector_rank: IntArray
    vector_score: FloatArray
    exact: npt.NDArray[np.bool_]
    recency: FloatArray


def note_array(notes: NoteSignals, params: NoteParams) -> FloatArray:
    """Every candidate note's fused score (float64, in the arrays' order)."""
    total = params.note_weight + params.chunk_weight + params.vector_weight
    if params.method == "rrf":
        k = params.rrf_k
        scores = np.zeros(notes.note_rank.shape, dtype=np.float64)
        for weight, ranks in (
            (params.note_weight, notes.note_rank),
            (params.chunk_weight, notes.chunk_rank),
            (params.vector_weight, notes.vector_rank),
        ):
            scores = scores + np.where(ranks > 0, weight / (k + ranks), 0.0)
        # The bonus must outweigh a rank-1 in every list for an exact name match.
        bonus = params.exact_boost * total * total / (k + 1)
    else:
        # A missing keyword score means "no query word": the lowest relevance (0). A
        # missing cosine is unknown, so it takes the lowest cosine seen.
        keyword = normalised(np.nan_to_num(notes.note_score, nan=0.0))
        chunks = normalised(np.nan_to_num(notes.chunk_score, nan=0.0))
        vectors = cosines_filled(notes.vector_score)
        scores = (
            params.note_weight * keyword
            + params.chunk_weight * chunks
            + params.vector_weight * vectors
        )
        bonus = params.exact_boost * total
    out: FloatArray = (
        scores + np.where(notes.exact, bonus, 0.0) + params.recency_weight * notes.recency
    )
    return out


def recency_factor(age_days: float, half_life_days: float) -> float:
    """``0.5 ** (age / half_life)``: 1 for a note updated today, 0.5 one half-life ago."""
    if half_life_days <= 0:
        return 0.0
    return math.pow(0.5, max(0.0, age_days) / half_life_days)


def note_sort_key(candidate: NoteCandidate) -> tuple[float, bool, int, str]:
    """Deterministic order: fused score (high first), then an exact name match, then
    the best rank in any list, then the note path."""
    return (-candidate.score, not candidate.exact, candidate.best_rank, candidate.path)
