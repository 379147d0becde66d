"""Fusion, tie-breaks and the token budget: pure logic, checked by hand-computed values."""

from __future__ import annotations

import pytest

from signaldesk.retrieval.budget import ELLIPSIS, cut, estimate_tokens, take
from signaldesk.retrieval.fusion import Candidate, FusionParams, fuse, sort_key


def test_rrf_weighted_by_list() -> None:
    cands = [
        Candidate(1, bm25_rank=1, bm25_score=9.0),
        Candidate(2, bm25_rank=2, bm25_score=5.0, vector_rank=1, vector_score=0.8),
    ]
    fused = {c.chunk_id: c.score for c in fuse(cands, FusionParams("rrf", 2.0, 1.0, 60))}
    assert fused[1] == pytest.approx(2.0 / 61)
    assert fused[2] == pytest.approx(2.0 / 62 + 1.0 / 61)


def test_blend_minmax_over_the_union() -> None:
    cands = [
        Candidate(1, bm25_rank=1, bm25_score=10.0, vector_score=0.2),
        Candidate(2, bm25_rank=2, bm25_score=4.0, vector_rank=1, vector_score=0.6),
        Candidate(3, vector_rank=2, vector_score=0.4),  # no query word: bm25 counts as 0
    ]
    fused = {c.chunk_id: c.score for c in fuse(cands, FusionParams("blend", 0.7, 0.3))}
    assert fused[1] == pytest.approx(0.7 * 1.0 + 0.3 * 0.0)
    assert fused[2] == pytest.approx(0.7 * 0.4 + 0.3 * 1.0)
    assert fused[3] == pytest.approx(0.7 * 0.0 + 0.3 * 0.5)


def test_blend_zscore() -> None:
    cands = [
        Candidate(1, bm25_score=2.0, vector_score=0.5),
        Candidate(2, bm25_score=0.0, vector_score=0.5),
    ]
    fused = {
        c.chunk_id: c.score
        for c in fuse(cands, FusionParams("blend", 1.0, 1.0, normalisation="zscore"))
    }
    assert fused[1] == pytest.approx(1.0)
    assert fused[2] == pytest.approx(-1.0)


def test_blend_single_list_keeps_its_order() -> None:
    cands = [Candidate(1, bm25_rank=1, bm25_score=3.0), Candidate(2, bm25_rank=2, bm25_score=1.0)]
    fused = fuse(cands, FusionParams("blend", 0.7, 0.3))
    assert fused[0].score > fused[1].score


def test_ties_break_on_best_rank_then_path_then_ordinal() -> None:
    a = Candidate(1, bm25_rank=3, score=0.5)
    b = Candidate(2, vector_rank=1, score=0.5)
    c = Candidate(3, vector_rank=1, score=0.5)
    d = Candidate(4, vector_rank=1, score=0.5)
    meta = {1: ("z.md", 0), 2: ("b.md", 1), 3: ("a.md", 0), 4: ("b.md", 0)}
    ordered = sorted([a, b, c, d], key=lambda x: sort_key(x, *meta[x.chunk_id]))
    assert [x.chunk_id for x in ordered] == [3, 4, 2, 1]


def test_budget_keeps_whole_texts_that_fit() -> None:
    assert take(["a" * 40, "b" * 40], max_tokens=20) == ["a" * 40, "b" * 40]


def test_budget_cuts_the_first_text_that_does_not_fit() -> None:
    texts = ["word " * 20, "other " * 100, "never shown"]
    out = take(texts, max_tokens=60)  # 240 characters
    assert len(out) == 2
    assert out[0] == texts[0]
    assert out[1].endswith(ELLIPSIS)
    assert sum(len(t) for t in out) <= 240


def test_budget_always_shows_the_first_result() -> None:
    out = take(["long " * 500], max_tokens=10)
    assert len(out) == 1 and out[0].endswith(ELLIPSIS) and len(out[0]) <= 40


def test_budget_stops_when_only_a_sliver_is_left() -> None:
    out = take(["a" * 390, "b" * 100], max_tokens=100)
    assert out == ["a" * 390]


def test_cut_prefers_a_word_boundary() -> None:
    assert cut("alpha beta gamma delta", 15) == "alpha beta..."
    assert cut("short", 15) == "short"
    assert estimate_tokens("abcdefgh") == 2
