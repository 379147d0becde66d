"""Fusion tuning: collect each query's candidates once, then re-fuse them offline.

One ``Retriever.explain`` per query (hybrid, blend: every candidate carries
both its BM25 and its cosine score) gives everything any fusion variant needs,
so a grid of a few hundred variants costs seconds, not a re-run each. Run it on
the TRAIN split and confirm the chosen variant on TEST with the normal bench.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.quality.datasets import Dataset
from bench.quality.metrics import Metrics, evaluate
from bench.quality.runner import ranked_docs
from signaldesk.retrieval.explanation import ExplainRow
from signaldesk.retrieval.fts_query import query_terms
from signaldesk.retrieval.fusion import Candidate, FusionParams, fuse, sort_key
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings

__all__ = ["collect", "evaluate_variant", "tune"]

Collected = dict[str, tuple[str, list[ExplainRow]]]


async def collect(
    dataset: Dataset, vault: Path, index: IndexSettings, search: SearchSettings, embedder: Any
) -> Collected:
    """Each query's text and full candidate rows (both scores filled)."""
    settings = search.model_copy(update={"fusion": "blend"})
    out: Collected = {}
    async with await Retriever.open(vault, index, settings, embedder) as retriever:
        for qid, query in dataset.queries.items():
            # limit=1 so the depth is exactly `candidates`; the rows hold every
            # candidate of both lists whatever the limit.
            exp = await retriever.explain(query, limit=1, mode="hybrid", max_tokens=10**9)
            out[qid] = (query, list(exp.rows))
    return out


WeightFn = Callable[[str], tuple[float, float]]


@dataclass(frozen=True, slots=True)
class Variant:
    label: str
    params: FusionParams
    weights: WeightFn | None = None  # per-query (bm25, vector) weights


def evaluate_variant(dataset: Dataset, collected: Collected, variant: Variant) -> Metrics:
    run: dict[str, list[str]] = {}
    for qid, (query, rows) in collected.items():
        params = variant.params
        if variant.weights is not None:
            wb, wv = variant.weights(query)
            params = FusionParams(params.method, wb, wv, params.rrf_k, params.normalisation)
        cands = [
            Candidate(r.chunk_id, r.bm25_rank, r.bm25_score, r.vector_rank, r.vector_score)
            for r in rows
        ]
        where = {r.chunk_id: (r.path, r.ordinal) for r in rows}
        fused = sorted(fuse(cands, params), key=lambda c: sort_key(c, *where[c.chunk_id]))
        run[qid] = ranked_docs(dataset, [where[c.chunk_id][0] for c in fused])
    return evaluate(run, dataset.qrels)


def _variants() -> list[Variant]:
    out: list[Variant] = [
        Variant("bm25 only", FusionParams("blend", 1.0, 0.0)),
        Variant("vector only", FusionParams("blend", 0.0, 1.0)),
    ]
    for k in (1, 5, 10, 20, 60, 100):
        for wb, wv in ((1.0, 1.0), (2.0, 1.0), (3.0, 1.0), (5.0, 1.0)):
            out.append(Variant(f"rrf k={k} w={wb:g}:{wv:g}", FusionParams("rrf", wb, wv, k)))
    for norm in ("minmax", "zscore"):
        for wv in (0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6):
            out.append(
                Variant(
                    f"blend {norm} {1 - wv:.2f}:{wv:.2f}",
                    FusionParams("blend", 1 - wv, wv, normalisation=norm),
                )
            )
    # Per-query weighting: short (identifier-like) queries lean on BM25, long
    # natural-language ones give the vector list more say.
    for short_wv, long_wv, cut in ((0.1, 0.4, 4), (0.2, 0.4, 5), (0.15, 0.35, 6), (0.2, 0.5, 8)):

        def weights(
            q: str, s: float = short_wv, lw: float = long_wv, c: int = cut
        ) -> tuple[float, float]:
            wv = s if len(query_terms(q)) < c else lw
            return 1 - wv, wv

        out.append(
            Variant(
                f"blend minmax per-query <{cut} terms {short_wv}, else {long_wv}",
                FusionParams("blend", 0.7, 0.3),
                weights,
            )
        )
    return out


async def tune(
    dataset: Dataset,
    vault: Path,
    index: IndexSettings,
    search: SearchSettings,
    embedder: Any,
    console: Console,
) -> None:
    """Print every variant's metrics on ``dataset``, best nDCG@10 first."""
    collected = await collect(dataset, vault, index, search, embedder)
    scored = [(v, evaluate_variant(dataset, collected, v)) for v in _variants()]
    scored.sort(key=lambda item: -item[1].ndcg10)
    table = Table(
        title=f"fusion variants on {dataset.name} {dataset.split} (depth {search.candidates})"
    )
    for column in ("variant", "nDCG@10", "Recall@10", "Recall@100", "MRR@10"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for variant, m in scored:
        table.add_row(
            variant.label,
            f"{m.ndcg10:.4f}",
            f"{m.recall10:.3f}",
            f"{m.recall100:.3f}",
            f"{m.mrr10:.3f}",
        )
    console.print(table)
