"""A running serve answers one-shot `signaldesk search QUERY --json` (issue 15): the
forwarded output is the in-process output's bytes, every doubt falls back to the
in-process search, and no client can stop the server.

The server is the real :class:`SearchSocket` on a real index in a short temporary vault
(an ``AF_UNIX`` path holds 107 bytes); the clients are real ``python -m signaldesk``
processes, or raw sockets for what the CLI never sends.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from signaldesk.pipeline.cli._search_answer import answer_forwarded
from signaldesk.pipeline.config import render_default_config, resolve_workspace
from signaldesk.pipeline.config_location import config_stamp
from signaldesk.pipeline.service.scheduler import serve
from signaldesk.pipeline.service.search_protocol import (
    MAX_REQUEST_BYTES,
    PROTOCOL,
    VERSION,
    socket_path,
)
from signaldesk.pipeline.service.search_socket import SearchSocket
from signaldesk.pipeline.vault_setup import init_vault
from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.retrieval.indexer import Indexer
from tests.test_cli_search import NOTES

pytestmark = pytest.mark.anyio

QUERY = ["search", "sourdough starter kubectl", "--json"]


@pytest.fixture
def short_vault() -> Iterator[Path]:
    """An indexed vault whose socket path fits in an AF_UNIX address."""
    root = Path(tempfile.mkdtemp(prefix="sd-", dir="/tmp"))
    vault = root / "v"
    try:
        init_vault(vault)
        for rel, text in NOTES.items():
            target = vault / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        ws = resolve_workspace(vault)
        Indexer(vault, ws.config.index, LazyEmbedder(ws.config.index)).run_sync()
        yield vault
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _cli(
    vault: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m signaldesk -vv ARGS`` in a new process (stderr says why it did not
    forward); the vault given by ``SIGNALDESK_VAULT`` unless ``env`` says otherwise."""
    env = {**os.environ, "SIGNALDESK_VAULT": str(vault), "COLUMNS": "240", **(env or {})}
    env = {name: value for name, value in env.items() if value}
    return subprocess.run(
        [sys.executable, "-m", "signaldesk", "-vv", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def _cli_async(
    vault: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return await anyio.to_thread.run_sync(lambda: _cli(vault, *args, env=env))


@asynccontextmanager
async def _running(vault: Path, **kwargs: Any) -> AsyncIterator[SearchSocket]:
    ws = resolve_workspace(vault)
    server = SearchSocket(ws, LazyEmbedder(ws.config.index), answer_forwarded, **kwargs)
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve)
        try:
            await _warm(server, vault)
            yield server
        finally:
            tg.cancel_scope.cancel()


async def _warm(server: SearchSocket, vault: Path) -> None:
    """One search without the CLI's 1 s deadline: the first one opens the index and loads
    the model, which a loaded machine may not do within it (the CLI would fall back)."""
    if server.path.is_socket():
        await _raw(server.path, _request(vault))
    server.answered = 0


def _exchange_raw(path: Path, data: bytes) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        # A refused peer is answered without being read: the reply is there to read
        # after a broken pipe (as the CLI's client reads it).
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    result: dict[str, Any] = json.loads(reply)
    return result


async def _raw(path: Path, data: bytes) -> dict[str, Any]:
    return await anyio.to_thread.run_sync(lambda: _exchange_raw(path, data))


def _request(vault: Path, /, **changes: Any) -> bytes:
    """A request as the CLI sends it for ``vault``, with ``changes``."""
    config = resolve_workspace(vault).config_path
    stamp = config_stamp(config)
    request: dict[str, Any] = {
        "protocol": PROTOCOL,
        "version": VERSION,
        "vault": str(vault.resolve()),
        "config": {
            "path": os.path.realpath(config) if config else None,
            "stamp": list(stamp) if stamp else None,
        },
        "search": {"query": "kubectl", "tags": []},
    }
    request.update(changes)
    return json.dumps(request).encode() + b"\n"


def _in_process_because(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if "search runs in-process" in line]
    return " ".join(lines)


# -- forwarded and in-process: the same bytes ---------------------------------------------


async def test_forwarded_output_is_the_in_process_output(short_vault: Path) -> None:
    cases = [
        QUERY,
        [*QUERY, "--limit", "1", "--mode", "bm25"],
        [*QUERY, "--max-tokens", "8", "--type", "note", "--tag", "baking"],
        ["search", "kubectl", "--json", "--folder", "03-resources", "--since", "2000-01-01"],
        ["search", "nothing-matches-this-zzzq", "--json"],
    ]
    in_process = [_cli(short_vault, *args) for args in cases]
    for result in in_process:
        assert result.returncode == 0, result.stderr
        assert "serve is not running" in _in_process_because(result)
    async with _running(short_vault) as server:
        for args, expected in zip(cases, in_process, strict=True):
            forwarded = await _cli_async(short_vault, *args)
            assert forwarded.returncode == 0, forwarded.stderr
            assert _in_process_because(forwarded) == ""
            assert forwarded.stdout == expected.stdout
        assert server.answered == len(cases)
        assert json.loads(in_process[0].stdout)["results"], "the comparison compared nothing"


async def test_a_vault_named_only_by_its_config_file_is_forwarded(short_vault: Path) -> None:
    """`export SIGNALDESK_CONFIG=~/vault/signaldesk.toml` (the README's other way): the
    hand-over reads the config's `[vault] path` as the in-process search does."""
    config = short_vault / "signaldesk.toml"
    config.write_text(render_default_config({"vault": {"path": str(short_vault)}}))
    only_config = {"SIGNALDESK_VAULT": "", "SIGNALDESK_CONFIG": str(config)}
    async with _running(short_vault) as server:
        forwarded = await _cli_async(short_vault, *QUERY, env=only_config)
        assert server.answered == 1, forwarded.stderr
    assert _in_process_because(forwarded) == ""
    in_process = _cli(short_vault, *QUERY, env=only_config)
    assert "serve is not running" in _in_process_because(in_process)
    assert forwarded.stdout == in_process.stdout and json.loads(forwarded.stdout)["results"]


async def test_a_refused_query_reads_as_in_process(short_vault: Path) -> None:
    expected = _cli(short_vault, "search", "", "--json")
    assert expected.returncode == 1 and "empty" in expected.stderr
    async with _running(short_vault) as server:
        forwarded = await _cli_async(short_vault, "search", "", "--json")
        raw = await _raw(server.path, _request(short_vault, search={"query": "  "}))
    assert raw["ok"] is False and "empty" in raw["error"]["message"]
    assert _in_process_because(forwarded) == ""
    assert (forwarded.returncode, forwarded.stdout) == (1, "")
    # The same two lines; the in-process run's INFO lines about the model are its own.
    assert [line for line in forwarded.stderr.splitlines() if "DEBUG" not in line] == [
        line for line in expected.stderr.splitlines() if line.startswith(("error:", "hint:"))
    ]


async def test_what_the_socket_does_not_take_runs_in_process(short_vault: Path) -> None:
    async with _running(short_vault) as server:
        explain = await _cli_async(short_vault, *QUERY, "--explain")
        table = await _cli_async(short_vault, "search", "kubectl")
        bad_mode = await _cli_async(short_vault, *QUERY, "--mode", "fuzzy")
        assert server.answered == 0
    assert explain.returncode == 0 and "explain" in json.loads(explain.stdout)
    assert "only `search QUERY --json`" in _in_process_because(explain)
    assert table.returncode == 0 and "kubernetes.md" in table.stdout
    assert bad_mode.returncode == 2 and "fuzzy" in bad_mode.stderr  # click's own message


# -- falling back ---------------------------------------------------------------------------


async def test_a_stale_socket_file_falls_back_and_is_replaced(short_vault: Path) -> None:
    path = socket_path(short_vault)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()  # the file stays, nobody listens: a killed serve's
    assert stat.S_ISSOCK(path.stat().st_mode)
    result = await _cli_async(short_vault, *QUERY)
    assert result.returncode == 0 and json.loads(result.stdout)["results"]
    assert "ConnectionRefusedError" in _in_process_because(result)
    async with _running(short_vault) as server:
        forwarded = await _cli_async(short_vault, *QUERY)
        assert server.answered == 1
    assert forwarded.stdout == result.stdout


async def test_an_edited_config_is_searched_in_process(short_vault: Path) -> None:
    config = short_vault / "signaldesk.toml"
    config.write_text(render_default_config({"search": {"limit": 5}}))
    async with _running(short_vault) as server:
        before = await _cli_async(short_vault, *QUERY)
        assert server.answered == 1 and len(json.loads(before.stdout)["results"]) == 2
        config.write_text(render_default_config({"search": {"limit": 1}}))
        after = await _cli_async(short_vault, *QUERY)
        assert server.answered == 1
    assert "the config file changed since serve read it" in _in_process_because(after)
    assert len(json.loads(after.stdout)["results"]) == 1  # the new config's limit


async def test_serve_declines_another_version_vault_or_config(short_vault: Path) -> None:
    async with _running(short_vault) as server:
        path = server.path
        replies = [
            await _raw(path, _request(short_vault, version="0.0.0-other")),
            await _raw(path, _request(short_vault, protocol=PROTOCOL + 1)),
            await _raw(path, _request(short_vault, vault="/elsewhere")),
            await _raw(path, _request(short_vault, config={"path": "/x.toml", "stamp": [1, 2]})),
        ]
        ok = await _raw(path, _request(short_vault))
    assert [r["ok"] for r in replies] == [False] * 4
    assert ["0.0.0-other" in replies[0]["declined"], "protocol" in replies[1]["declined"]] == [
        True,
        True,
    ]
    assert "another vault" in replies[2]["declined"]
    assert "another config file" in replies[3]["declined"]
    assert ok["ok"] is True and "kubernetes.md" in ok["stdout"]


async def test_another_uid_is_refused(short_vault: Path) -> None:
    if not hasattr(socket, "SO_PEERCRED"):
        pytest.skip("no SO_PEERCRED on this platform")
    async with _running(short_vault, peer_uid=os.getuid() + 1) as server:
        reply = await _raw(server.path, _request(short_vault))
        forwarded = await _cli_async(short_vault, *QUERY)
        assert server.answered == 0
    assert reply == {"ok": False, "declined": "refused: serve answers its own user only"}
    # The refusal, or the broken pipe of a reply that came before the request was sent.
    assert _in_process_because(forwarded) != ""
    assert forwarded.returncode == 0 and json.loads(forwarded.stdout)["results"]


async def test_a_vault_too_deep_for_a_socket_is_searched_in_process(tmp_path: Path) -> None:
    vault = tmp_path / ("d" * 60) / ("e" * 60) / "vault"
    init_vault(vault)
    async with _running(vault) as server:
        assert not server.path.exists()
        result = await _cli_async(vault, *QUERY)
    assert "too long for AF_UNIX" in _in_process_because(result)


async def test_serve_runs_on_when_it_cannot_listen(short_vault: Path) -> None:
    socket_path(short_vault).mkdir()  # something that is not a socket is never removed
    async with _running(short_vault) as server:
        result = await _cli_async(short_vault, *QUERY)
        assert server.answered == 0
    assert result.returncode == 0 and json.loads(result.stdout)["results"]
    assert "serve declined" not in _in_process_because(result)
    assert socket_path(short_vault).is_dir()


# -- nothing a client does stops serve --------------------------------------------------------


async def test_hostile_clients_get_an_error_and_serve_goes_on(short_vault: Path) -> None:
    async with _running(short_vault) as server:
        path = server.path
        garbage = await _raw(path, b"\x00\xffnot json at all\n")
        not_an_object = await _raw(path, b"[1, 2, 3]\n")
        wrong_types = await _raw(path, _request(short_vault, search={"query": 3, "limit": -1}))
        huge = await _raw(path, b"x" * (MAX_REQUEST_BYTES + 10))
        # A client that connects and never sends holds one connection, not serve.
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
            silent.connect(str(path))
            meanwhile = await _cli_async(short_vault, *QUERY)
        # One that hangs up half-way through its line.
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as rude:
            rude.connect(str(path))
            rude.sendall(b'{"protocol": 1, "vers')
        after = await _raw(path, _request(short_vault))
        assert server.answered == 2
    assert "not JSON" in garbage["declined"]
    assert "not a JSON object" in not_an_object["declined"]
    assert "malformed search" in wrong_types["declined"]
    assert "longer than" in huge["declined"]
    assert meanwhile.returncode == 0 and _in_process_because(meanwhile) == ""
    assert after["ok"] is True


# -- the socket file ------------------------------------------------------------------------


async def test_real_serve_owns_a_private_socket_and_removes_it(short_vault: Path) -> None:
    ws = resolve_workspace(short_vault)
    stop = anyio.Event()
    ready = anyio.Event()
    path = socket_path(short_vault)
    modes: list[int] = []
    forwarded: list[subprocess.CompletedProcess[str]] = []

    async def client(done: Callable[[], None]) -> None:
        await ready.wait()
        modes.append(stat.S_IMODE(path.stat().st_mode))
        assert (await _raw(path, _request(short_vault)))["ok"] is True  # warm, no deadline
        forwarded.append(await _cli_async(short_vault, *QUERY))
        done()

    async with anyio.create_task_group() as tg:
        tg.start_soon(client, stop.set)
        await serve(
            ws,
            stop=stop,
            handle_signals=False,
            specs=[],
            on_ready=ready.set,
            search_answer=answer_forwarded,
        )
    assert modes == [0o600]
    assert forwarded[0].returncode == 0 and _in_process_because(forwarded[0]) == ""
    assert not path.exists()


async def test_search_socket_false_keeps_serve_off_the_socket(short_vault: Path) -> None:
    (short_vault / "signaldesk.toml").write_text(
        render_default_config({"schedule": {"search_socket": False}})
    )
    ws = resolve_workspace(short_vault)
    stop = anyio.Event()
    seen: list[bool] = []

    def on_ready() -> None:
        seen.append(socket_path(short_vault).exists())
        stop.set()

    await serve(
        ws,
        stop=stop,
        handle_signals=False,
        specs=[],
        on_ready=on_ready,
        search_answer=answer_forwarded,
    )
    assert seen == [False]


async def test_a_forwarded_search_imports_almost_nothing(short_vault: Path) -> None:
    """The point is a cheap process: the forwarded path loads neither pydantic, numpy,
    rich, anyio nor the search stack."""
    watch = (
        "pydantic",
        "numpy",
        "rich",
        "anyio",
        "tokenizers",
        "signaldesk.pipeline.config",
        "signaldesk.pipeline.cli.search",
        "signaldesk.retrieval.retriever",
    )
    # The process ends with os._exit once the answer is written (no atexit): what it
    # loaded is printed there.
    code = (
        "import os, sys\n"
        f"watch = {watch!r}\n"
        "real_exit = os._exit\n"
        "def _exit(status):\n"
        "    print('LOADED', [m for m in watch if m in sys.modules], file=sys.stderr)\n"
        "    sys.stderr.flush()\n"
        "    real_exit(status)\n"
        "os._exit = _exit\n"
        f"sys.argv = ['signaldesk', '--vault', {str(short_vault)!r}, *{QUERY!r}]\n"
        "import runpy\n"
        "runpy.run_module('signaldesk', run_name='__main__')\n"
    )
    async with _running(short_vault) as server:
        done = await anyio.run_process([sys.executable, "-c", code], check=False)
        assert server.answered == 1
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stderr.decode(), done.stderr[-500:]
