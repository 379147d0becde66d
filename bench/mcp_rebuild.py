"""MCP searches while the index is rebuilt: ``python -m bench.mcp_rebuild``.

The bar: 8 MCP clients x 100 searches during ``signaldesk index --full`` give 0 errors
and 0 empty answers for queries that had results before the rebuild, on both
transports. Each client searches fixed queries in turn (each with results before the
rebuild, checked first) while ``signaldesk index --full`` runs over and over in a
separate process; each client does at least ``--calls`` searches and goes on until
``--swaps`` rebuilds were published, so the searches span whole rebuilds and swaps.

* stdio: 8 ``signaldesk mcp`` subprocesses, one per client (that is how stdio clients
  start servers);
* HTTP: one ``signaldesk mcp --http`` subprocess and 8 clients.

The vault is the obsidian-hub vault from ``shared/data/vaults`` (6.5k real notes), or
``--vault``. Printed: searches, errors, empty answers, rebuilds completed during the
run and index generations the servers moved through, latency p50/p95, load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult

from signaldesk.mcp_server.models import SearchOutput
from signaldesk.retrieval.generations import read_pointer
from signaldesk.retrieval.settings import IndexSettings
from signaldesk.retrieval.store import index_base_path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data"
READY = "signaldesk MCP server ready on "
CANDIDATES = [
    "plugin settings",
    "daily notes template",
    "graph view",
    "dataview query",
    "sync across devices",
    "community plugins",
    "markdown links",
    "canvas",
    "theme css snippets",
    "backlinks",
    "publish",
    "vim mode",
]


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    env.pop("SIGNALDESK_CONFIG", None)
    return env


def _cli(vault: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "signaldesk", "--vault", str(vault), *args]


class Rebuilder:
    """`signaldesk index --full` over and over in a subprocess, until stopped."""

    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self.completed = 0
        self.failed: list[str] = []
        self.generations: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._proc: subprocess.Popen[bytes] | None = None

    def _loop(self) -> None:
        base = index_base_path(self.vault, IndexSettings())
        while not self._stop.is_set():
            self._proc = subprocess.Popen(
                _cli(self.vault, "index", "--full", "--json"),
                cwd=REPO,
                env=_env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            _, err = self._proc.communicate()
            if self._proc.returncode == 0:
                self.completed += 1
                self.generations.add(read_pointer(base).name)
            elif not self._stop.is_set():
                self.failed.append(err.decode(errors="replace")[-500:])

    def __enter__(self) -> Rebuilder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
        self._thread.join(60)


async def _search(client: Client, query: str) -> tuple[str | None, int, float]:
    started = time.perf_counter()
    result = await client.call_tool("search", {"query": query, "limit": 5})
    elapsed = time.perf_counter() - started
    if not isinstance(result, CallToolResult) or result.is_error:
        return (str(getattr(result, "structured_content", result))[:300], 0, elapsed)
    return None, SearchOutput.model_validate(result.structured_content).count, elapsed


async def _client_loop(
    client: Client,
    n: int,
    queries: list[str],
    calls: int,
    out: dict[str, list[object]],
    rebuilder: Rebuilder,
    swaps: int,
) -> None:
    """At least ``calls`` searches, and on until ``swaps`` rebuilds were published."""
    i = 0
    while i < calls or rebuilder.completed < swaps:
        query = queries[(n + i) % len(queries)]
        i += 1
        error, count, elapsed = await _search(client, query)
        out["latency"].append(elapsed)
        if error is not None:
            out["errors"].append(f"{query}: {error}")
        elif count == 0:
            out["empty"].append(query)


async def _usable_queries(client: Client) -> list[str]:
    found = []
    for query in CANDIDATES:
        error, count, _ = await _search(client, query)
        if error is None and count > 0:
            found.append(query)
    return found


async def run_stdio(vault: Path, clients: int, calls: int, swaps: int) -> dict[str, list[object]]:
    out: dict[str, list[object]] = {"latency": [], "errors": [], "empty": []}
    params = StdioServerParameters(
        command=sys.executable, args=_cli(vault, "mcp")[1:], env=_env(), cwd=REPO
    )
    async with Client(params) as probe:
        queries = await _usable_queries(probe)
    out["queries"] = list(queries)

    rebuilder = Rebuilder(vault)
    done = [0]

    async def one(n: int, ready: anyio.Event, go: anyio.Event) -> None:
        async with Client(params) as client:
            ready.set()
            await go.wait()
            await _client_loop(client, n, queries, calls, out, rebuilder, swaps)
        done[0] += 1

    go = anyio.Event()
    readies = [anyio.Event() for _ in range(clients)]
    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(one, n, readies[n], go)
        for ready in readies:
            await ready.wait()
        with rebuilder:
            go.set()
            # The clients run inside the task group; wait for them with the rebuilder on.
            while done[0] < clients:
                await anyio.sleep(0.2)
    out["rebuilds"] = [rebuilder.completed]
    out["generations"] = sorted(rebuilder.generations)
    out["rebuild_failures"] = rebuilder.failed
    return out


async def run_http(vault: Path, clients: int, calls: int, swaps: int) -> dict[str, list[object]]:
    out: dict[str, list[object]] = {"latency": [], "errors": [], "empty": []}
    proc = subprocess.Popen(
        _cli(vault, "mcp", "--http", "--port", "0"),
        cwd=REPO,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = None
    assert proc.stderr is not None
    for raw in iter(proc.stderr.readline, b""):
        line = raw.decode(errors="replace")
        if READY in line:
            url = line.split(READY, 1)[1].strip()
            break
    if url is None:
        raise SystemExit("the HTTP server did not start")
    drain = threading.Thread(target=lambda: proc.stderr and proc.stderr.read(), daemon=True)
    drain.start()
    try:
        async with Client(url) as probe:
            queries = await _usable_queries(probe)
        out["queries"] = list(queries)
        with Rebuilder(vault) as rebuilder:
            async with anyio.create_task_group() as tg:
                for n in range(clients):

                    async def one(n: int = n) -> None:
                        async with Client(url) as client:
                            await _client_loop(client, n, queries, calls, out, rebuilder, swaps)

                    tg.start_soon(one)
        out["rebuilds"] = [rebuilder.completed]
        out["generations"] = sorted(rebuilder.generations)
        out["rebuild_failures"] = rebuilder.failed
    finally:
        proc.terminate()
        proc.wait(30)
    return out


def _print(name: str, out: dict[str, list[object]], clients: int, calls: int) -> bool:
    latency = sorted(float(x) for x in out["latency"])  # type: ignore[arg-type]
    p50 = statistics.median(latency) * 1000
    p95 = latency[int(0.95 * (len(latency) - 1))] * 1000
    print(
        f"{name}: {len(latency)} searches from {clients} clients (at least {calls} each), "
        f"{len(out['errors'])} errors, {len(out['empty'])} empty answers "
        f"(queries with results before: {len(out['queries'])}); "
        f"{out['rebuilds'][0]} full rebuild(s) completed meanwhile, generations "
        f"{', '.join(map(str, out['generations']))}; p50 {p50:.0f} ms, p95 {p95:.0f} ms",
        flush=True,
    )
    for line in [*out["errors"][:5], *out["empty"][:5], *out["rebuild_failures"][:2]]:
        print(f"   {line}")
    return not out["errors"] and not out["empty"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_rebuild")
    parser.add_argument("--vault", type=Path, help="Use (a copy of) this vault.")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--transports", default="stdio,http")
    parser.add_argument(
        "--swaps", type=int, default=2, help="Keep searching until this many rebuilds landed."
    )
    args = parser.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}")
    print(
        f"command: python -m bench.mcp_rebuild --clients {args.clients} --calls {args.calls} "
        f"--swaps {args.swaps}"
    )
    with tempfile.TemporaryDirectory(prefix="mcp-rebuild-") as tmp:
        vault = Path(tmp) / "vault"
        if args.vault:
            shutil.copytree(args.vault, vault, symlinks=True)
        else:
            with tarfile.open(DATA / "vaults" / "obsidian-hub.tar.gz") as archive:
                archive.extractall(tmp, filter="data")
        subprocess.run(_cli(vault, "index"), cwd=REPO, env=_env(), check=True, capture_output=True)
        ok = True
        for transport in args.transports.split(","):
            runner = run_stdio if transport == "stdio" else run_http
            out = anyio.run(runner, vault, args.clients, args.calls, args.swaps)
            ok = _print(transport, out, args.clients, args.calls) and ok
    print(f"load average at end: {os.getloadavg()}")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
