"""Search latency through the MCP server, beside the retriever called in process.

Measures, on one vault:

- in process: ``Retriever.search`` (the floor: no protocol, no process boundary);
- MCP over stdio: ``signaldesk mcp`` as a subprocess, driven by the SDK's client;
- MCP over streamable HTTP: ``signaldesk mcp --http --port 0`` as a subprocess;

p50 / p95 over ``--calls`` searches each, the start-up time of each server, and the
first call after start against a warm call (bar: the first call is at most 3x a
warm one, because the server warms the model and the index before it answers).

Run from the repository root::

    python -m bench.mcp_latency                 # a generated 300-note vault
    python -m bench.mcp_latency --vault ~/notes # your vault (indexed first if it has no index)
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult

from signaldesk.mcp_server import McpSettings, build_server
from signaldesk.mcp_server.models import SearchOutput
from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings

QUERIES = [
    "sqlite write-ahead log readers",
    "rust borrow checker lifetimes",
    "kubernetes pod scheduling",
    "python asyncio task groups",
    "security advisory upgrade",
    "design system typography",
    "hybrid search ranking fusion",
    "model context protocol tools",
    "how to set a busy timeout",
    "release notes new version",
]
FIRST_QUERY = "what changed in the deployment checklist"
READY_MARKER = "signaldesk MCP server ready on "
REPO_ROOT = Path(__file__).resolve().parent.parent
FIRST_CALL_BAR = 3.0


@dataclass
class Figures:
    """One way of searching, measured."""

    name: str
    startups_s: list[float]
    firsts_ms: list[float]
    samples_ms: list[float]

    @property
    def startup_s(self) -> float:
        return statistics.median(self.startups_s)

    @property
    def first_ms(self) -> float:
        """The first call after a start, median over the starts."""
        return statistics.median(self.firsts_ms)

    @property
    def p50(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def p95(self) -> float:
        ordered = sorted(self.samples_ms)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]

    @property
    def first_ratio(self) -> float:
        return self.first_ms / self.p50 if self.p50 else float("inf")


# -- the vault ------------------------------------------------------------------------


_TOPICS = {
    "sqlite": "write-ahead log checkpoint readers writer busy timeout page cache",
    "rust": "borrow checker lifetimes ownership traits generics cargo",
    "kubernetes": "pod scheduling deployment service ingress node affinity",
    "python": "asyncio task groups cancellation typing dataclasses",
    "security": "advisory upgrade patch vulnerability disclosure mitigation",
    "design": "design system typography spacing colour tokens components",
    "search": "hybrid search ranking fusion bm25 embeddings recall",
    "mcp": "model context protocol tools resources prompts transports",
}


def generate_vault(root: Path, notes: int) -> Path:
    """A vault of ``notes`` generated notes in a few folders (deterministic)."""
    vault = root / "vault"
    folders = ["01-projects", "02-areas", "03-resources", "04-archive"]
    names = list(_TOPICS)
    for i in range(notes):
        topic = names[i % len(names)]
        words = _TOPICS[topic].split()
        folder = vault / folders[i % len(folders)] / topic
        folder.mkdir(parents=True, exist_ok=True)
        sections = []
        for j in range(4):
            body = " ".join(words[(i + j + k) % len(words)] for k in range(90))
            sections.append(f"## {topic.title()} part {j}\n\nNote {i} on {topic}: {body}.")
        front = f"---\ntitle: {topic} note {i}\ntype: note\ntags: [{topic}]\n---\n"
        (folder / f"{topic}-{i:04d}.md").write_text(
            front + f"# {topic} note {i}\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8"
        )
    return vault


def ensure_index(vault: Path, settings: IndexSettings) -> None:
    db = Path(settings.db_path)
    db = db if db.is_absolute() else vault / db
    if db.is_file():
        return
    print(f"no index at {db}: indexing {vault} first ...", flush=True)
    started = time.perf_counter()
    report = Indexer(vault, settings, LazyEmbedder(settings)).run_sync()
    print(f"  indexed {report.scanned} notes in {time.perf_counter() - started:.1f} s", flush=True)


# -- measuring --------------------------------------------------------------------------


async def _timed(call: Awaitable[object]) -> float:
    """Milliseconds ``call`` (a coroutine not yet started) takes."""
    started = time.perf_counter()
    await call
    return (time.perf_counter() - started) * 1000


async def measure_in_process(vault: Path, calls: int) -> Figures:
    index, search = IndexSettings(), SearchSettings()
    started = time.perf_counter()
    retriever = await Retriever.open(vault, index, search, LazyEmbedder(index))
    try:
        await retriever.warm_up()
        startup = time.perf_counter() - started
        first = await _timed(retriever.search(FIRST_QUERY, limit=5, max_tokens=2000))
        samples = [
            await _timed(retriever.search(QUERIES[i % len(QUERIES)], limit=5, max_tokens=2000))
            for i in range(calls)
        ]
        await _prime_client_library(retriever, vault)
    finally:
        await retriever.aclose()
    return Figures("in-process Retriever.search", [startup], [first], samples)


async def _prime_client_library(retriever: Retriever, vault: Path) -> None:
    """One in-memory session, so the *client* library's one-off costs (imports, the JSON
    Schema metaschema) are paid before the subprocess servers are timed: a long-running
    AI tool has paid them long before it starts a server. What is measured after this is
    the server's first call."""
    server = build_server(retriever, vault=vault, settings=McpSettings())
    async with Client(server) as client:
        await client.list_tools()
        await _search(client, "prime the client library")


