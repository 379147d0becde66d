"""Bearer tokens for the HTTP transport: several holders, each allowed a set of vaults."""

from __future__ import annotations

import functools
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from click.testing import CliRunner
from mcp_vault import (
    INIT_REQUEST,
    POST_HEADERS,
    REPO_ROOT,
    build_vault,
    cli_args,
    http_server,
    index_vault,
    server_env,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from signaldesk.mcp_server.errors import TransportConfigError
from signaldesk.mcp_server.http import TokenGuard, serve_http
from signaldesk.mcp_server.settings import McpSettings, McpToken
from signaldesk.mcp_server.tokens import (
    Principal,
    find_principal,
    load_principals,
    new_token,
    token_digest,
)

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdefgh"


def _settings(*tokens: McpToken, token_env: str | None = None) -> McpSettings:
    return McpSettings(tokens=list(tokens), token_env=token_env)


def test_tokens_come_from_the_environment_or_as_a_hash() -> None:
    settings = _settings(
        McpToken(name="alice", token_env="SD_ALICE", vaults=["runbooks", "adr"]),
        McpToken(name="bob", token_sha256=token_digest(BOB).hex(), vaults=["*"]),
        token_env="SD_ADMIN",
    )
    principals = load_principals(
        settings, environ={"SD_ALICE": ALICE, "SD_ADMIN": "admin-token-0123456789ab"}
    )
    assert [p.name for p in principals] == ["$SD_ADMIN", "alice", "bob"]
    assert find_principal(principals, ALICE) == principals[1]
    assert principals[1].vaults == frozenset({"runbooks", "adr"})
    assert principals[1].confine({"runbooks", "notes"}) == frozenset({"runbooks"})
    assert find_principal(principals, BOB) is principals[2]
    assert principals[2].vaults is None and principals[2].allows("anything")
    assert find_principal(principals, "admin-token-0123456789ab") is principals[0]
    assert find_principal(principals, ALICE[:-1]) is None
    assert find_principal(principals, "") is None


def test_a_token_entry_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one of token_env, token_sha256"):
        McpToken(name="x", vaults=["*"])
    with pytest.raises(ValueError, match="exactly one"):
        McpToken(name="x", token_env="A", token_sha256="0" * 64, vaults=["*"])
    with pytest.raises(ValueError, match="64 lower-case hex"):
        McpToken(name="x", token_sha256="abc", vaults=["*"])
    with pytest.raises(ValueError, match="at least 1"):
        McpToken(name="x", token_env="A", vaults=[])


def test_shared_tokens_and_names_are_refused() -> None:
    same = _settings(
        McpToken(name="a", token_env="SD_A", vaults=["*"]),
        McpToken(name="b", token_sha256=token_digest(ALICE).hex(), vaults=["x"]),
    )
    with pytest.raises(TransportConfigError, match="same token"):
        load_principals(same, environ={"SD_A": ALICE})
    named = _settings(
        McpToken(name="a", token_env="SD_A", vaults=["*"]),
        McpToken(name="a", token_env="SD_B", vaults=["*"]),
    )
    with pytest.raises(TransportConfigError, match="two MCP tokens are named 'a'"):
        load_principals(named, environ={"SD_A": ALICE, "SD_B": BOB})
    with pytest.raises(TransportConfigError, match="SD_A is not set"):
        load_principals(_settings(McpToken(name="a", token_env="SD_A", vaults=["*"])), environ={})


def _app(label: str, events: list[str]) -> Starlette:
    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        events.append(f"{label} up")
        yield
        events.append(f"{label} down")

    async def whoami(_: Request) -> PlainTextResponse:
        return PlainTextResponse(label)

    return Starlette(routes=[Route("/mcp", whoami)], lifespan=lifespan)


async def test_each_token_is_served_by_its_own_app_and_every_lifespan_runs() -> None:
    events: list[str] = []
    alice = Principal("alice", frozenset({"a"}), token_digest(ALICE))
    bob = Principal("bob", frozenset({"b"}), token_digest(BOB))
    guard = TokenGuard([(alice, _app("alice", events)), (bob, _app("bob", events))])
    async with anyio.create_task_group() as tg:
        endpoint = await tg.start(
            functools.partial(serve_http, guard, host="127.0.0.1", port=0, settings=McpSettings())
        )
        assert sorted(events) == ["alice up", "bob up"]
        async with httpx.AsyncClient(timeout=10) as http:
            answers = {}
            for name, token in (("alice", ALICE), ("bob", BOB), ("wrong", "x" * 30)):
                response = await http.get(
                    endpoint.url, headers={"Authorization": f"Bearer {token}"}
                )
                answers[name] = (response.status_code, response.text)
            missing = await http.get(endpoint.url)
        endpoint.stop()
    assert answers["alice"] == (200, "alice")
    assert answers["bob"] == (200, "bob")
    assert answers["wrong"][0] == 401 and missing.status_code == 401
    assert sorted(events) == ["alice down", "alice up", "bob down", "bob up"]


def test_new_token_prints_a_token_and_an_entry_holding_only_its_hash() -> None:
    from signaldesk.pipeline.cli import cli

    result = CliRunner().invoke(cli, ["mcp", "--new-token", "alice"])
    assert result.exit_code == 0, result.output
    token = result.stdout.strip()
    assert len(token) >= 32
    assert f'token_sha256 = "{token_digest(token).hex()}"' in result.stderr
    assert token not in result.stderr
    assert new_token()[0] != new_token()[0]


pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def indexed_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    vault = build_vault(tmp_path_factory.mktemp("tokens"))
    index_vault(vault)
    return vault


def _config(tmp_path: Path, body: str) -> dict[str, str]:
    """The environment of a server reading ``body`` as its config file."""
    path = tmp_path / "signaldesk.toml"
    path.write_text(body, encoding="utf-8")
    return server_env() | {"SIGNALDESK_CONFIG": str(path)}


async def test_several_configured_tokens_reach_the_server(
    indexed_vault: Path, tmp_path: Path
) -> None:
    env = _config(
        tmp_path,
        f"""
[vault]
name = "notes"

[[mcp.tokens]]
name = "alice"
token_env = "SD_ALICE"
vaults = ["notes"]

[[mcp.tokens]]
name = "bob"
token_sha256 = "{token_digest(BOB).hex()}"
vaults = ["*"]
""",
    )
    env |= {"SD_ALICE": ALICE}
    async with http_server(indexed_vault, env=env) as server, httpx.AsyncClient(timeout=30) as http:
        url = server.url or ""
        codes = []
        for token in (ALICE, BOB, "not-a-known-token-0123456789"):
            response = await http.post(
                url, json=INIT_REQUEST, headers=POST_HEADERS | {"Authorization": f"Bearer {token}"}
            )
            codes.append(response.status_code)
    assert codes == [200, 200, 401]


def test_a_token_not_allowed_this_vault_stops_the_server_at_once(
    indexed_vault: Path, tmp_path: Path
) -> None:
    env = _config(
        tmp_path,
        """
[vault]
name = "notes"

[[mcp.tokens]]
name = "carol"
token_env = "SD_CAROL"
vaults = ["runbooks"]
""",
    )
    done = subprocess.run(
        cli_args(indexed_vault, "mcp", "--http", "--port", "0"),
        capture_output=True,
        env=env | {"SD_CAROL": ALICE},
        cwd=REPO_ROOT,
        timeout=60,
    )
    assert done.returncode == 1
    assert "MCP token 'carol' is not allowed vault 'notes'" in done.stderr.decode()
