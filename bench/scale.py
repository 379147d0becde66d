"""Index scale benchmark: ``python -m bench.scale [--keep DIR]``.

Extracts the two test corpora (``shared/data/vaults/tldr-pages.tar.gz`` and
``obsidian-hub.tar.gz``, about 45k notes) into one temporary vault, then in one
process measures: the full index (wall time, CPU time, chunks per second, peak
RSS), the database size per chunk, a no-op incremental run, an incremental run
after editing 50 notes and deleting 5, the same no-op run as a fresh
``signaldesk index`` process, and query latency (p50/p95 wall and CPU per search
mode over ``--queries`` queries in one warm process, the BM25 leg's own time, the
cold open + first query, and a one-shot ``signaldesk search --json`` in a new
process: wall, CPU and peak RSS, in-process and then with a ``signaldesk serve``
running on the vault, which answers it).

Each figure is printed with the command that reproduces it. The machine's load
average is printed too: on a shared machine wall times are only comparable at
similar load; CPU times are steadier.

Options: ``--keep DIR`` extracts into DIR and leaves it (and the index) there
(``--latency-only`` then skips the full index and measures queries on it);
``--workers N`` sets the indexer's worker processes; ``--queries N``; ``--model NAME``
indexes with another ``[index] model`` (e.g. ``minilm-l6-onnx``, the transformer tier).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from bench.serving import QUIET_SCHEDULE, serving
from signaldesk.retrieval.embedder import BUNDLED_MODEL_NAME, Embedder, load_embedder
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.records import IndexReport, SearchMode
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.retrieval.store import connect, index_db_path

__all__ = ["main"]

_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "vaults"
_TARBALLS = ("tldr-pages.tar.gz", "obsidian-hub.tar.gz")
_COMMAND = "python -m bench.scale"  # with the run's own arguments once main() has them


def _cpu_seconds() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _peak_rss_mb() -> tuple[float, float]:
    """Peak resident set of this process and of its largest child, in MB (Linux: KB units)."""
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return me, kids


def _extract(data: Path, vault: Path) -> None:
    vault.mkdir(parents=True, exist_ok=True)
    for name in _TARBALLS:
        with tarfile.open(data / name) as archive:
            archive.extractall(vault, filter="data")


def _timed(fn: Callable[[], IndexReport]) -> tuple[IndexReport, float, float]:
    cpu, start = _cpu_seconds(), time.perf_counter()
    report = fn()
    return report, time.perf_counter() - start, _cpu_seconds() - cpu


def _db_bytes(db_path: Path) -> tuple[int, int]:
    conn = connect(db_path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        chunks = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    finally:
        conn.close()
    size = sum(
        p.stat().st_size for p in (db_path, db_path.with_name(db_path.name + "-wal")) if p.exists()
    )
    return size, chunks


def _edit_and_delete(vault: Path, db_path: Path, edits: int, deletes: int) -> None:
    conn = connect(db_path, readonly=True)
    try:
        paths = sorted(r[0] for r in conn.execute("SELECT path FROM notes"))
    finally:
        conn.close()
    rng = random.Random(42)
    chosen = rng.sample(paths, edits + deletes)
    for rel in chosen[:edits]:
        with (vault / rel).open("a", encoding="utf-8") as handle:
            handle.write(f"\n\nEdited for the scale benchmark: {rng.random():.6f}\n")
    for rel in chosen[edits:]:
        (vault / rel).unlink()


def _queries(db_path: Path, n: int) -> list[str]:
    """Deterministic queries: note titles and a few words from chunk texts."""
    conn = connect(db_path, readonly=True)
    try:
        titles = [r[0] for r in conn.execute("SELECT title FROM notes ORDER BY path")]
        texts = [r[0] for r in conn.execute("SELECT text FROM chunks ORDER BY id LIMIT 20000")]
    finally:
        conn.close()
    rng = random.Random(7)
    out: list[str] = []
    for title in rng.sample(titles, n // 2):
        out.append(title)
    for text in rng.sample(texts, n - len(out)):
        words = [w for w in text.split() if w.isalpha()]
        start = rng.randrange(max(1, len(words) - 5)) if words else 0
        out.append(" ".join(words[start : start + 5]) or "search")
    return out


def _p50_p95(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


async def _latency(
    vault: Path, settings: IndexSettings, embedder: Embedder, queries: list[str]
) -> dict[str, Any]:
    """Cold and warm query latency in this process: wall and CPU milliseconds per query,
    and the BM25 leg's own time inside a hybrid search (``explain`` timings)."""
    from signaldesk.retrieval.retriever import Retriever

    search = SearchSettings()
    # The model is loaded, its whole tokenizer too (a batch): cold means the index side.
    embedder.encode(["warm up", "warm up"])
    start = time.perf_counter()
    retriever = await Retriever.open(vault, settings, search, embedder)
    try:
        await retriever.search(queries[0], limit=10, mode="hybrid")
        out: dict[str, Any] = {"cold_first_query_s": time.perf_counter() - start}
    finally:
        await retriever.aclose()
    modes: tuple[SearchMode, ...] = ("bm25", "vector", "hybrid")
    for mode in modes:
        # A warm retriever of its own per mode: what one mode's queries leave in memory
        # (their phrases' row counts, bm25_topk.PhraseCounts) must not speed up the next.
        async with await Retriever.open(vault, settings, search, embedder) as retriever:
            await retriever.warm_up()
            wall: list[float] = []
            cpu: list[float] = []
            for query in queries:
                c0, t0 = time.process_time(), time.perf_counter()
                await retriever.search(query, limit=10, mode=mode)
                wall.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
            out[mode] = _p50_p95(wall)
            out[f"{mode}_cpu"] = _p50_p95(cpu)
    legs: dict[str, list[float]] = {}
    async with await Retriever.open(vault, settings, search, embedder) as retriever:
        await retriever.warm_up()
        for query in queries:
            exp = await retriever.explain(query, limit=10, mode="hybrid")
            for leg, ms in exp.timings_ms.items():
                legs.setdefault(leg, []).append(ms)
    out["legs"] = {leg: _p50_p95(values) for leg, values in legs.items()}
    return out


