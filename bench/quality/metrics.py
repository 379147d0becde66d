"""Standard IR metrics over graded relevance judgments (BEIR / trec_eval definitions).

``run``: query id -> document ids in rank order (best first, no duplicates).
``qrels``: query id -> {document id: grade}; a grade above 0 is relevant.
nDCG uses trec_eval's linear gain (``grade / log2(rank + 1)``), as pytrec_eval
and therefore BEIR do. Every judged query counts, including those for which
the run returned nothing (they score 0).

``hit@3`` is the share of queries with an *answering* document among the
first three distinct documents: a document of the query's highest grade (on
the vault questions, grade 2 = "answers it"; grade 1, a partial answer such as
a category list that names the answer, does not count).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Metrics", "evaluate", "hit_at_k", "mrr_at_k", "ndcg_at_k", "recall_at_k"]

Run = Mapping[str, Sequence[str]]
Qrels = Mapping[str, Mapping[str, int]]


def ndcg_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Normalised discounted cumulative gain of the first ``k`` documents."""
    dcg = sum(judged.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranking[:k]))
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found in the first ``k``."""
    relevant = {d for d, g in judged.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mrr_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant document within the first ``k`` (else 0)."""
    for i, doc in enumerate(ranking[:k]):
        if judged.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def hit_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """1.0 when a document of the query's highest grade is among the first ``k``, else 0."""
    top = max(judged.values(), default=0)
    if top <= 0:
        return 0.0
    return 1.0 if any(judged.get(doc, 0) >= top for doc in ranking[:k]) else 0.0


@dataclass(frozen=True, slots=True)
class Metrics:
    """Mean metrics over the judged queries."""

    ndcg10: float
    recall10: float
    recall100: float
    mrr10: float
    queries: int
    hit3: float = 0.0


def evaluate(run: Run, qrels: Qrels, deep: Run | None = None) -> Metrics:
    """Mean nDCG@10, Recall@10, Recall@100, MRR@10 and hit@3 of ``run`` over ``qrels``
    (Recall@100 of ``deep`` when given: the 100-result rankings beside 10-result ones)."""
    n = len(qrels)
    if n == 0:
        return Metrics(0.0, 0.0, 0.0, 0.0, 0)
    totals = [0.0, 0.0, 0.0, 0.0, 0.0]
    for qid, judged in qrels.items():
        ranking = run.get(qid, ())
        totals[0] += ndcg_at_k(ranking, judged, 10)
        totals[1] += recall_at_k(ranking, judged, 10)
        totals[2] += recall_at_k(ranking if deep is None else deep.get(qid, ()), judged, 100)
        totals[3] += mrr_at_k(ranking, judged, 10)
        totals[4] += hit_at_k(ranking, judged, 3)
    return Metrics(
        totals[0] / n, totals[1] / n, totals[2] / n, totals[3] / n, queries=n, hit3=totals[4] / n
    )