async def _search(client: Client, query: str) -> None:
    result = await client.call_tool("search", {"query": query, "limit": 5})
    if not isinstance(result, CallToolResult) or result.is_error:
        raise RuntimeError(f"search failed: {result}")


async def _first_then_warm(
    client: Client, started: float, calls: int
) -> tuple[float, float, list[float]]:
    """Start-up (to initialize answered and tools listed, as every client does on
    connect), the first search, then ``calls`` warm searches."""
    await client.list_tools()
    startup = time.perf_counter() - started
    # The Python client compiles a tool's output schema (a JSON Schema validator, tens
    # of ms) on its first result in each session. That is the client's cost, not the
    # server's: pay it now, through the client's public API, so that the first call
    # below measures the server's first call.
    empty = SearchOutput(query="", count=0, results=[]).model_dump(mode="json")
    await client.session.validate_tool_result(
        "search", CallToolResult(content=[], structured_content=empty)
    )
    first = await _timed(_search(client, FIRST_QUERY))
    samples = [await _timed(_search(client, QUERIES[i % len(QUERIES)])) for i in range(calls)]
    return startup, first, samples


def _server_command(vault: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "signaldesk", "--vault", str(vault), "mcp", *extra]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


async def measure_stdio(vault: Path, calls: int, starts: int) -> Figures:
    command = _server_command(vault)
    params = StdioServerParameters(command=command[0], args=command[1:], env=_env(), cwd=REPO_ROOT)
    figures = Figures("MCP stdio (subprocess)", [], [], [])
    for n in range(starts):
        started = time.perf_counter()
        with open(os.devnull, "w") as quiet:
            # `async with` returns once `initialize` is answered, which the server does
            # only after its warm-up: that is the start-up time a client sees.
            async with Client(stdio_client(params, errlog=quiet)) as client:
                startup, first, samples = await _first_then_warm(
                    client, started, calls if n == 0 else 0
                )
        figures.startups_s.append(startup)
        figures.firsts_ms.append(first)
        figures.samples_ms.extend(samples)
    return figures


@asynccontextmanager
async def _http_server(vault: Path) -> AsyncIterator[tuple[str, float]]:
    """The server's URL once it is ready, and when it was launched."""
    started = time.perf_counter()
    process = subprocess.Popen(
        _server_command(vault, "--http", "--port", "0"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=REPO_ROOT,
    )
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert process.stderr is not None
        for raw in iter(process.stderr.readline, b""):
            line = raw.decode("utf-8", errors="replace")
            if not found and READY_MARKER in line:
                found.append(line.split(READY_MARKER, 1)[1].strip())
                ready.set()
        ready.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        with anyio.fail_after(120):
            await anyio.to_thread.run_sync(ready.wait)
        if not found:
            raise RuntimeError("the HTTP server exited before it was ready")
        yield found[0], started
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        reader.join(timeout=5)


async def measure_http(vault: Path, calls: int, starts: int) -> Figures:
    figures = Figures("MCP streamable HTTP (subprocess)", [], [], [])
    for n in range(starts):
        async with _http_server(vault) as (url, started), Client(url) as client:
            startup, first, samples = await _first_then_warm(
                client, started, calls if n == 0 else 0
            )
        figures.startups_s.append(startup)
        figures.firsts_ms.append(first)
        figures.samples_ms.extend(samples)
    return figures


# -- report -----------------------------------------------------------------------------


def report(rows: list[Figures], vault: Path, calls: int, command: str) -> bool:
    print()
    print(f"vault: {vault}    searches per row: {calls} (limit 5, max_tokens 2000)")
    print("start: to the server answering (MCP: initialize + tools/list); first: median of starts")
    print(f"{'':36} {'start s':>8} {'first ms':>9} {'p50 ms':>8} {'p95 ms':>8} {'first/p50':>10}")
    ok = True
    for row in rows:
        startup = f"{row.startup_s:8.2f}"
        print(
            f"{row.name:36} {startup} {row.first_ms:9.1f} {row.p50:8.1f} {row.p95:8.1f} "
            f"{row.first_ratio:9.2f}x"
        )
        if row.name.startswith("MCP") and row.first_ratio > FIRST_CALL_BAR:
            ok = False
    base = rows[0].p50
    for row in rows[1:]:
        print(f"  {row.name}: +{row.p50 - base:.1f} ms p50 over in-process")
    verdict = "PASS" if ok else "FAIL"
    print(f"first call <= {FIRST_CALL_BAR:g}x a warm call over MCP: {verdict}")
    print(f"command: {command}")
    return ok


async def run(vault: Path, calls: int, starts: int) -> bool:
    rows = [await measure_in_process(vault, calls)]
    rows.append(await measure_stdio(vault, calls, starts))
    rows.append(await measure_http(vault, calls, starts))
    return report(
        rows, vault, calls, shlex.join([sys.executable, "-m", "bench.mcp_latency", *sys.argv[1:]])
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, help="an existing vault (default: a generated one)")
    parser.add_argument("--notes", type=int, default=300, help="notes in the generated vault")
    parser.add_argument("--calls", type=int, default=100, help="searches per measurement (>= 100)")
    parser.add_argument(
        "--starts", type=int, default=3, help="server starts per transport (first-call median)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    calls = max(100, args.calls)
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmp:
        if args.vault is not None:
            vault = args.vault.expanduser().resolve()
        else:
            vault = generate_vault(Path(tmp), args.notes)
            print(f"generated {args.notes} notes in {vault}", flush=True)
        ensure_index(vault, IndexSettings())
        ok = anyio.run(run, vault, calls, max(1, args.starts))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