# Runs argv[1:] as its child and prints its wall seconds, CPU seconds, peak RSS (KB)
# and exit code. Why a small parent of its own: a child's peak RSS starts at the
# size of the process it was forked (or vforked) from, and this benchmark is large.
_MEASURE = """
import os, sys, time
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
cpu = usage.ru_utime + usage.ru_stime
print(wall, cpu, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def _one_shot(
    command: list[str], runs: int = 5, env: dict[str, str] | None = None
) -> tuple[float, float, float]:
    """Median wall seconds, median CPU seconds and peak RSS MB of ``command`` in new processes.

    The processes may write Python's bytecode cache, as an installed copy has it: under
    ``PYTHONDONTWRITEBYTECODE`` every run would recompile each module edited since its
    cache was written (0.1-0.2 s a search, measured on this checkout), a cost no user pays.
    """
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    walls: list[float] = []
    cpus: list[float] = []
    peak = 0.0
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", _MEASURE, *command],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        wall, cpu, rss_kb, code = done.stdout.split()
        if int(code) != 0:
            raise RuntimeError(f"{' '.join(command)} exited with {code}")
        walls.append(float(wall))
        cpus.append(float(cpu))
        peak = max(peak, int(rss_kb) / 1024)
    return statistics.median(walls), statistics.median(cpus), peak


def _save_settings(base: list[str], query: str) -> None:
    """One search, not counted, before the timed ones: the config here is new, and the
    first search of a config validates it and saves the settings every later search
    reads (pipeline/config_snapshot.py), as `signaldesk index` does for a user's."""
    subprocess.run([*base, "search", query, "--json"], capture_output=True, check=True)


def _row(label: str, value: str, command: str | None = None) -> None:
    print(f"{label:<44} {value:>22}   [{command or _COMMAND}]")


