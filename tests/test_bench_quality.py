"""The bench's IR metrics, checked against values computed by hand."""

from __future__ import annotations

import math

import pytest

from bench.quality.metrics import evaluate, mrr_at_k, ndcg_at_k, recall_at_k

JUDGED = {"d1": 1, "d3": 2}  # graded: d3 is more relevant than d1
RANKING = ["d2", "d3", "d4", "d1"]


def test_ndcg_linear_gain() -> None:
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k(RANKING, JUDGED, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(RANKING, JUDGED, 1) == 0.0
    assert ndcg_at_k(["d3", "d1"], JUDGED, 10) == pytest.approx(1.0)


def test_recall_and_mrr() -> None:
    assert recall_at_k(RANKING, JUDGED, 2) == 0.5
    assert recall_at_k(RANKING, JUDGED, 100) == 1.0
    assert mrr_at_k(RANKING, JUDGED, 10) == 0.5
    assert mrr_at_k(RANKING, JUDGED, 1) == 0.0


def test_evaluate_counts_queries_without_results() -> None:
    m = evaluate({"q1": ["d3", "d1"]}, {"q1": JUDGED, "q2": {"x": 1}})
    assert m.queries == 2
    assert m.ndcg10 == pytest.approx(0.5)
    assert m.recall10 == pytest.approx(0.5)
    assert m.mrr10 == pytest.approx(0.5)


def test_recall_at_100_can_come_from_the_deeper_rankings() -> None:
    # The @10 figures of a 10-result search, Recall@100 of the 100-result one beside it.
    top10 = {"q1": ["d3"]}
    deep = {"q1": ["d3", *(f"x{i}" for i in range(50)), "d1"]}
    alone = evaluate(top10, {"q1": JUDGED})
    both = evaluate(top10, {"q1": JUDGED}, deep)
    assert both.ndcg10 == alone.ndcg10 and both.mrr10 == alone.mrr10
    assert both.recall100 > alone.recall100
    assert both.recall100 == recall_at_k(deep["q1"], JUDGED, 100)
