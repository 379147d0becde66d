"""Fusion tuning: collect each query's candidate notes once, then re-fuse them offline.

One ``Retriever.explain`` per query (hybrid: every candidate note carries its
note-level BM25, its best chunk BM25, its best cosine and whether the query is
its exact name) gives everything a note-fusion variant needs, so a grid of a
few hundred weightings costs seconds. The note-level column weights change the
BM25 scores themselves, so each of those is one more collection pass.

Run it on a TUNING set (``vault-tuning``, SciFact ``train``) and confirm the
choice on the held-out sets with the normal bench.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.quality.datasets import Dataset
from bench.quality.metrics import Metrics, evaluate
from bench.quality.runner import ranked_docs
from signaldesk.retrieval.explanation import ExplainRow
from signaldesk.retrieval.note_rank import NoteCandidate, NoteParams, note_scores
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.retrieval.weights import ListWeights, vector_weight_for

__all__ = ["candidates", "collect", "evaluate_variant", "tune"]

Collected = dict[str, list[ExplainRow]]

# Note-level column weights tried (title, aliases, file, tags, headings, body).
COLUMN_GRID: tuple[tuple[float, ...], ...] = (
    (1.0, 1.0, 1.0, 1.0, 1.0, 1.0),
    (3.0, 3.0, 3.0, 1.0, 1.0, 1.0),
    (5.0, 4.0, 4.0, 1.0, 2.0, 1.0),
    (10.0, 8.0, 8.0, 2.0, 2.0, 1.0),
    (20.0, 15.0, 15.0, 2.0, 3.0, 1.0),
)


async def collect(
    dataset: Dataset, vault: Path, index: IndexSettings, search: SearchSettings, embedder: Any
) -> Collected:
    """Each query's candidate notes with every signal filled."""
    out: Collected = {}
    async with await Retriever.open(vault, index, search, embedder) as retriever:
        for qid, query in dataset.queries.items():
            # limit=1 so the depth is exactly `candidates`; the rows hold every
            # candidate note whatever the limit.
            exp = await retriever.explain(query, limit=1, mode="hybrid", max_tokens=10**9)
            out[qid] = list(exp.rows)
    return out


@dataclass(frozen=True, slots=True)
class Variant:
    label: str
    params: NoteParams
    vector_yield: float = 0.0


def candidates(collected: Collected) -> dict[str, list[NoteCandidate]]:
    """The collected rows as note candidates (built once, re-scored per variant)."""
    return {
        qid: [
            NoteCandidate(
                note_id=i,
                path=r.path,
                best_chunk=r.chunk_id,
                note_rank=r.note_rank,
                note_score=r.note_score,
                chunk_rank=r.bm25_rank,
                chunk_score=r.bm25_score,
                vector_rank=r.vector_rank,
                vector_score=r.vector_score,
                exact=r.exact,
            )
            for i, r in enumerate(rows)
        ]
        for qid, rows in collected.items()
    }


def evaluate_variant(
    dataset: Dataset,
    cands: dict[str, list[NoteCandidate]],
    params: NoteParams,
    vector_yield: float = 0.0,
) -> Metrics:
    run: dict[str, list[str]] = {}
    for qid, notes in cands.items():
        # The retriever's per-query vector weight (retrieval.weights.vector_weight_for).
        weights = ListWeights(
            params.note_weight, params.chunk_weight, params.vector_weight, vector_yield
        )
        used = vector_weight_for(weights, (n.note_score or 0.0 for n in notes))
        scores = note_scores(notes, replace(params, vector_weight=used))
        order = sorted(
            range(len(notes)),
            key=lambda i: (-scores[i], not notes[i].exact, notes[i].best_rank, notes[i].path),
        )
        run[qid] = ranked_docs(dataset, [notes[i].path for i in order])
    return evaluate(run, dataset.qrels)


def _variants() -> list[Variant]:
    out: list[Variant] = []
    steps = [i / 10 for i in range(11)]
    for note_w in steps:
        for chunk_w in steps:
            rest = 1.0 - note_w - chunk_w
            if rest < -1e-9:
                continue
            vec_w = abs(round(rest, 2))  # never "-0.0" in a label
            for vector_yield in (0.0, 0.5, 0.9):
                out.append(
                    Variant(
                        f"blend note {note_w:.1f} chunk {chunk_w:.1f} vector {vec_w:.1f} "
                        f"yield {vector_yield:g}",
                        NoteParams("blend", note_w, chunk_w, vec_w),
                        vector_yield,
                    )
                )
    for k in (1, 10, 60):
        for weights in ((1.0, 1.0, 1.0), (2.0, 1.0, 1.0), (2.0, 1.0, 2.0), (1.0, 0.0, 1.0)):
            out.append(
                Variant(
                    f"rrf k={k} note:chunk:vector {weights[0]:g}:{weights[1]:g}:{weights[2]:g}",
                    NoteParams("rrf", *weights, exact_boost=1.0, rrf_k=k),
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
    *,
    top: int = 25,
    column_grid: tuple[tuple[float, ...], ...] = COLUMN_GRID,
) -> list[tuple[str, Metrics]]:
    """Print the best variants on ``dataset`` (by nDCG@10, then top-3 hit); return them all."""
    scored: list[tuple[str, Metrics]] = []
    for n, columns in enumerate(column_grid, start=1):
        console.print(f"collecting with note columns {columns} ({n}/{len(column_grid)})")
        settings = search.model_copy(update={"note_column_weights": columns})
        cands = candidates(await collect(dataset, vault, index, settings, embedder))
        cols = "/".join(f"{w:g}" for w in columns)
        for variant in _variants():
            scored.append(
                (
                    f"{variant.label} cols {cols}",
                    evaluate_variant(dataset, cands, variant.params, variant.vector_yield),
                )
            )
    scored.sort(key=lambda item: (-item[1].ndcg10, -item[1].hit3))
    table = Table(title=f"note fusion on {dataset.name} {dataset.split} (best {top})")
    for column in ("variant", "nDCG@10", "top-3 hit", "MRR@10", "R@10"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for label, m in scored[:top]:
        table.add_row(
            label, f"{m.ndcg10:.4f}", f"{m.hit3:.3f}", f"{m.mrr10:.3f}", f"{m.recall10:.3f}"
        )
    console.print(table)
    return scored
