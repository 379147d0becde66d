"""Every tool through a third-party MCP client, the MCP Inspector CLI (npm, pinned in
tests/inspector), over stdio and over streamable HTTP: each success, and each error (no
index, a missing note, a refused path, bad arguments) with its hint, as the client
sees them.

The SDK's own client can hide what other clients reject: the Inspector, like the
TypeScript SDK it is built on, checked the structured content of *error* results
against each tool's success schema, and answered every error with "Structured content
does not match the tool's output schema" instead of the hint.

Install the client with ``cd tests/inspector && npm ci`` (`.ci/run` does); without
Node or the installed Inspector these tests skip and say so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import anyio
import pytest
from mcp_vault import REPO_ROOT, build_vault, http_server, index_vault, server_env

from signaldesk.mcp_server import TOOL_NAMES
from signaldesk.mcp_server.results import ERROR_META_KEY

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

INSPECTOR_DIR = REPO_ROOT / "tests" / "inspector"
_CLI = INSPECTOR_DIR / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli" / "build"
# The Inspector will not run with a proxy configured (conftest.py points them at a dead
# port for everything else); loopback needs none.
_PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)
# Stdio calls each start a server; two at a time keeps a shared 2-core machine usable.
_PARALLEL = anyio.CapacityLimiter(2)


def _missing(reason: str) -> NoReturn:
    # CI (.ci/run) installs the Inspector and sets this: there, absent is a failure.
    if os.environ.get("SIGNALDESK_REQUIRE_INSPECTOR"):
        pytest.fail(f"{reason} (SIGNALDESK_REQUIRE_INSPECTOR is set)")
    pytest.skip(reason)


def inspector() -> list[str]:
    """``node <inspector> --cli``, the command `npx @modelcontextprotocol/inspector --cli` runs."""
    node = shutil.which("node")
    if node is None:
        _missing("node is not installed: cannot run the MCP Inspector CLI")
    if not (_CLI / "cli.js").is_file():
        _missing("MCP Inspector not installed: run `cd tests/inspector && npm ci`")
    return [str(node), str(_CLI / "cli.js"), "--cli"]


def _env() -> dict[str, str]:
    env = server_env()
    for name in _PROXY_VARIABLES:
        env.pop(name, None)
    return env


@dataclass(frozen=True)
class Case:
    """One call and what the client must see: a success, or the error ``code`` whose
    text (what the model reads) contains ``says``."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    code: str | None = None
    says: str = ""


