"""Team mode over MCP: one HTTP server in front of the shared PostgreSQL index, each token
confined to its vaults, paths qualified by vault, the same path and scrubbing guarantees."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult
from mcp_vault import INIT_REQUEST, POST_HEADERS, REPO_ROOT, cli_args, http_server, server_env

from signaldesk.mcp_server.models import (
    IndexStatusOutput,
    NoteListOutput,
    ReadNoteOutput,
    SearchOutput,
)
from signaldesk.mcp_server.tokens import token_digest
from signaldesk.postgres import PostgresSettings

pytestmark = pytest.mark.anyio

ALICE = "alice-token-0123456789abcdef"  # runbooks only
BOB = "bob-token-0123456789abcdefgh"  # runbooks and research
ADMIN = "admin-token-0123456789abcdef"  # every vault
_FAKE_KEY = "AKIA" + "QWERTYUIOPASDFGH"

_VAULTS = {
    "runbooks": {
        "ops/disk-full.md": "# Disk full runbook\n\nCheck the WAL folder first, then old logs.\n",
        "ops/deploy.md": (
            "# Deploying\n\nRoll out with the blue green switch.\n\n"
            f"The deploy user key is {_FAKE_KEY} (rotate it).\n"
        ),
        "06-daily/2026-11-30-triage.md": "# Triage 2026-11-30\n\nRunbooks: 3 filed.\n",
    },
    "research": {
        "papers/zebrafish.md": "# Zebrafish regeneration\n\nZebrafish regrow fin tissue.\n",
        "06-daily/2026-12-01-triage.md": "# Triage 2026-12-01\n\nResearch: 5 filed.\n",
    },
}


def _config(postgres: PostgresSettings, name: str | None = None, tokens: str = "") -> str:
    vault = f'[vault]\nname = "{name}"\n\n' if name else ""
    return f'{vault}[index]\nbackend = "postgres"\n\n[postgres]\ndsn = "{postgres.dsn}"\n\n{tokens}'


_TOKENS = f"""
[[mcp.tokens]]
name = "alice"
token_env = "SD_ALICE"
vaults = ["runbooks"]

[[mcp.tokens]]
name = "bob"
token_sha256 = "{token_digest(BOB).hex()}"
vaults = ["runbooks", "research"]

