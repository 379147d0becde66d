"""``python -m bench.quality``: retrieval quality of signaldesk's own indexer and retriever.

One run reports every set side by side: SciFact (test split), the paraphrase
queries and the two halves of the everyday vault questions on the real
Obsidian Hub vault, each for BM25 only, vector only, hybrid and the plain
whole-note FTS5 reference. Choose settings on ``vault-tuning`` (and SciFact
``train``); ``vault-heldout`` and SciFact ``test`` are for reporting.

Examples::

    python -m bench.quality --keep-index /tmp/q                      # everything
    python -m bench.quality --keep-index /tmp/q --sets vault-tuning --tune
    python -m bench.quality --keep-index /tmp/q --sets scifact --split train
    python -m bench.quality --keep-index /tmp/q --model bundled     # another embedding model
    python -m bench.quality --keep-index /tmp/q --sets scifact --backend postgres

``--backend postgres`` indexes each corpus into PostgreSQL as well (a pgserver in
/tmp/pgindex, or ``--pg-dsn``) and runs every mode on both backends side by side, with
the nDCG@10 difference and how often the two top-10 lists agree.

Each query is searched for 100 results (Recall@100); with ``--candidates`` below 100 it is
searched for 10 as well, and the @10 figures come from that search: a search fuses
``max(candidates, limit)`` candidates, so the top 10 of 100 results is not what a person
asking for 10 gets.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.table import Table

from bench.quality.datasets import (
    Dataset,
    extract_obsidian_hub,
    load_beir,
    load_paraphrase,
    load_vault_questions,
    write_beir_vault,
)
from bench.quality.note_fts import run_note_fts
from bench.quality.runner import ModeResult, build_index, metrics_row, run_mode
from signaldesk.retrieval.settings import IndexSettings, SearchSettings

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"
DEFAULT_SCIFACT = SHARED / "scifact"
HUB_ARCHIVE = SHARED / "vaults" / "obsidian-hub.tar.gz"
SETS = ("scifact", "paraphrase", "vault-tuning", "vault-heldout")


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__.splitlines()[0])
    p.add_argument(
        "--sets",
        default=",".join(SETS),
        help=f"Comma-separated sets to run (default: all of {', '.join(SETS)}).",
    )
    p.add_argument("--scifact", type=Path, default=DEFAULT_SCIFACT, help="SciFact (BEIR) folder.")
    p.add_argument("--split", default="test", help="SciFact qrels split (test | train).")
    p.add_argument(
        "--beir",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="Another BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv), e.g. NFCorpus.",
    )
    p.add_argument(
        "--keep-index", type=Path, help="Folder for the vaults and indexes, reused next time."
    )
    p.add_argument("--model", help="IndexSettings.model override (default: the config default).")
    p.add_argument("--tune", action="store_true", help="Grid-search fusion settings on the sets.")
    p.add_argument(
        "--tune-columns",
        type=float,
        nargs=6,
        metavar="W",
        help="Tune with these note column weights only (title aliases file tags headings body).",
    )
    p.add_argument("--fusion", choices=["blend", "rrf"], help="Override SearchSettings.fusion.")
    p.add_argument("--note-weight", type=float)
    p.add_argument("--bm25-weight", type=float)
    p.add_argument("--vector-weight", type=float)
    p.add_argument("--vector-yield", type=float)
    p.add_argument("--rrf-k", type=int)
    p.add_argument("--candidates", type=int)
    p.add_argument("--column-weights", type=float, nargs=3, metavar=("TEXT", "SECTION", "CONTEXT"))
    p.add_argument("--modes", default="bm25,vector,hybrid", help="Comma-separated modes to run.")
    p.add_argument(
        "--no-reference", action="store_true", help="Skip the whole-note FTS5 reference row."
    )
    p.add_argument("--json", type=Path, help="Also write every figure to this JSON file.")
    p.add_argument(
        "--backend",
        choices=["sqlite", "postgres"],
        default="sqlite",
        help="postgres: run every mode on SQLite and on PostgreSQL side by side.",
    )
    p.add_argument(
        "--pg-dsn",
        help="Admin DSN of a PostgreSQL with pgvector (default: start a pgserver in /tmp/pgindex).",
    )
    return p.parse_args(argv)


def _search_settings(args: argparse.Namespace) -> SearchSettings:
    overrides: dict[str, Any] = {}
    names = ("fusion", "note_weight", "bm25_weight", "vector_weight", "vector_yield", "rrf_k")
    for name in (*names, "candidates"):
        value = getattr(args, name)
        if value is not None:
            overrides[name] = value
    if args.column_weights:
        overrides["column_weights"] = tuple(args.column_weights)
    return SearchSettings(**overrides)


@dataclass(frozen=True, slots=True)
class Corpus:
    """A vault the sets run on, with its own index (one per embedding model)."""

    name: str
    vault: Path
    index: IndexSettings
    reference_db: Path


@dataclass(frozen=True, slots=True)
class Plan:
    dataset: Dataset
    corpus: str


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "default"


def _plans(args: argparse.Namespace) -> tuple[list[Plan], dict[str, Path]]:
    """The datasets to run and the folder each corpus comes from (BEIR) or ``None`` (Hub)."""
    wanted = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SETS]
    if unknown:
        raise SystemExit(f"unknown set(s) {', '.join(unknown)}; choose from {', '.join(SETS)}")
    plans: list[Plan] = []
    beir: dict[str, Path] = {}
    if "scifact" in wanted:
        beir["scifact"] = args.scifact
        plans.append(Plan(load_beir(args.scifact, args.split), "scifact"))
    for folder in args.beir:
        name = _slug(folder.name)
        beir[name] = folder
        plans.append(Plan(load_beir(folder, "test"), name))
    if "paraphrase" in wanted:
        plans.append(Plan(load_paraphrase("test"), "hub"))
    for split in ("tuning", "heldout"):
        if f"vault-{split}" in wanted:
            plans.append(Plan(load_vault_questions(split), "hub"))
    return plans, beir


def _corpora(
    args: argparse.Namespace, workdir: Path, names: set[str], beir: dict[str, Path]
) -> dict[str, Corpus]:
    model_slug = _slug(args.model or "default")
    out: dict[str, Corpus] = {}
    for name in sorted(names):
        folder = workdir / name
        vault = folder / "vault"
        if name == "hub":
            extract_obsidian_hub(HUB_ARCHIVE, vault)
        else:
            write_beir_vault(beir[name], vault)
        index_kwargs: dict[str, Any] = {"db_path": str(folder / f"index-{model_slug}.db")}
        if args.model:
            index_kwargs["model"] = args.model
        out[name] = Corpus(name, vault, IndexSettings(**index_kwargs), folder / "note-fts.db")
    return out


def _table(title: str, results: list[ModeResult]) -> Table:
    table = Table(title=title)
    rows = [metrics_row(r) for r in results]
    for column in rows[0]:
        table.add_column(column, justify="left" if column == "variant" else "right")
    for row in rows:
        table.add_row(*row.values())
    return table


async def _main(args: argparse.Namespace, console: Console) -> None:
    if args.backend == "postgres":
        from bench.pg_server import bench_database

        with bench_database(args.pg_dsn, "bench_quality", fresh=args.keep_index is None) as pg:
            await _run(args, console, pg)
    else:
        await _run(args, console, None)


async def _run(args: argparse.Namespace, console: Console, pg: Any) -> None:
    from signaldesk.retrieval.embedder import load_embedder

    workdir = args.keep_index or Path(tempfile.mkdtemp(prefix="sd-quality-"))
    workdir.mkdir(parents=True, exist_ok=True)
    plans, beir = _plans(args)
    corpora = _corpora(args, workdir, {p.corpus for p in plans}, beir)
    search = _search_settings(args)
    embedder = None
    report: dict[str, Any] = {"command": _command(), "load": _load(), "sets": []}
    for corpus in corpora.values():
        if embedder is None:
            embedder = load_embedder(corpus.index)
        started = time.perf_counter()
        built = await build_index(corpus.vault, corpus.index, embedder)
        notes = sum(1 for _ in corpus.vault.rglob("*.md"))
        console.print(
            f"{corpus.name}: {notes} notes, index ready in {time.perf_counter() - started:.1f} s "
            f"({built.added} added, {built.changed} changed, {built.chunks_embedded} chunks "
            "embedded)",
            highlight=False,
        )
        if pg is not None:
            from signaldesk.retrieval.pg_indexer import PgIndexer

            started = time.perf_counter()
            built = await PgIndexer(corpus.vault, corpus.name, corpus.index, pg, embedder).run()
            console.print(
                f"{corpus.name}: PostgreSQL index ready in {time.perf_counter() - started:.1f} s "
                f"({built.added} added, {built.changed} changed, {built.chunks_embedded} chunks "
                "embedded)",
                highlight=False,
            )
    assert embedder is not None
    report["model"] = embedder.name
    for plan in plans:
        dataset, corpus = plan.dataset, corpora[plan.corpus]
        judged = sum(len(v) for v in dataset.qrels.values())
        title = (
            f"{dataset.name} {dataset.split}: {len(dataset.queries)} queries, {judged} judgments "
            f"— model {embedder.name}"
        )
        if args.tune:
            from bench.quality.tune import tune

            grid = {"column_grid": (tuple(args.tune_columns),)} if args.tune_columns else {}
            scored = await tune(
                dataset, corpus.vault, corpus.index, search, embedder, console, **grid
            )
            report["sets"].append(
                {
                    "name": dataset.name,
                    "split": dataset.split,
                    "queries": len(dataset.queries),
                    "tune": [{"variant": label, **asdict(m)} for label, m in scored],
                }
            )
            continue
        results = []
        pairs: list[tuple[ModeResult, ModeResult]] = []
        for mode in args.modes.split(","):
            label = f"{mode} ({search.fusion})" if mode == "hybrid" else f"{mode} only"
            if pg is not None:
                label = f"{label} @sqlite"
            results.append(
                await run_mode(dataset, corpus.vault, corpus.index, search, embedder, mode, label)
            )
            if pg is not None:
                results.append(
                    await run_mode(
                        dataset,
                        corpus.vault,
                        corpus.index,
                        search,
                        embedder,
                        mode,
                        label.replace("@sqlite", "@postgres"),
                        opener=_pg_opener(pg, corpus, search, embedder),
                    )
                )
                pairs.append((results[-2], results[-1]))
        if not args.no_reference:
            results.append(run_note_fts(dataset, corpus.vault, corpus.reference_db))
        console.print(_table(title, results))
        compared = [_compare(a, b) for a, b in pairs]
        for row in compared:
            console.print(
                f"{row['variant']}: nDCG@10 postgres {row['postgres']:.4f} - sqlite "
                f"{row['sqlite']:.4f} = {row['difference']:+.4f}; identical top-10 for "
                f"{row['same_top10']:.1%} of queries, mean top-10 overlap {row['overlap10']:.3f}",
                highlight=False,
            )
        report["sets"].append(
            {
                "name": dataset.name,
                "split": dataset.split,
                "queries": len(dataset.queries),
                "results": [{"variant": r.label, **asdict(r.metrics)} for r in results],
                **({"backends": compared} if compared else {}),
            }
        )
    console.print(f"load average: {report['load']}", highlight=False)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def _pg_opener(pg: Any, corpus: Corpus, search: SearchSettings, embedder: Any) -> Any:
    from signaldesk.retrieval.pg_retriever import PgRetriever

    async def opener() -> Any:
        return await PgRetriever.connect(
            pg, corpus.index, search, embedder, vaults=frozenset({corpus.name})
        )

    return opener


def _compare(sqlite_side: ModeResult, pg_side: ModeResult) -> dict[str, Any]:
    """The nDCG@10 difference and how far the two backends' top-10 lists agree."""
    same = overlap = 0.0
    for qid, docs in sqlite_side.run.items():
        mine, theirs = docs[:10], pg_side.run.get(qid, [])[:10]
        same += mine == theirs
        overlap += len(set(mine) & set(theirs)) / max(1, len(mine))
    n = max(1, len(sqlite_side.run))
    return {
        "variant": sqlite_side.label.replace(" @sqlite", ""),
        "sqlite": sqlite_side.metrics.ndcg10,
        "postgres": pg_side.metrics.ndcg10,
        "difference": pg_side.metrics.ndcg10 - sqlite_side.metrics.ndcg10,
        "same_top10": same / n,
        "overlap10": overlap / n,
    }


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _command(argv: list[str] | None = None) -> str:
    return "python -m bench.quality " + shlex.join(argv if argv is not None else sys.argv[1:])


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.WARNING)
    args = _args(argv)
    console = Console()
    anyio.run(_main, args, console)
    console.print(f"reproduce: [bold]{_command(argv)}[/]", highlight=False)


if __name__ == "__main__":
    main()