INDEXED: tuple[Case, ...] = (
    Case("search", {"query": "borrow checker ownership"}, says="03-resources/rust-ownership.md"),
    Case("search", {"query": "wal", "limit": 500}, "invalid_argument", "(1-50)"),
    Case("search", {"query": "wal", "since": "last tuesday"}, "invalid_argument", "YYYY-MM-DD"),
    Case("search", {"query": "wal", "folder": "../outside"}, "path_refused", "vault-relative"),
    Case(
        "search", {"query": "wal", "since": "2999-01-01", "until": "1d"}, "invalid_argument", "swap"
    ),
    Case("search", {"query": "wal", "max_token": 100}, "invalid_argument", "max_tokens"),
    Case("get_context", {"topic": "sqlite busy timeout"}, says="03-resources/sqlite-wal.md"),
    Case("get_context", {"topic": "wal", "max_tokens": 1}, "invalid_argument", "Budget for"),
    Case(
        "get_context", {"topic": "sqlite", "folder": "04-archive/none"}, says="folder='04-archive"
    ),
    Case("read_note", {"path": "03-resources/sqlite-wal.md"}, says="Checkpoints move pages"),
    Case("read_note", {"path": "03-resources/no-such-note.md"}, "not_found", "list_notes"),
    Case("read_note", {"path": "../outside/secret.md"}, "path_refused", "vault-relative"),
    Case("read_note", {"path": "private/diary.md"}, "path_refused", ".indexignore"),
    Case(
        "read_note",
        {"path": "03-resources/sqlite-wal.md", "start_line": 0},
        "invalid_argument",
        "1-based",
    ),
    Case(
        "read_note",
        {"path": "03-resources/sqlite-wal.md", "start_line": 900},
        "invalid_argument",
        "between 1 and",
    ),
    Case("read_note", {}, "invalid_argument", "Vault-relative path"),
    # A wiki-link ([[03-resources/sqlite-wal]]) leaves out the suffix; a model following
    # one sends the path that way.
    Case(
        "read_note", {"path": "03-resources/sqlite-wal"}, says="03-resources/sqlite-wal.md (lines"
    ),
    # ... or names the note alone ([[sqlite-wal]]), or in another case.
    Case(
        "read_note",
        {"path": "sqlite-wal"},
        "not_found",
        "did you mean '03-resources/sqlite-wal.md'?",
    ),
    Case("read_note", {"path": "03-Resources/SQLite-WAL.md"}, "not_found", "'03-resources/sqlite"),
    Case(
        "read_note", {"path": "03-resources"}, "path_refused", "list_notes(folder='03-resources')"
    ),
    Case("read_note", {"path": "03-resources/notes.txt"}, "path_refused", "only markdown notes"),
    Case("list_notes", {"folder": "03-resources"}, says="03-resources/rust-ownership.md"),
    Case("list_notes", {"limit": 0}, "invalid_argument", "Most notes"),
    # An empty answer names the filters it was given, so the model sees which one to drop.
    Case("search", {"query": "sqlite", "domain": "securty"}, says="with domain='securty'"),
    Case("list_notes", {"tag": "no-such-tag"}, says="No indexed notes with tag='no-such-tag'"),
    Case("list_notes", {"until": "soon"}, "invalid_argument", "YYYY-MM-DD"),
    Case("recent_signals", {}, says="05-signals/security/2026-11-27-openssh-advisory.md"),
    Case("recent_signals", {"min_score": 2}, "invalid_argument", "composite score"),
    Case("latest_report", {}, says="06-daily/2026-11-29-triage.md"),
    Case("latest_report", {"day": "2026-11-28"}, "invalid_argument", "no arguments"),
    Case("index_status", {}, says="notes"),
    Case("index_status", {"verbose": True}, "invalid_argument", "no arguments"),
    Case("delete_note", {"path": "03-resources/sqlite-wal.md"}, "unknown_tool", "read_note"),
)

# The command a hint gives names the vault served (the client started the server with
# --vault; a shell's `signaldesk index` would index another vault, or none).
UNINDEXED: tuple[Case, ...] = (
    Case("search", {"query": "sqlite"}, "index_unavailable", "`signaldesk --vault /"),
    Case("get_context", {"topic": "sqlite"}, "index_unavailable", "/vault index`"),
    Case("list_notes", {}, "index_unavailable", "/vault index`"),
    Case("recent_signals", {}, "index_unavailable", "/vault index`"),
    Case("index_status", {}, says="No index yet: no index at "),
    # Reading needs no index; there is no report yet in this vault.
    Case("read_note", {"path": "03-resources/sqlite-wal.md"}, says="Checkpoints move pages"),
    Case("latest_report", {}, "not_found", "/vault report` writes one"),
)


def test_the_cases_cover_every_tool_and_its_errors() -> None:
    cases = INDEXED + UNINDEXED
    for tool in TOOL_NAMES:
        assert any(c.tool == tool and c.code is None for c in cases), f"{tool}: no success"
        assert any(c.tool == tool and c.code for c in cases), f"{tool}: no error"
    codes = {c.code for c in cases}
    assert {"index_unavailable", "not_found", "path_refused", "invalid_argument"} <= codes


