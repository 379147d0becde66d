"""Team mode under load: ``python -m bench.team_mcp``.

Two vaults (the Obsidian Hub and the English tldr pages, ``shared/data/vaults``) share one
PostgreSQL index. Half of each is indexed first; then the other half is written and two
``signaldesk index`` processes index the two vaults at the same time while 8 MCP clients
(the SDK's streamable-HTTP client, each with its own token: 3 may read the Hub only, 3 the
tldr pages only, 2 both) run 100 searches each against one ``signaldesk mcp --http``.
Prints the errors (tool errors and transport failures), every result outside the token's
vaults, the search latency per client kind, and the indexers' times; then checks that
each vault's note count in the index equals its files.

Options: ``--searches N`` (per client), ``--clients N``, ``--pg-dsn DSN`` (a server of your
own; default: a pgserver in /tmp/pgindex), ``--keep DIR``, ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from bench.pg_server import bench_database
from signaldesk.mcp_server.tokens import token_digest
from signaldesk.postgres import PostgresSettings

__all__ = ["Sources", "main", "run_team_load", "shared_sources"]

_REPO = Path(__file__).resolve().parent.parent
_DATA = _REPO.parent / "shared" / "data" / "vaults"
# Words both vaults use, so a search that leaked across vaults would show it.
_QUERIES = [
    "install a plugin",
    "git commit history",
    "list files in a folder",
    "theme css snippet",
    "search and replace text",
    "markdown links",
    "create a new note",
    "sync between devices",
    "docker container logs",
    "keyboard shortcuts",
    "daily notes template",
    "copy files recursively",
    "graph view",
    "compress a directory",
    "python package manager",
    "backup",
    "dataview query",
    "network ports",
    "tags and aliases",
    "update all packages",
]


@dataclass
class ClientRun:
    name: str
    vaults: frozenset[str]
    seed: int
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    results: int = 0


def _extract(root: Path) -> tuple[list[Path], list[Path]]:
    """The two vaults' notes (Hub, tldr English pages) extracted under ``root``."""
    hub, tldr = root / "hub-src", root / "tldr-src"
    with tarfile.open(_DATA / "obsidian-hub.tar.gz") as archive:
        archive.extractall(hub, filter="data")
    with tarfile.open(_DATA / "tldr-pages.tar.gz") as archive:
        members = [m for m in archive.getmembers() if m.name.startswith("files/pages/")]
        archive.extractall(tldr, members=members, filter="data")
    return sorted((hub / "vault").rglob("*.md")), sorted((tldr / "files" / "pages").rglob("*.md"))


