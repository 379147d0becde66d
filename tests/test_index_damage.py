"""A damaged index: `search` says what to run, `mcp` (stdio and HTTP) starts degraded and
tells the client, and `signaldesk index` rebuilds from the vault, after which the same
server answers again without a restart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult
from mcp_vault import REPO_ROOT, build_vault, cli_args, http_server, index_vault, server_env

from signaldesk.mcp_server.models import SearchOutput
from signaldesk.mcp_server.results import error_info
from signaldesk.retrieval.settings import IndexSettings
from signaldesk.retrieval.store import index_db_path

pytestmark = pytest.mark.anyio


def _damage(vault: Path) -> Path:
    db = index_db_path(vault, IndexSettings())
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    db.write_bytes(b"not a database, a damaged disk block" * 400)
    return db


def _cli(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli_args(vault, *args),
        capture_output=True,
        text=True,
        env=server_env(),
        cwd=REPO_ROOT,
        timeout=180,
    )


@pytest.fixture
def damaged_vault(tmp_path: Path) -> Path:
    vault = build_vault(tmp_path)
    index_vault(vault)
    _damage(vault)
    return vault


def test_search_on_a_damaged_index_says_what_to_run(damaged_vault: Path) -> None:
    done = _cli(damaged_vault, "search", "sqlite")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    # The command names the vault it was given (a bare `signaldesk index` may find none).
    assert "cannot be read" in done.stderr
    assert f"`signaldesk --vault {damaged_vault} index`" in done.stderr
    # `index` rebuilds from the vault (the notes are the source of truth).
    rebuilt = _cli(damaged_vault, "index")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "unreadable" in rebuilt.stdout
    assert _cli(damaged_vault, "search", "sqlite", "--json").returncode == 0


async def _search(client: Client) -> CallToolResult:
    result = await client.call_tool("search", {"query": "sqlite wal checkpoint"})
    assert isinstance(result, CallToolResult)
    return result


async def _degraded_then_recovered(client: Client, vault: Path) -> None:
    first = await _search(client)
    error = error_info(first)
    assert first.is_error and error is not None
    assert error.code == "index_unavailable"
    command = f"`signaldesk --vault {vault.resolve()} index`"  # the vault served
    assert command in (error.hint or "")
    status = await client.call_tool("index_status", {})
    assert isinstance(status, CallToolResult) and not status.is_error
    assert command in str(status.structured_content)
    done = await anyio.to_thread.run_sync(lambda: _cli(vault, "index"))
    assert done.returncode == 0, done.stderr
    again = await _search(client)
    assert not again.is_error
    assert SearchOutput.model_validate(again.structured_content).count > 0


@pytest.mark.slow
async def test_stdio_server_starts_degraded_on_a_damaged_index(damaged_vault: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=cli_args(damaged_vault, "mcp")[1:],
        env=server_env(),
        cwd=REPO_ROOT,
    )
    with anyio.fail_after(150):
        async with Client(params) as client:
            await _degraded_then_recovered(client, damaged_vault)


@pytest.mark.slow
async def test_http_server_starts_degraded_on_a_damaged_index(damaged_vault: Path) -> None:
    async with http_server(damaged_vault) as server:
        assert "cannot be read" in server.stderr
        with anyio.fail_after(150):
            async with Client(server.url or "") as client:
                await _degraded_then_recovered(client, damaged_vault)
