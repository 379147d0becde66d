"""``python -m bench.scale --backend postgres``: the SQLite and the PostgreSQL index side by side.

One run over the same ~45k-note vault (tldr-pages + the Obsidian Hub, about 47k chunks):
the full index on each backend (wall and CPU seconds, chunks per second), the size of
each store, an incremental run after editing 50 notes and deleting 5, and warm query
latency (p50 / p95 wall milliseconds per mode over the same queries, both retrievers open
in this process, alternating query by query so that the machine's load falls on both
alike). The load average is printed beside every timing: on a shared machine wall times
are only comparable at similar load.

PostgreSQL: a pgserver started in /tmp/pgindex (``--pg-dsn`` for another server), the
database ``bench_scale`` re-created for the run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio

from bench.pg_server import bench_database
from bench.scale import _cpu_seconds, _db_bytes, _edit_and_delete, _load, _p50_p95, _queries
from signaldesk.postgres import PostgresSettings, connect
from signaldesk.retrieval.embedder import Embedder, load_embedder
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.pg_indexer import PgIndexer
from signaldesk.retrieval.pg_retriever import PgRetriever
from signaldesk.retrieval.records import IndexReport, SearchMode
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.retrieval.store import index_db_path

__all__ = ["run_side_by_side"]

_COMMAND = "python -m bench.scale --backend postgres"
_VAULT = "scale"


def _row(label: str, sqlite: str, postgres: str) -> None:
    print(f"{label:<46} {sqlite:>18} {postgres:>18}   load {_load()}")


def _timed(indexer: Indexer, full: bool) -> tuple[IndexReport, float, float]:
    cpu, start = _cpu_seconds(), time.perf_counter()
    report = anyio.run(lambda: indexer.run(full=full))
    return report, time.perf_counter() - start, _cpu_seconds() - cpu


def _pg_bytes(pg: PostgresSettings) -> int:
    with connect(pg) as conn:
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
            "WHERE c.relkind = 'r' AND c.relname LIKE 'index\\_%'"
        ).fetchone()
    return int(row[0] or 0)


async def _latency(
    vault: Path,
    settings: IndexSettings,
    pg: PostgresSettings,
    embedder: Embedder,
    queries: list[str],
) -> dict[str, dict[str, tuple[float, float]]]:
    search = SearchSettings()
    sqlite_side = await Retriever.open(vault, settings, search, embedder)
    pg_side = await PgRetriever.connect(pg, settings, search, embedder)
    out: dict[str, dict[str, tuple[float, float]]] = {"sqlite": {}, "postgres": {}}
    try:
        for retriever in (sqlite_side, pg_side):
            await retriever.warm_up()
        modes: tuple[SearchMode, ...] = ("bm25", "vector", "hybrid")
        for mode in modes:
            walls: dict[str, list[float]] = {"sqlite": [], "postgres": []}
            for query in queries:
                for name, retriever in (("sqlite", sqlite_side), ("postgres", pg_side)):
                    t0 = time.perf_counter()
                    await retriever.search(query, limit=10, mode=mode)
                    walls[name].append((time.perf_counter() - t0) * 1000)
            for name, values in walls.items():
                out[name][mode] = _p50_p95(values)
    finally:
        await sqlite_side.aclose()
        await pg_side.aclose()
    return out


def run_side_by_side(vault: Path, workers: int | None, n_queries: int, dsn: str | None) -> None:
    settings = IndexSettings()
    embedder = load_embedder(settings)
    files = sum(1 for _ in vault.rglob("*.md"))
    print(f"vault {vault}: {files} .md files; {os.cpu_count()} CPUs; load {_load()}")
    print(f"model {embedder.name} ({embedder.dimensions} dims); command: {_COMMAND}\n")
    with bench_database(dsn, "bench_scale") as pg:
        sqlite_indexer = Indexer(vault, settings, embedder, workers=workers)
        pg_indexer = PgIndexer(vault, _VAULT, settings, pg, embedder, workers=workers)
        print(f"{'':<46} {'sqlite':>18} {'postgres':>18}")
        load_before = _load()
        s_full, s_wall, s_cpu = _timed(sqlite_indexer, True)
        load_between = _load()
        p_full, p_wall, p_cpu = _timed(pg_indexer, True)
        size, chunks = _db_bytes(index_db_path(vault, settings))
        print(
            f"(load before / between / after the full indexes: {load_before} / "
            f"{load_between} / {_load()})"
        )
        _row("notes indexed", str(s_full.added), str(p_full.added))
        _row("chunks", str(chunks), str(chunks))
        _row("full index: wall seconds", f"{s_wall:.1f}", f"{p_wall:.1f}")
        _row("full index: CPU seconds (this process + workers)", f"{s_cpu:.1f}", f"{p_cpu:.1f}")
        _row(
            "full index: chunks per second (wall)",
            f"{chunks / s_wall:.0f}",
            f"{chunks / p_wall:.0f}",
        )
        _row(
            "store bytes per chunk",
            f"{size / max(1, chunks):.0f}",
            f"{_pg_bytes(pg) / max(1, chunks):.0f}",
        )
        queries = _queries(index_db_path(vault, settings), n_queries)
        _edit_and_delete(vault, index_db_path(vault, settings), 50, 5)
        s_edit, s_ewall, _ = _timed(sqlite_indexer, False)
        p_edit, p_ewall, _ = _timed(pg_indexer, False)
        _row("edit 50 + delete 5: wall seconds", f"{s_ewall:.2f}", f"{p_ewall:.2f}")
        _row(
            "  changed / deleted",
            f"{s_edit.changed} / {s_edit.deleted}",
            f"{p_edit.changed} / {p_edit.deleted}",
        )
        latency = anyio.run(_latency, vault, settings, pg, embedder, queries)
        for mode in ("bm25", "vector", "hybrid"):
            s50, s95 = latency["sqlite"][mode]
            p50, p95 = latency["postgres"][mode]
            _row(
                f"warm {mode} p50 / p95 ms ({len(queries)} queries)",
                f"{s50:.1f} / {s95:.1f}",
                f"{p50:.1f} / {p95:.1f}",
            )