def _place(files: list[Path], source: Path, vault: Path) -> None:
    for path in files:
        target = vault / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def _config(postgres: PostgresSettings, name: str | None, tokens: str = "") -> str:
    head = f'[vault]\nname = "{name}"\n\n' if name else ""
    return f'{head}[index]\nbackend = "postgres"\n\n[postgres]\ndsn = "{postgres.dsn}"\n\n{tokens}'


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(_REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["HF_HUB_OFFLINE"] = "1"
    for name in ("SIGNALDESK_CONFIG", "SIGNALDESK_VAULT"):
        env.pop(name, None)
    return env


def _cli(vault: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "signaldesk", "--vault", str(vault), *args]


def _index(vault: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(_cli(vault, "index"), capture_output=True, env=_env(), timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"index of {vault.name} failed:\n{done.stderr.decode()[-2000:]}")
    return time.perf_counter() - started


def _clients(n: int) -> list[tuple[str, frozenset[str], str]]:
    """(name, vaults, token) for ``n`` clients: 3/8 Hub only, 3/8 tldr only, the rest both."""
    kinds = [frozenset({"hub"})] * 3 + [frozenset({"tldr"})] * 3 + [frozenset({"hub", "tldr"})] * 2
    return [
        (f"client{i}", kinds[i % len(kinds)], f"bench-token-{i:02d}-0123456789abcdef")
        for i in range(n)
    ]


def _tokens(clients: list[tuple[str, frozenset[str], str]]) -> str:
    entries = []
    for name, vaults, token in clients:
        listed = ", ".join(f'"{v}"' for v in sorted(vaults))
        entries.append(
            f'[[mcp.tokens]]\nname = "{name}"\ntoken_sha256 = "{token_digest(token).hex()}"\n'
            f"vaults = [{listed}]\n"
        )
    return "\n".join(entries)


async def _search_load(url: str, run: ClientRun, token: str, searches: int) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    try:
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            for i in range(searches):
                query = _QUERIES[(i + run.seed) % len(_QUERIES)]
                started = time.perf_counter()
                try:
                    result = await client.call_tool("search", {"query": query, "limit": 10})
                except Exception as exc:  # a transport failure counts as an error
                    run.errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                run.latencies.append((time.perf_counter() - started) * 1000)
                if result.is_error:
                    run.errors.append(str(result.content)[:200])
                    continue
                for hit in (result.structured_content or {}).get("results", []):
                    run.results += 1
                    if hit["path"].split("/", 1)[0] not in run.vaults:
                        run.leaks.append(hit["path"])
    except Exception as exc:
        run.errors.append(f"session: {type(exc).__name__}: {exc}")


class _Server:
    """``signaldesk mcp --http`` for ``folder``; its stderr is drained by a thread once it is
    ready (a full pipe would stall the server)."""

    MARKER = "signaldesk MCP server ready on "

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            _cli(folder, "mcp", "--http", "--port", "0"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert self.process.stderr is not None
        self._stderr = self.process.stderr
        self.url = ""
        for raw in iter(self._stderr.readline, b""):
            line = raw.decode(errors="replace")
            if self.MARKER in line:
                self.url = line.split(self.MARKER, 1)[1].strip()
                break
        self._drain = threading.Thread(target=self._stderr.read, daemon=True)
        self._drain.start()
        if not self.url:
            self.stop()
            raise SystemExit("the MCP server exited before it was ready")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self._drain.join(timeout=10)
        self._stderr.close()


def _indexed_counts(postgres: PostgresSettings) -> dict[str, int]:
    from signaldesk.postgres import connect

    with connect(postgres) as conn:
        rows = conn.execute("SELECT vault, count(*) FROM index_notes GROUP BY vault").fetchall()
    return {str(v): int(n) for v, n in rows}


# Each vault's notes and the folder they are relative to.
Sources = dict[str, tuple[list[Path], Path]]


def shared_sources(root: Path) -> Sources:
    """The Obsidian Hub as vault ``hub`` and the English tldr pages as vault ``tldr``."""
    hub_files, tldr_files = _extract(root)
    return {
        "hub": (hub_files, root / "hub-src" / "vault"),
        "tldr": (tldr_files, root / "tldr-src" / "files" / "pages"),
    }


async def run_team_load(
    root: Path, postgres: PostgresSettings, sources: Sources, *, clients: int, searches: int
) -> dict[str, Any]:
    """Index half of each source, then index the other halves concurrently while
    ``clients`` MCP clients run ``searches`` searches each; the figures as a dict."""
    vaults = {name: root / name for name in sources}
    for name, (files, source) in sources.items():
        vaults[name].mkdir()
        (vaults[name] / "signaldesk.toml").write_text(_config(postgres, name), encoding="utf-8")
        _place(files[: len(files) // 2], source, vaults[name])
    first = {name: _index(vault) for name, vault in vaults.items()}
    for name, (files, source) in sources.items():
        _place(files[len(files) // 2 :], source, vaults[name])

    tokens = _clients(clients)
    server_dir = root / "server"
    server_dir.mkdir()
    (server_dir / "signaldesk.toml").write_text(
        _config(postgres, None, _tokens(tokens)), encoding="utf-8"
    )
    server = _Server(server_dir, _env())
    url = server.url
    runs = [ClientRun(name, vaults_, i * 7) for i, (name, vaults_, _) in enumerate(tokens)]
    second: dict[str, float] = {}
    try:

        async def index_one(name: str) -> None:
            second[name] = await anyio.to_thread.run_sync(_index, vaults[name])

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for name in vaults:
                tg.start_soon(index_one, name)
            for run, (_, _, token) in zip(runs, tokens, strict=True):
                tg.start_soon(_search_load, url, run, token, searches)
        wall = time.perf_counter() - started
    finally:
        server.stop()
    on_disk = {name: len(list(v.rglob("*.md"))) for name, v in vaults.items()}
    indexed = _indexed_counts(postgres)
    by_kind: dict[str, list[float]] = {}
    for run in runs:
        by_kind.setdefault("+".join(sorted(run.vaults)), []).extend(run.latencies)
    return {
        "clients": clients,
        "searches_per_client": searches,
        "searches": sum(len(r.latencies) for r in runs),
        "errors": sum(len(r.errors) for r in runs),
        "error_samples": [e for r in runs for e in r.errors][:5],
        "results": sum(r.results for r in runs),
        "leaks": sum(len(r.leaks) for r in runs),
        "leak_samples": [p for r in runs for p in r.leaks][:5],
        "latency_ms": {
            kind: {
                "p50": round(statistics.median(values), 1),
                "p95": round(statistics.quantiles(values, n=20)[18], 1),
            }
            for kind, values in sorted(by_kind.items())
            if len(values) >= 2
        },
        "first_index_s": {k: round(v, 1) for k, v in first.items()},
        "concurrent_index_s": {k: round(v, 1) for k, v in second.items()},
        "wall_s": round(wall, 1),
        "notes_on_disk": on_disk,
        "notes_indexed": indexed,
        "load": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.team_mcp", description=__doc__)
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--pg-dsn", default=None)
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="team-mcp-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        with bench_database(args.pg_dsn, "bench_team_mcp") as postgres:
            report = anyio.run(
                lambda: run_team_load(
                    root,
                    postgres,
                    shared_sources(root),
                    clients=args.clients,
                    searches=args.searches,
                )
            )
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"team mode: {report['clients']} MCP clients x {report['searches_per_client']} "
            f"searches while two indexers write two vaults (load {report['load']})"
        )
        print(
            f"  searches {report['searches']}, errors {report['errors']}, results "
            f"{report['results']}, outside the token's vaults {report['leaks']}"
        )
        for kind, lat in report["latency_ms"].items():
            print(f"  search latency, tokens for {kind}: p50 {lat['p50']} ms, p95 {lat['p95']} ms")
        print(f"  first index (half of each vault) s: {report['first_index_s']}")
        print(f"  concurrent index (the other halves) s: {report['concurrent_index_s']}")
        print(f"  notes on disk {report['notes_on_disk']}, in the index {report['notes_indexed']}")
        for sample in report["error_samples"] + report["leak_samples"]:
            print(f"  ! {sample}")
        print("reproduce: python -m bench.team_mcp")
    ok = (
        report["errors"] == 0
        and report["leaks"] == 0
        and report["notes_on_disk"] == report["notes_indexed"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