[[mcp.tokens]]
name = "admin"
token_env = "SD_ADMIN"
vaults = ["*"]
"""


@pytest.fixture
def team(tmp_path: Path, postgres: PostgresSettings) -> dict[str, Any]:
    """Two vaults indexed into one database by the CLI, and a server folder with its config."""
    for name, notes in _VAULTS.items():
        root = tmp_path / name
        for rel, text in notes.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        (root / "signaldesk.toml").write_text(_config(postgres, name), encoding="utf-8")
        done = subprocess.run(
            cli_args(root, "index"),
            capture_output=True,
            env=server_env(),
            cwd=REPO_ROOT,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr.decode()
    server = tmp_path / "server"
    server.mkdir()
    (server / "signaldesk.toml").write_text(_config(postgres, tokens=_TOKENS), encoding="utf-8")
    env = server_env() | {"SD_ALICE": ALICE, "SD_ADMIN": ADMIN}
    return {"server": server, "env": env}


async def _call(client: Client, name: str, args: dict[str, Any]) -> CallToolResult:
    result = await client.call_tool(name, args)
    assert isinstance(result, CallToolResult)
    return result


def _client(url: str, token: str) -> tuple[httpx.AsyncClient, Client]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return http, Client(streamable_http_client(url, http_client=http))


async def _views(url: str, token: str) -> dict[str, Any]:
    """What one token sees through every tool."""
    http, client = _client(url, token)
    async with http, client:
        found = await _call(client, "search", {"query": "zebrafish fin regrow", "limit": 10})
        runbook = await _call(client, "search", {"query": "disk full WAL folder", "limit": 10})
        listed = await _call(client, "list_notes", {"limit": 100})
        status = await _call(client, "index_status", {})
        report = await _call(client, "latest_report", {})
        foreign = await _call(client, "read_note", {"path": "research/papers/zebrafish.md"})
        in_folder = await _call(client, "list_notes", {"folder": "runbooks/ops"})
        context = await _call(client, "get_context", {"topic": "zebrafish regeneration"})
    return {
        "search": [h.path for h in SearchOutput.model_validate(found.structured_content).results],
        "runbook": SearchOutput.model_validate(runbook.structured_content).results,
        "listed": sorted(
            n.path for n in NoteListOutput.model_validate(listed.structured_content).notes
        ),
        "status": IndexStatusOutput.model_validate(status.structured_content),
        "report": report,
        "foreign": foreign,
        "in_folder": sorted(
            n.path for n in NoteListOutput.model_validate(in_folder.structured_content).notes
        ),
        "context": json.dumps(context.model_dump(mode="json")),
    }


async def test_each_token_sees_only_its_vaults_through_every_tool(team: dict[str, Any]) -> None:
    async with http_server(team["server"], env=team["env"]) as server:
        url = server.url or ""
        alice = await _views(url, ALICE)
        bob = await _views(url, BOB)
        admin = await _views(url, ADMIN)

    runbooks = ["runbooks/06-daily/2026-11-30-triage.md", "runbooks/ops/deploy.md",
                "runbooks/ops/disk-full.md"]  # fmt: skip
    research = ["research/06-daily/2026-12-01-triage.md", "research/papers/zebrafish.md"]
    assert alice["listed"] == runbooks
    assert bob["listed"] == admin["listed"] == sorted(runbooks + research)
    # A search for another vault's words finds nothing of it.
    assert not any(p.startswith("research/") for p in alice["search"])
    assert bob["search"][0] == "research/papers/zebrafish.md"
    assert "research/" not in alice["context"] and "fin tissue" not in alice["context"]
    assert "research/papers/zebrafish.md" in bob["context"]
    # read_note of another vault's note: not found, and nothing of its text.
    assert alice["foreign"].is_error and "Zebrafish" not in json.dumps(
        alice["foreign"].model_dump(mode="json")
    )
    assert not bob["foreign"].is_error
    # Counts and the latest report are those of the token's vaults.
    assert alice["status"].notes == 3 and bob["status"].notes == 5
    assert set(alice["status"].folders) == {"runbooks/06-daily", "runbooks/ops"}
    assert "2026-11-30" in json.dumps(alice["report"].model_dump(mode="json"))
    assert "2026-12-01" in json.dumps(bob["report"].model_dump(mode="json"))
    # A folder filter that starts with a vault narrows to it.
    assert (
        alice["in_folder"]
        == bob["in_folder"]
        == [
            "runbooks/ops/deploy.md",
            "runbooks/ops/disk-full.md",
        ]
    )
    assert alice["runbook"][0].path == "runbooks/ops/disk-full.md"


async def test_paths_read_back_scrubbed_and_hostile_paths_are_refused(
    team: dict[str, Any],
) -> None:
    async with http_server(team["server"], env=team["env"]) as server:
        http, client = _client(server.url or "", BOB)
        async with http, client:
            read = await _call(client, "read_note", {"path": "runbooks/ops/deploy.md"})
            refused = [
                await _call(client, "read_note", {"path": path})
                for path in (
                    "runbooks/../research/papers/zebrafish.md",
                    "../research/papers/zebrafish.md",
                    "/etc/passwd",
                    "runbooks/.obsidian/app.md",
                    "%2e%2e/research/papers/zebrafish.md",
                    "nosuchvault/ops/deploy.md",
                )
            ]
            found = await _call(client, "search", {"query": "deploy user key rotate"})
    note = ReadNoteOutput.model_validate(read.structured_content)
    assert note.path == "runbooks/ops/deploy.md" and "blue green" in note.text
    assert _FAKE_KEY not in note.text and "REDACTED" in note.text.upper()
    assert all(r.is_error for r in refused)
    assert _FAKE_KEY not in json.dumps(found.model_dump(mode="json"))


async def test_a_session_belongs_to_the_token_that_opened_it(team: dict[str, Any]) -> None:
    init, headers = INIT_REQUEST, POST_HEADERS
    async with http_server(team["server"], env=team["env"]) as server:
        url = server.url or ""
        async with httpx.AsyncClient(timeout=30) as http:
            opened = await http.post(
                url, json=init, headers=headers | {"Authorization": f"Bearer {ALICE}"}
            )
            session = opened.headers["mcp-session-id"]
            listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
            as_bob = await http.post(
                url,
                json=listing,
                headers=headers | {"Authorization": f"Bearer {BOB}", "mcp-session-id": session},
            )
    assert opened.status_code == 200
    assert as_bob.status_code == 404


async def test_two_indexers_and_concurrent_clients_see_no_errors_and_no_other_vault(
    tmp_path: Path, postgres: PostgresSettings
) -> None:
    """bench.team_mcp's run on a small generated pair of vaults (the bar's run uses the
    shared corpora): two `signaldesk index` processes write two vaults at once while 4 MCP
    clients search; every search answers and no result comes from another vault."""
    from bench.team_mcp import run_team_load

    words = ["install a plugin", "git commit history", "markdown links", "backup", "graph view"]
    sources = {}
    for name in ("hub", "tldr"):
        source = tmp_path / f"{name}-src"
        files = []
        for i in range(40):
            path = source / f"folder{i % 4}" / f"{name}-note-{i}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                f"# {name} note {i}\n\n{words[i % 5]} in {name}: step {i} of the guide.\n",
                encoding="utf-8",
            )
            files.append(path)
        sources[name] = (files, source)
    work = tmp_path / "work"
    work.mkdir()
    report = await run_team_load(work, postgres, sources, clients=4, searches=15)
    assert report["searches"] == 60
    assert report["errors"] == 0, report["error_samples"]
    assert report["leaks"] == 0, report["leak_samples"]
    assert report["results"] > 0
    assert report["notes_indexed"] == report["notes_on_disk"] == {"hub": 40, "tldr": 40}


async def test_a_third_party_client_sees_the_team_server_as_one_confined_vault(
    team: dict[str, Any],
) -> None:
    """The MCP Inspector CLI (not our SDK) with alice's token: every tool answers, paths
    carry the vault, and another vault's note is not found."""
    from test_mcp_inspector import Case, check_all, inspector

    inspector()  # skips (or fails in CI) when the client is not installed
    cases = (
        Case("search", {"query": "disk full WAL folder"}, says="runbooks/ops/disk-full.md"),
        Case("get_context", {"topic": "deploying blue green"}, says="runbooks/ops/deploy.md"),
        Case("read_note", {"path": "runbooks/ops/deploy.md"}, says="blue green switch"),
        Case("read_note", {"path": "research/papers/zebrafish.md"}, "not_found", "vault's name"),
        Case("read_note", {"path": "../research/papers/zebrafish.md"}, "path_refused", "vault"),
        Case("list_notes", {"folder": "runbooks/ops"}, says="runbooks/ops/disk-full.md"),
        Case("recent_signals", {}),
        Case("latest_report", {}, says="2026-11-30"),
        Case("index_status", {}, says="3 notes"),
    )
    async with http_server(team["server"], env=team["env"]) as server:
        target = [
            server.url or "",
            "--transport",
            "http",
            "--header",
            f"Authorization: Bearer {ALICE}",
        ]
        await check_all(target, cases)
