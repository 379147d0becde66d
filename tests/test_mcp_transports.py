"""`signaldesk mcp` over its real transports: a stdio subprocess and an HTTP subprocess,
driven by the SDK's client; Host/Origin checks, the token rule, and a load run
while the index is rebuilt."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult
from mcp_vault import (
    FORBIDDEN_TEXT,
    INIT_REQUEST,
    POST_HEADERS,
    REPO_ROOT,
    SECRETS,
    build_vault,
    cli_args,
    http_server,
    index_vault,
    server_env,
    traversal_variants,
)

from signaldesk.mcp_server import TOOL_NAMES, McpSettings, TransportConfigError, run_http
from signaldesk.mcp_server.models import ReadNoteOutput, SearchOutput
from signaldesk.mcp_server.tokens import load_principals
from signaldesk.retrieval.settings import IndexSettings, SearchSettings

pytestmark = pytest.mark.anyio

TOKEN = "test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def indexed_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    vault = build_vault(tmp_path_factory.mktemp("transports"))
    index_vault(vault)
    return vault


def everything(result: CallToolResult) -> str:
    return json.dumps(result.model_dump(mode="json"), ensure_ascii=False)


async def _call(client: Client, name: str, args: dict[str, Any]) -> CallToolResult:
    result = await client.call_tool(name, args)
    assert isinstance(result, CallToolResult)
    return result


async def exercise(client: Client, vault: Path) -> None:
    """The same checks over any transport: tools, a search, a read, refusals, secrets."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(TOOL_NAMES)
    assert all(t.annotations and t.annotations.read_only_hint for t in tools.values())
    assert "notes in" in (client.instructions or "")

    found = await _call(client, "search", {"query": "borrow checker ownership"})
    assert not found.is_error, everything(found)
    top = SearchOutput.model_validate(found.structured_content).results[0]
    assert top.path == "03-resources/rust-ownership.md"

    read = await _call(client, "read_note", {"path": top.path, "start_line": 1, "line_count": 2})
    assert (
        ReadNoteOutput.model_validate(read.structured_content).text
        == "---\ntitle: Rust ownership and borrowing"
    )

    for raw in traversal_variants(vault):
        refused = await _call(client, "read_note", {"path": raw})
        assert refused.is_error, f"{raw!r} was not refused"
        payload = everything(refused)
        assert not any(marker in payload for marker in FORBIDDEN_TEXT), raw

    for name, args in (
        ("search", {"query": "deploy credentials token key", "limit": 10}),
        ("get_context", {"topic": "deploy credentials signing key"}),
        ("read_note", {"path": "00-inbox/deploy-credentials.md"}),
    ):
        payload = everything(await _call(client, name, args))
        assert not any(secret in payload for secret in SECRETS.values()), name


# -- stdio ---------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_stdio_subprocess_end_to_end(indexed_vault: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=cli_args(indexed_vault, "mcp")[1:],
        env=server_env(),
        cwd=REPO_ROOT,
    )
    with anyio.fail_after(90):
        async with Client(params) as client:
            await exercise(client, indexed_vault)


# -- HTTP ----------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_http_subprocess_end_to_end(indexed_vault: Path) -> None:
    async with http_server(indexed_vault) as server:
        url = server.url or ""
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        with anyio.fail_after(90):
            async with Client(url) as client:
                await exercise(client, indexed_vault)
            await check_host_and_origin(url)


async def check_host_and_origin(url: str) -> None:
    """DNS-rebinding protection: a foreign Host or Origin is refused before any tool runs."""
    port = url.split(":")[2].split("/")[0]
    async with httpx.AsyncClient(timeout=30) as http:

        async def post(**headers: str) -> int:
            response = await http.post(url, json=INIT_REQUEST, headers=POST_HEADERS | headers)
            return response.status_code

        assert await post() == 200
        assert await post(Origin=f"http://localhost:{port}") == 200
        # A page on a foreign site reaching us through a DNS name it controls.
        assert await post(Host=f"evil.example:{port}") == 421
        assert await post(Host="attacker.test") == 421
        assert await post(Origin="http://evil.example") == 403
        assert await post(Origin="null") == 403
        assert await post(Origin=f"http://127.0.0.1.evil.example:{port}") == 403


async def test_http_refuses_a_public_address_without_a_token(indexed_vault: Path) -> None:
    done = await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            cli_args(indexed_vault, "mcp", "--http", "--host", "0.0.0.0", "--port", "0"),
            capture_output=True,
            env=server_env(),
            cwd=REPO_ROOT,
            timeout=60,
        )
    )
    assert done.returncode == 1
    stderr = done.stderr.decode()
    assert "without a token" in stderr and "token_env" in stderr
    # The same rule in process, before any socket is bound or model loaded.
    for host in ("192.0.2.10", "::", "example.org"):
        with pytest.raises(TransportConfigError, match="without a token"):
            await run_http(
                indexed_vault, IndexSettings(), SearchSettings(), McpSettings(), host=host
            )
    with pytest.raises(TransportConfigError, match="SD_UNSET_X is not set"):
        load_principals(McpSettings(), token_env="SD_UNSET_X")


