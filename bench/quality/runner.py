"""Index a dataset with the product's own indexer and query it with the product's own retriever."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.quality.datasets import Dataset
from bench.quality.metrics import Metrics, evaluate
from signaldesk.retrieval.embedder import Embedder
from signaldesk.retrieval.records import SearchMode
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings

__all__ = ["DEPTH", "ModeResult", "build_index", "metrics_row", "ranked_docs", "run_mode"]

# Deep enough for Recall@100 at document level (a note may span chunks).
DEPTH = 100


@dataclass(frozen=True, slots=True)
class ModeResult:
    """Metrics and latency of one retrieval variant over a dataset split."""

    label: str
    metrics: Metrics
    median_ms: float
    run: dict[str, list[str]]


async def build_index(vault: Path, index: IndexSettings, embedder: Any) -> Any:
    """Run the product's indexer (incremental: a kept index is only brought up to date)."""
    from signaldesk.retrieval.indexer import Indexer

    indexer = Indexer(vault, index, embedder)
    return await indexer.run(full=False)


def ranked_docs(dataset: Dataset, paths: list[str]) -> list[str]:
    """Result paths as judged document ids, first occurrence kept."""
    seen: set[str] = set()
    docs: list[str] = []
    for path in paths:
        doc = dataset.doc_id(path)
        if doc not in seen:
            seen.add(doc)
            docs.append(doc)
    return docs


async def run_mode(
    dataset: Dataset,
    vault: Path,
    index: IndexSettings,
    search: SearchSettings,
    embedder: Embedder | None,
    mode: SearchMode,
    label: str | None = None,
    opener: Callable[[], Awaitable[Retriever]] | None = None,
) -> ModeResult:
    """Every query of ``dataset`` through :class:`Retriever` in ``mode``.

    :param opener: opens another retriever (the PostgreSQL one) instead of ``vault``'s.
    """
    run: dict[str, list[str]] = {}
    # A search fuses max(candidates, limit) candidates, so with fewer than DEPTH the top 10
    # of a 100-result search is not what a 10-result search returns: the @10 figures are
    # then read from a 10-result search of their own.
    shallow: dict[str, list[str]] | None = {} if search.candidates < DEPTH else None
    latencies: list[float] = []
    opened = opener() if opener is not None else Retriever.open(vault, index, search, embedder)
    async with await opened as retriever:
        await retriever.warm_up()
        for qid, query in dataset.queries.items():
            started = time.perf_counter()
            results = await retriever.search(query, limit=DEPTH, mode=mode, max_tokens=10**9)
            latencies.append((time.perf_counter() - started) * 1000)
            run[qid] = ranked_docs(dataset, [r.path for r in results])
            if shallow is not None:
                top = await retriever.search(query, limit=10, mode=mode, max_tokens=10**9)
                shallow[qid] = ranked_docs(dataset, [r.path for r in top])
    return ModeResult(
        label or mode,
        evaluate(run, dataset.qrels) if shallow is None else evaluate(shallow, dataset.qrels, run),
        statistics.median(latencies) if latencies else 0.0,
        run,
    )


def metrics_row(result: ModeResult) -> Mapping[str, str]:
    m = result.metrics
    return {
        "variant": result.label,
        "top-3 hit": f"{m.hit3:.3f}",
        "MRR@10": f"{m.mrr10:.3f}",
        "nDCG@10": f"{m.ndcg10:.3f}",
        "R@10": f"{m.recall10:.3f}",
        "R@100": f"{m.recall100:.3f}",
        "median ms": f"{result.median_ms:.1f}",
    }
