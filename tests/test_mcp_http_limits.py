"""The HTTP transport's bounds, on real sockets on 127.0.0.1: a client that never finishes
its request is disconnected, and a crowd of sessions never locks new clients out."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from anyio.abc import SocketStream
from mcp import Client
from mcp_types import CallToolResult
from mcp_vault import INIT_REQUEST, POST_HEADERS, build_vault

from signaldesk.mcp_server import McpSettings, build_http_app, build_server, serve_http
from signaldesk.mcp_server.http import HttpEndpoint
from signaldesk.retrieval.context_block import ContextExcerpts
from signaldesk.retrieval.records import (
    IndexStatus,
    NoteInfo,
    SearchFilters,
    SearchMode,
    SearchPage,
    SearchResult,
)

pytestmark = pytest.mark.anyio


class _GatedRetriever:
    """A retriever whose search answers only once ``gate`` is set (a tool call that lasts)."""

    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.entered = anyio.Event()

    async def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        max_tokens: int | None = None,
    ) -> list[SearchResult]:
        self.entered.set()
        await self.gate.wait()
        return []

    async def search_page(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        max_tokens: int | None = None,
    ) -> SearchPage:
        # The MCP search tool asks for a page (results and how many the budget left out).
        return SearchPage(results=tuple(await self.search(query)))

    async def context(self, topic: str, *, filters: SearchFilters | None = None) -> ContextExcerpts:
        return ContextExcerpts(topic, ())

    async def list_notes(
        self, filters: SearchFilters | None = None, *, limit: int = 50
    ) -> list[NoteInfo]:
        return []

    async def status(self) -> IndexStatus:
        return IndexStatus(db_path="x", exists=True)

    async def warm_up(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


@asynccontextmanager
async def serving(
    tmp_path: Path, settings: McpSettings, retriever: _GatedRetriever | None = None
) -> AsyncIterator[HttpEndpoint]:
    """The real HTTP transport (uvicorn on a free loopback port) in this process."""
    vault = build_vault(tmp_path)
    server = build_server(retriever, vault=vault, settings=settings)
    app = build_http_app(server, host="127.0.0.1", port=0, settings=settings)
    async with anyio.create_task_group() as tg:
        endpoint: HttpEndpoint = await tg.start(
            lambda task_status: serve_http(
                app, host="127.0.0.1", port=0, settings=settings, task_status=task_status
            )
        )
        try:
            yield endpoint
        finally:
            endpoint.stop()


async def _closed_by_server(stream: SocketStream) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    try:
        while True:
            received += await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError):
        return received


# -- slow clients ------------------------------------------------------------------------------


async def test_clients_that_never_finish_a_request_are_disconnected(tmp_path: Path) -> None:
    settings = McpSettings(http_request_timeout_seconds=1.0)
    retriever = _GatedRetriever()
    async with serving(tmp_path, settings, retriever) as endpoint:
        host = f"127.0.0.1:{endpoint.port}"
        partial = [
            b"",  # connects and sends nothing
            b"POST /mcp HTTP/1.1\r\nHost: " + host.encode() + b"\r\n",  # headers never end
            (
                f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Length: 500\r\n\r\n"
                '{"jsonrpc": "2.0",'
            ).encode(),  # the body never ends
        ]
        slow: list[SocketStream] = []
        for n in range(30):
            stream = await anyio.connect_tcp("127.0.0.1", endpoint.port)
            if partial[n % 3]:
                await stream.send(partial[n % 3])
            slow.append(stream)

        trickler = await anyio.connect_tcp("127.0.0.1", endpoint.port)
        slow.append(trickler)

        async def trickle(stream: SocketStream) -> None:
            # One byte at a time, never reaching the end of the headers: the deadline
            # is for the whole request, not for the gaps between bytes.
            try:
                for byte in b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 500:
                    await stream.send(bytes([byte]))
                    await anyio.sleep(0.1)
            except (anyio.BrokenResourceError, OSError):
                return

        closed: list[bytes] = []
        async with Client(endpoint.url) as client:
            with anyio.fail_after(60):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(trickle, trickler)
                    # A tool call that outlasts the request deadline, on a request that
                    # arrived whole: it must not be cut.
                    results: list[CallToolResult] = []

                    async def call() -> None:
                        result = await client.call_tool("search", {"query": "slow"})
                        assert isinstance(result, CallToolResult)
                        results.append(result)

                    tg.start_soon(call)
                    await retriever.entered.wait()

                    async def wait_closed(stream: SocketStream) -> None:
                        closed.append(await _closed_by_server(stream))

                    async with anyio.create_task_group() as waits:
                        for stream in slow:
                            waits.start_soon(wait_closed, stream)
                    # Every slow connection is gone (so the deadline has passed): now let
                    # the long call finish.
                    retriever.gate.set()
            assert len(closed) == 31
            assert results and not results[0].is_error, results
            # The server still answers on a fresh request after all that.
            listed = await client.list_tools()
            assert len(listed.tools) == 7
        for stream in slow:
            await stream.aclose()


# -- sessions ----------------------------------------------------------------------------------


async def _open_session(http: httpx.AsyncClient, url: str) -> httpx.Response:
    return await http.post(url, json=INIT_REQUEST, headers=POST_HEADERS)


def _alive(http: httpx.AsyncClient, url: str) -> Callable[[str], Awaitable[bool]]:
    async def alive(session_id: str) -> bool:
        response = await http.post(
            url,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=POST_HEADERS | {"Mcp-Session-Id": session_id},
        )
        return response.status_code != 404

    return alive


async def test_many_sessions_never_lock_out_a_new_client(tmp_path: Path) -> None:
    settings = McpSettings(http_max_sessions=3)
    async with serving(tmp_path, settings) as endpoint, httpx.AsyncClient(timeout=30) as http:
        url = endpoint.url
        alive = _alive(http, url)
        first = [await _open_session(http, url) for _ in range(3)]
        assert [r.status_code for r in first] == [200, 200, 200]
        ids = [r.headers["mcp-session-id"] for r in first]
        # The oldest is used again, so the second one is now the one idle longest.
        assert await alive(ids[0])
        fourth = await _open_session(http, url)
        assert fourth.status_code == 200
        assert not await alive(ids[1]), "the session idle longest should have been closed"
        assert await alive(ids[0]) and await alive(ids[2])
        # A crowd of sessions (the SDK alone refused every new one after 10,000, for 30
        # minutes): every new client still gets in.
        crowd = [(await _open_session(http, url)).status_code for _ in range(40)]
        assert crowd == [200] * 40
        # A real client after the crowd, and it works.
        async with Client(url) as client:
            result = await client.call_tool("read_note", {"path": "03-resources/sqlite-wal.md"})
            assert isinstance(result, CallToolResult) and not result.is_error


async def test_busy_sessions_are_kept_and_a_new_client_is_told_to_wait(tmp_path: Path) -> None:
    settings = McpSettings(http_max_sessions=2)
    async with serving(tmp_path, settings) as endpoint, httpx.AsyncClient(timeout=30) as http:
        url = endpoint.url
        ids = [(await _open_session(http, url)).headers["mcp-session-id"] for _ in range(2)]
        async with anyio.create_task_group() as tg:
            streams: list[httpx.Response] = []
            opened = anyio.Event()

            async def listen(session_id: str) -> None:
                # An open event stream: the session has a request in flight.
                request = http.build_request(
                    "GET",
                    url,
                    headers={"Accept": "text/event-stream", "Mcp-Session-Id": session_id},
                )
                response = await http.send(request, stream=True)
                streams.append(response)
                if len(streams) == len(ids):
                    opened.set()
                await anyio.sleep_forever()

            for session_id in ids:
                tg.start_soon(listen, session_id)
            with anyio.fail_after(30):
                await opened.wait()
            assert [s.status_code for s in streams] == [200, 200]
            refused = await _open_session(http, url)
            assert refused.status_code == 503
            body = json.loads(refused.content)
            assert "busy" in body["message"] and "http_max_sessions" in body["hint"]
            # A request of the sessionless 2026-07-28 protocol opens no session: not refused.
            sessionless = await http.post(
                url,
                json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                headers=POST_HEADERS | {"MCP-Protocol-Version": "2026-07-28"},
            )
            assert sessionless.status_code != 503, sessionless.text
            # Neither busy session was closed to make room.
            for response in streams:
                await response.aclose()
            tg.cancel_scope.cancel()
        # Once a stream ends, that session is idle again and a new client gets in.
        with anyio.fail_after(30):
            while (await _open_session(http, url)).status_code != 200:
                await anyio.sleep(0.05)


class _Expiries(logging.Handler):
    """Sets an event when the SDK logs that a session reached its idle timeout (asking
    the session would itself count as use and restart its idle time)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.expired = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "idle timeout" in record.getMessage():
            self.expired.set()


async def test_idle_sessions_expire(tmp_path: Path) -> None:
    settings = McpSettings(http_session_idle_seconds=0.5, http_max_sessions=5)
    manager_log = logging.getLogger("mcp.server.streamable_http_manager")
    handler, level = _Expiries(), manager_log.level
    manager_log.addHandler(handler)
    manager_log.setLevel(logging.INFO)
    try:
        async with serving(tmp_path, settings) as endpoint, httpx.AsyncClient(timeout=30) as http:
            session_id = (await _open_session(http, endpoint.url)).headers["mcp-session-id"]
            with anyio.fail_after(30):
                await handler.expired.wait()
            assert not await _alive(http, endpoint.url)(session_id)
    finally:
        manager_log.removeHandler(handler)
        manager_log.setLevel(level)