async def test_http_token_is_required_when_configured(indexed_vault: Path) -> None:
    env = server_env() | {"SD_TEST_TOKEN": TOKEN}
    async with http_server(indexed_vault, "--token-env", "SD_TEST_TOKEN", env=env) as server:
        url = server.url or ""
        async with httpx.AsyncClient(timeout=30) as http:
            missing = await http.post(url, json=INIT_REQUEST, headers=POST_HEADERS)
            wrong = await http.post(
                url, json=INIT_REQUEST, headers=POST_HEADERS | {"Authorization": "Bearer nope"}
            )
            scheme = await http.post(
                url, json=INIT_REQUEST, headers=POST_HEADERS | {"Authorization": f"Basic {TOKEN}"}
            )
            right = await http.post(
                url, json=INIT_REQUEST, headers=POST_HEADERS | {"Authorization": f"Bearer {TOKEN}"}
            )
        assert (missing.status_code, wrong.status_code, scheme.status_code) == (401, 401, 401)
        assert missing.headers["www-authenticate"].startswith("Bearer")
        assert "Authorization: Bearer" in missing.json()["hint"]
        assert right.status_code == 200
        authed = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        async with authed, Client(streamable_http_client(url, http_client=authed)) as client:
            result = await _call(client, "search", {"query": "sqlite"})
            assert not result.is_error


# -- print-config ----------------------------------------------------------------------------------


def test_print_config_uses_this_machines_paths(indexed_vault: Path) -> None:
    from signaldesk.pipeline.cli import cli

    runner = CliRunner()
    result = runner.invoke(cli, ["--vault", str(indexed_vault), "mcp", "--print-config", "cursor"])
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["mcpServers"]["signaldesk"]
    assert Path(entry["command"]).is_absolute()
    assert entry["args"][-3:] == ["--vault", str(indexed_vault.resolve()), "mcp"]
    codex = runner.invoke(
        cli,
        [
            "--vault",
            str(indexed_vault),
            "mcp",
            "--print-config",
            "codex",
            "--http",
            "--port",
            "9999",
        ],
    )
    assert 'url = "http://127.0.0.1:9999/mcp"' in codex.stdout


# -- load ------------------------------------------------------------------------------------------


def _grow(vault: Path, notes: int) -> None:
    topics = ["sqlite", "rust", "kubernetes", "python", "security", "design", "search", "mcp"]
    for i in range(notes):
        topic = topics[i % len(topics)]
        folder = vault / "03-resources" / "bulk"
        folder.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(
            f"## Part {j}\n\nNotes on {topic} number {i}, part {j}: "
            + " ".join(f"{topic}-term-{(i * j + k) % 97}" for k in range(60))
            for j in range(4)
        )
        (folder / f"{topic}-{i:04d}.md").write_text(f"# {topic} {i}\n\n{body}\n")


@asynccontextmanager
async def _rebuilding(vault: Path) -> AsyncIterator[list[float]]:
    """`index --full` running over and over in the background.

    Yields the list of run durations; a run still in progress when the block ends
    is counted as ``-1``.
    """
    from signaldesk.retrieval.embedder import LazyEmbedder
    from signaldesk.retrieval.indexer import Indexer
    from signaldesk.retrieval.settings import IndexSettings

    settings = IndexSettings()
    indexer = Indexer(vault, settings, LazyEmbedder(settings))
    runs: list[float] = []

    async def loop() -> None:
        while True:
            started = time.perf_counter()
            runs.append(-1.0)
            await indexer.run(full=True)
            runs[-1] = time.perf_counter() - started

    async with anyio.create_task_group() as tg:
        tg.start_soon(loop)
        try:
            yield runs
        finally:
            tg.cancel_scope.cancel()


@pytest.mark.slow
async def test_eight_http_clients_while_the_index_is_rebuilt(tmp_path: Path) -> None:
    vault = build_vault(tmp_path)
    _grow(vault, 150)
    index_vault(vault)
    queries = ["sqlite wal", "rust ownership", "kubernetes-term-5", "security advisory", "mcp"]
    failures: list[str] = []
    latencies: list[float] = []
    async with http_server(vault) as server:
        url = server.url or ""

        async def client_run(n: int) -> None:
            async with Client(url) as client:
                for i in range(100):
                    started = time.perf_counter()
                    result = await client.call_tool(
                        "search", {"query": queries[(n + i) % len(queries)], "limit": 5}
                    )
                    latencies.append(time.perf_counter() - started)
                    if not isinstance(result, CallToolResult) or result.is_error:
                        failures.append(
                            everything(result)
                            if isinstance(result, CallToolResult)
                            else repr(result)
                        )
                    elif SearchOutput.model_validate(result.structured_content).count == 0:
                        # Every query has results before the rebuild: an empty answer
                        # means a reader saw a half-built index.
                        failures.append(f"no results for {queries[(n + i) % len(queries)]!r}")

        started = time.perf_counter()
        with anyio.fail_after(110):
            async with _rebuilding(vault) as rebuilds, anyio.create_task_group() as tg:
                for n in range(8):
                    tg.start_soon(client_run, n)
        elapsed = time.perf_counter() - started
        server_log = server.stderr
    latencies.sort()
    p50 = latencies[len(latencies) // 2] * 1000
    p95 = latencies[int(len(latencies) * 0.95)] * 1000
    print(
        f"\n800 searches from 8 HTTP clients in {elapsed:.1f} s during {len(rebuilds)} full "
        f"rebuild(s): p50 {p50:.1f} ms, p95 {p95:.1f} ms, {len(failures)} failed"
    )
    assert len(latencies) == 800
    assert failures == [], f"{len(failures)} failed; first: {failures[0]}\n{server_log[-3000:]}"
    assert rebuilds, "the rebuild never started"
