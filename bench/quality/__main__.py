"""``python -m bench.quality``: retrieval quality of signaldesk's own indexer and retriever.

Examples::

    python -m bench.quality --dataset ../shared/data/scifact --split test --keep-index /tmp/sf
    python -m bench.quality --split train --keep-index /tmp/sf --tune
    python -m bench.quality --dataset paraphrase --keep-index /tmp/hub
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import tempfile
import time
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
    write_beir_vault,
)
from bench.quality.runner import ModeResult, build_index, metrics_row, run_mode
from signaldesk.retrieval.settings import IndexSettings, SearchSettings

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATASET = REPO.parent / "shared" / "data" / "scifact"
HUB_ARCHIVE = REPO.parent / "shared" / "data" / "vaults" / "obsidian-hub.tar.gz"


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default=str(DEFAULT_DATASET), help="BEIR folder, or `paraphrase`.")
    p.add_argument("--split", default="test", help="qrels split (test | train).")
    p.add_argument(
        "--keep-index", type=Path, help="Folder for the vault and index, reused next time."
    )
    p.add_argument("--model", help="IndexSettings.model override (default: the config default).")
    p.add_argument("--tune", action="store_true", help="Grid-search fusion settings on this split.")
    p.add_argument("--fusion", choices=["blend", "rrf"], help="Override SearchSettings.fusion.")
    p.add_argument("--bm25-weight", type=float)
    p.add_argument("--vector-weight", type=float)
    p.add_argument("--rrf-k", type=int)
    p.add_argument("--candidates", type=int)
    p.add_argument("--column-weights", type=float, nargs=3, metavar=("TEXT", "SECTION", "CONTEXT"))
    p.add_argument("--modes", default="bm25,vector,hybrid", help="Comma-separated modes to run.")
    return p.parse_args(argv)


def _search_settings(args: argparse.Namespace) -> SearchSettings:
    overrides: dict[str, Any] = {}
    for name in ("fusion", "bm25_weight", "vector_weight", "rrf_k", "candidates"):
        value = getattr(args, name)
        if value is not None:
            overrides[name] = value
    if args.column_weights:
        overrides["column_weights"] = tuple(args.column_weights)
    return SearchSettings(**overrides)


def _prepare(args: argparse.Namespace, workdir: Path, console: Console) -> tuple[Dataset, Path]:
    vault = workdir / "vault"
    if args.dataset == "paraphrase":
        count = extract_obsidian_hub(HUB_ARCHIVE, vault)
        dataset = load_paraphrase(args.split)
    else:
        folder = Path(args.dataset)
        count = write_beir_vault(folder, vault)
        dataset = load_beir(folder, args.split)
    console.print(
        f"{dataset.name}/{dataset.split}: {len(dataset.queries)} queries, "
        f"{sum(len(v) for v in dataset.qrels.values())} judgments, {count} notes in {vault}"
    )
    return dataset, vault


def _table(title: str, results: list[ModeResult]) -> Table:
    table = Table(title=title)
    rows = [metrics_row(r) for r in results]
    for column in rows[0]:
        table.add_column(column, justify="left" if column == "variant" else "right")
    for row in rows:
        table.add_row(*row.values())
    return table


async def _main(args: argparse.Namespace, console: Console) -> None:
    from signaldesk.retrieval.embedder import load_embedder

    workdir = args.keep_index or Path(tempfile.mkdtemp(prefix="sd-quality-"))
    workdir.mkdir(parents=True, exist_ok=True)
    dataset, vault = _prepare(args, workdir, console)
    index_kwargs: dict[str, Any] = {"db_path": str(workdir / "index.db")}
    if args.model:
        index_kwargs["model"] = args.model
    index = IndexSettings(**index_kwargs)
    embedder = load_embedder(index)
    started = time.perf_counter()
    report = await build_index(vault, index, embedder)
    console.print(f"index ready in {time.perf_counter() - started:.1f} s: {report}")
    search = _search_settings(args)
    if args.tune:
        from bench.quality.tune import tune

        await tune(dataset, vault, index, search, embedder, console)
        return
    results = []
    for mode in args.modes.split(","):
        label = f"{mode} ({search.fusion})" if mode == "hybrid" else f"{mode} only"
        results.append(await run_mode(dataset, vault, index, search, embedder, mode, label))
    console.print(_table(f"{dataset.name} {dataset.split} — model {embedder.name}", results))


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.WARNING)
    args = _args(argv)
    console = Console()
    anyio.run(_main, args, console)
    command = "python -m bench.quality " + shlex.join(argv if argv is not None else sys.argv[1:])
    console.print(f"reproduce: [bold]{command}[/]", highlight=False)


if __name__ == "__main__":
    main()