@pytest.fixture(scope="module")
def vaults(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    inspector()  # skip before building anything when the client is not installed
    indexed = build_vault(tmp_path_factory.mktemp("inspector-indexed"))
    index_vault(indexed)
    unindexed = build_vault(tmp_path_factory.mktemp("inspector-unindexed"))
    shutil.rmtree(unindexed / "06-daily")
    return indexed, unindexed


def _tool_args(args: dict[str, Any]) -> list[str]:
    # The Inspector parses each value as JSON when it can, and keeps it a string otherwise.
    out: list[str] = []
    for key, value in args.items():
        out += ["--tool-arg", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
    return out


async def inspector_process(
    target: Sequence[str], method: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    """The Inspector CLI run once, for one ``method`` call on ``target``."""
    command = [*inspector(), *target, "--method", method, *extra]
    async with _PARALLEL:
        return await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                command, capture_output=True, text=True, env=_env(), cwd=REPO_ROOT, timeout=120
            )
        )


async def run_inspector(target: Sequence[str], method: str, *extra: str) -> dict[str, Any]:
    """The Inspector CLI's answer (its JSON on stdout) for one ``method`` call on ``target``."""
    done = await inspector_process(target, method, *extra)
    # Exit 1 and a message on stderr is how the Inspector reports what it rejected.
    assert done.returncode == 0, f"{done.args[3:]} -> rc {done.returncode}\n{done.stderr[-2000:]}"
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def check(case: Case, result: dict[str, Any]) -> None:
    """What a client sees for ``case``: a success with structured content, or an error
    result whose text carries the message and the hint."""
    shown = json.dumps(result, ensure_ascii=False)[:1500]
    text = "\n".join(b.get("text", "") for b in result.get("content", []) if b["type"] == "text")
    if case.code is None:
        assert not result.get("isError"), f"{case}: {shown}"
        assert isinstance(result.get("structuredContent"), dict), f"{case}: {shown}"
    else:
        assert result.get("isError") is True, f"{case}: {shown}"
        # Structured content on an error would be checked against the success schema.
        assert "structuredContent" not in result, f"{case}: {shown}"
        error = result["_meta"][ERROR_META_KEY]
        assert error["code"] == case.code, f"{case}: {shown}"
        assert error["hint"] and error["hint"] in text and error["message"] in text, shown
        assert "What to do:" in text, shown
    assert case.says in text, f"{case}: {case.says!r} not in what the client shows: {shown}"


async def check_all(target: Sequence[str], cases: Sequence[Case]) -> None:
    failures: list[str] = []

    async def one(case: Case) -> None:
        try:
            check(
                case,
                await run_inspector(
                    target, "tools/call", "--tool-name", case.tool, *_tool_args(case.args)
                ),
            )
        except AssertionError as exc:
            failures.append(str(exc))

    async with anyio.create_task_group() as tg:
        for case in cases:
            tg.start_soon(one, case)
    assert not failures, f"{len(failures)} of {len(cases)} calls failed:\n" + "\n\n".join(failures)


def _stdio(vault: Path) -> list[str]:
    return [sys.executable, "-m", "signaldesk", "--vault", str(vault), "mcp"]


@pytest.mark.timeout(600)
async def test_every_tool_over_http(vaults: tuple[Path, Path]) -> None:
    indexed, unindexed = vaults
    async with (
        http_server(indexed, env=_env()) as with_index,
        http_server(unindexed, env=_env()) as without,
    ):
        listed = await run_inspector([with_index.url or "", "--transport", "http"], "tools/list")
        check_listing(listed)
        await check_all([with_index.url or "", "--transport", "http"], INDEXED)
        await check_all([without.url or "", "--transport", "http"], UNINDEXED)


@pytest.mark.timeout(900)
async def test_every_tool_over_stdio(vaults: tuple[Path, Path]) -> None:
    indexed, unindexed = vaults
    check_listing(await run_inspector(_stdio(indexed), "tools/list"))
    await check_all(_stdio(indexed), INDEXED)
    await check_all(_stdio(unindexed), UNINDEXED)


def check_listing(listed: dict[str, Any]) -> None:
    """tools/list as the client shows it: every tool, read-only, described in prose."""
    tools = {t["name"]: t for t in listed["tools"]}
    assert set(tools) == set(TOOL_NAMES)
    for tool in tools.values():
        assert tool["annotations"]["readOnlyHint"] is True
        assert "outputSchema" in tool
        description = tool["description"]
        assert "\n " not in description and "  " not in description, repr(description)
        limit = tool["inputSchema"]["properties"].get("limit")
        if limit is not None:
            # The model learns the range from the description it reads, not the bounds.
            assert f"(1-{limit['maximum']})" in limit["description"], (tool["name"], limit)
    # A model that read a [[wiki-link]] in a note learns it can pass its target as is.
    assert "wiki-link" in tools["read_note"]["description"]
    # Hybrid search blends the lists' scores by default; the schema must not say RRF.
    assert "reciprocal" not in json.dumps(tools["search"]["outputSchema"]).lower()


async def test_no_prompts_and_an_unknown_one_is_invalid_params(vaults: tuple[Path, Path]) -> None:
    """The server has tools only; a client that asks for a prompt anyway gets the error
    code the protocol gives an unknown name (-32602), not the SDK's code 0."""
    indexed, _ = vaults
    assert await run_inspector(_stdio(indexed), "prompts/list") == {"prompts": []}
    done = await inspector_process(_stdio(indexed), "prompts/get", "--prompt-name", "summarise")
    assert done.returncode == 1, done.stdout
    assert "MCP error -32602: Unknown prompt: 'summarise'" in done.stderr, done.stderr
    assert "only tools: search, get_context" in done.stderr


async def test_read_note_refuses_a_note_excluded_while_the_server_runs(
    tmp_path: Path,
) -> None:
    inspector()
    vault = build_vault(tmp_path)
    index_vault(vault)
    async with http_server(vault, env=_env()) as server:
        target = [server.url or "", "--transport", "http"]
        path = "03-resources/rust-ownership.md"
        before = await run_inspector(
            target, "tools/call", "--tool-name", "read_note", *_tool_args({"path": path})
        )
        check(Case("read_note", {"path": path}, says="borrow checker"), before)
        with (vault / ".indexignore").open("a", encoding="utf-8") as rules:
            rules.write("03-resources/rust-ownership.md\n")
        after = await run_inspector(
            target, "tools/call", "--tool-name", "read_note", *_tool_args({"path": path})
        )
        check(Case("read_note", {"path": path}, "path_refused", ".indexignore"), after)


async def test_deleted_notes_and_long_lists_as_the_client_sees_them(tmp_path: Path) -> None:
    """A note deleted since the last index run is no longer offered (read_note could not
    open it), and a list cut by its size budget says how to see the rest: raising
    ``limit`` does not help there."""
    inspector()
    vault = build_vault(tmp_path)
    (vault / "signaldesk.toml").write_text("[mcp]\nlist_max_tokens = 100\n", encoding="utf-8")
    index_vault(vault)
    gone = "03-resources/sqlite-wal.md"
    async with http_server(vault, env=_env()) as server:
        target = [server.url or "", "--transport", "http"]

        async def call(tool: str, **args: Any) -> tuple[dict[str, Any], str]:
            result = await run_inspector(
                target, "tools/call", "--tool-name", tool, *_tool_args(args)
            )
            assert not result.get("isError"), result
            return result, "\n".join(b.get("text", "") for b in result["content"])

        _, text = await call("search", query="sqlite WAL checkpoints readers")
        assert gone in text, text
        (vault / gone).unlink()
        for tool, args in (
            ("search", {"query": "sqlite WAL checkpoints readers"}),
            ("get_context", {"topic": "sqlite WAL checkpoints readers"}),
            ("list_notes", {"folder": "03-resources"}),
        ):
            result, text = await call(tool, **args)
            assert gone not in json.dumps(result, ensure_ascii=False), (tool, text)
        assert "rust-ownership.md" in text, text

        listed, text = await call("list_notes", limit=500)
        structured = listed["structuredContent"]
        assert structured["truncated"] and structured["count"] < 500, structured
        assert "raise limit" not in text and "narrow the list with folder" in text, text
        assert structured["message"] in text
        _, text = await call("list_notes", limit=1)
        assert "raise limit (at most 500)" in text, text
        signals, text = await call("recent_signals", limit=100)
        assert signals["structuredContent"]["truncated"], signals
        assert "narrow the list with domain" in text, text


def test_the_inspector_is_pinned() -> None:
    package = json.loads((INSPECTOR_DIR / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((INSPECTOR_DIR / "package-lock.json").read_text(encoding="utf-8"))
    pinned = package["dependencies"]["@modelcontextprotocol/inspector"]
    assert pinned[0].isdigit(), "pin an exact version, not a range"
    assert lock["packages"]["node_modules/@modelcontextprotocol/inspector"]["version"] == pinned
    assert os.environ.get("HTTP_PROXY"), "conftest.py closes the network for everything else"