def run(vault: Path, workers: int | None, n_queries: int, model: str = BUNDLED_MODEL_NAME) -> None:
    settings = IndexSettings(model=model)
    embedder = load_embedder(settings)
    indexer = Indexer(vault, settings, embedder, workers=workers)
    files = sum(1 for _ in vault.rglob("*.md"))
    print(f"vault {vault}: {files} .md files; {os.cpu_count()} CPUs; load {os.getloadavg()}")
    print(f"model {embedder.name} ({embedder.dimensions} dims); workers {indexer.workers}\n")

    full, full_wall, full_cpu = _timed(lambda: anyio.run(lambda: indexer.run(full=True)))
    rss_main, rss_child = _peak_rss_mb()
    # Read after the full index: over an existing index it writes a new generation and
    # swaps it in (retrieval/generations.py), so the live file is not the one before.
    db_path = index_db_path(vault, settings)
    size, chunks = _db_bytes(db_path)
    noop, noop_wall, noop_cpu = _timed(lambda: anyio.run(indexer.run))
    _edit_and_delete(vault, db_path, 50, 5)
    edit, edit_wall, edit_cpu = _timed(lambda: anyio.run(indexer.run))
    with tempfile.TemporaryDirectory(prefix="signaldesk-scale-config-") as config_dir:
        # The same model as above, or the new process would see a model change and rebuild.
        config = Path(config_dir) / "signaldesk.toml"
        config.write_text(f"[index]\nmodel = {json.dumps(model)}\n", encoding="utf-8")
        command = [sys.executable, "-m", "signaldesk", "--vault", str(vault)]
        cli_start = time.perf_counter()
        subprocess.run(
            [*command, "--config", str(config), "index", "--json"],
            check=True,
            capture_output=True,
            env={**os.environ, "SIGNALDESK_CONFIG": ""},
        )
        cli_noop = time.perf_counter() - cli_start

    _row("files scanned / notes indexed", f"{full.scanned} / {full.added}")
    _row("chunks", str(chunks))
    _row("full index: wall seconds", f"{full_wall:.1f}")
    _row("full index: CPU seconds (all processes)", f"{full_cpu:.1f}")
    _row("full index: chunks per second (wall)", f"{chunks / full_wall:.0f}")
    _row("peak RSS MB: indexer / largest worker", f"{rss_main:.0f} / {rss_child:.0f}")
    _row("database bytes", f"{size:,}")
    _row("database bytes per chunk", f"{size / max(1, chunks):.0f}")
    _row("load average after the full index", " ".join(f"{x:.1f}" for x in os.getloadavg()))
    _row("no-op incremental: wall / CPU seconds (warm)", f"{noop_wall:.2f} / {noop_cpu:.2f}")
    assert noop.chunks_embedded == 0 and noop.unchanged == noop.scanned
    _row(
        "no-op incremental: seconds (new process)",
        f"{cli_noop:.2f}",
        f"time signaldesk --vault {vault} index",
    )
    _row("edit 50 + delete 5: wall / CPU seconds", f"{edit_wall:.2f} / {edit_cpu:.2f}")
    _row(
        "  changed / deleted / embedded / reused",
        f"{edit.changed} / {edit.deleted} / {edit.chunks_embedded} / {edit.chunks_reused}",
    )
    if n_queries:
        _report_latency(vault, settings, embedder, model, n_queries)


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _report_latency(
    vault: Path, settings: IndexSettings, embedder: Embedder, model: str, n_queries: int
) -> None:
    db_path = index_db_path(vault, settings)
    queries = _queries(db_path, n_queries)
    before = _load()
    latency = anyio.run(_latency, vault, settings, embedder, queries)
    _row("load average before / after the queries", f"{before} / {_load()}")
    _row("cold open + first hybrid query ms", f"{latency['cold_first_query_s'] * 1000:.0f}")
    for mode in ("bm25", "vector", "hybrid"):
        p50, p95 = latency[mode]
        c50, c95 = latency[f"{mode}_cpu"]
        _row(f"{mode} query p50 / p95 ms ({n_queries} queries)", f"{p50:.1f} / {p95:.1f}")
        _row(f"  {mode} CPU ms per query p50 / p95", f"{c50:.1f} / {c95:.1f}")
    for leg, (p50, p95) in latency["legs"].items():
        _row(f"  hybrid: {leg} ms p50 / p95", f"{p50:.1f} / {p95:.1f}")
    with tempfile.TemporaryDirectory(prefix="signaldesk-scale-config-") as config_dir:
        config = Path(config_dir) / "signaldesk.toml"
        # The quiet schedule only matters to the serve of the forwarded runs; it is in the
        # in-process runs' config too, since serve answers a client of its own config only.
        config.write_text(
            f"[index]\nmodel = {json.dumps(model)}\n{QUIET_SCHEDULE}", encoding="utf-8"
        )
        base = [sys.executable, "-m", "signaldesk", "--vault", str(vault), "--config", str(config)]
        _save_settings(base, queries[0])

        def one_shot_rows(label: str, shown: str, digits: int) -> None:
            for mode in ("hybrid", "bm25"):
                command = [*base, "search", queries[1], "--json", "--limit", "10", "--mode", mode]
                wall, cpu, rss = _one_shot(command)
                _row(
                    label.format(mode=mode),
                    f"{wall:.{digits}f} / {cpu:.{digits}f} / {rss:.0f}",
                    f"{shown} search QUERY --json --mode {mode}",
                )

        one_shot_rows(
            "one-shot CLI search --json, {mode}: s / CPU s / MB", f"signaldesk --vault {vault}", 2
        )
        # The same commands with a `signaldesk serve` running on the vault: answered by it.
        with serving(base, vault, queries[0]):
            one_shot_rows(
                "  {mode}, a serve running (it answers): s / CPU s / MB",
                f"signaldesk --vault {vault} serve & signaldesk ...",
                3,
            )
    _row("load average after the one-shot runs", _load())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--keep", type=Path, help="extract into this folder and keep it")
    parser.add_argument("--data", type=Path, default=_DATA, help="folder with the tarballs")
    parser.add_argument("--workers", type=int, default=None, help="indexer worker processes")
    parser.add_argument("--queries", type=int, default=200, help="queries per search mode")
    parser.add_argument("--model", default=BUNDLED_MODEL_NAME, help="[index] model to index with")
    parser.add_argument(
        "--latency-only",
        action="store_true",
        help="with --keep: only bring the kept index up to date and measure queries",
    )
    parser.add_argument(
        "--backend",
        choices=["sqlite", "postgres"],
        default="sqlite",
        help="postgres: the SQLite and the PostgreSQL index side by side (bench/scale_pg.py)",
    )
    parser.add_argument(
        "--pg-dsn", help="admin DSN of a PostgreSQL with pgvector (default: pgserver)"
    )
    args = parser.parse_args(argv)
    global _COMMAND
    given = sys.argv[1:] if argv is None else argv
    _COMMAND = shlex.join(["python", "-m", "bench.scale", *given])
    if args.backend == "postgres":
        from bench.scale_pg import run_side_by_side

        side_by_side = run_side_by_side
    if args.keep:
        vault = args.keep.resolve()
        if not vault.exists() or not any(vault.iterdir()):
            _extract(args.data, vault)
        if args.latency_only:
            settings = IndexSettings(model=args.model)
            embedder = load_embedder(settings)
            anyio.run(Indexer(vault, settings, embedder, workers=args.workers).run)
            print(f"vault {vault}; {os.cpu_count()} CPUs; model {embedder.name}")
            _report_latency(vault, settings, embedder, args.model, args.queries or 200)
            return
        if args.backend == "postgres":
            side_by_side(vault, args.workers, args.queries, args.pg_dsn)
            return
        run(vault, args.workers, args.queries, args.model)
        return
    tmp = Path(tempfile.mkdtemp(prefix="signaldesk-scale-"))
    try:
        vault = tmp / "vault"
        _extract(args.data, vault)
        if args.backend == "postgres":
            side_by_side(vault, args.workers, args.queries, args.pg_dsn)
            return
        run(vault, args.workers, args.queries, args.model)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
