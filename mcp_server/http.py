"""The streamable HTTP transport: loopback by default, Host/Origin checked, a bearer
token required to listen anywhere else.

Threat model: a web page in the user's browser must not reach the server (DNS
rebinding: a foreign ``Host`` or ``Origin`` is refused by the SDK's transport
security), and nothing on the network may reach it without the token. The
token is read from an environment variable whose *name* is configured, so it
never sits in the config file.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass

import anyio
import uvicorn
from anyio.abc import TaskStatus
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signaldesk.mcp_server.binding import check_binding, is_loopback, read_token
from signaldesk.mcp_server.errors import TransportConfigError
from signaldesk.mcp_server.http_limits import LimitedConfig, SessionKeeper
from signaldesk.mcp_server.settings import McpSettings
from signaldesk.mcp_server.tokens import Principal, find_principal

__all__ = [
    "HttpEndpoint",
    "TokenGuard",
    "build_http_app",
    "build_team_app",
    "is_loopback",
    "read_token",
    "serve_http",
    "transport_security",
]

_log = logging.getLogger(__name__)

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_WILDCARD = ("0.0.0.0", "::", "")


def _host_for_header(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def transport_security(host: str, port: int, settings: McpSettings) -> TransportSecuritySettings:
    """The Host and Origin values the server accepts (DNS-rebinding protection)."""
    hosts: list[str] = []
    for name in _LOOPBACK_NAMES:
        hosts += [name, f"{name}:*"]
    if host not in _WILDCARD and not is_loopback(host):
        bound = _host_for_header(host)
        hosts += [bound, f"{bound}:{port}"]
    hosts += settings.allowed_hosts
    origins = [f"http://{name}:*" for name in _LOOPBACK_NAMES]
    origins += [f"http://{name}" for name in _LOOPBACK_NAMES]
    origins += settings.allowed_origins
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class TokenGuard:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``
    with a known token, and is served by that token's app.

    A missing or wrong token gets 401 with a ``WWW-Authenticate`` challenge and a JSON
    body that says what to send. In team mode each token has an app of its own (its own
    MCP server and sessions, over a retriever confined to its vaults), so what a token
    may read is fixed when its server is built, not checked tool by tool; a session id
    from another token's server is unknown here (404). The apps' lifespans all run.
    """

    def __init__(self, routes: Sequence[tuple[Principal, ASGIApp]]) -> None:
        self._principals = [principal for principal, _ in routes]
        self._apps = {principal.digest: app for principal, app in routes}
        self._distinct: list[ASGIApp] = []
        for _, app in routes:
            if not any(app is seen for seen in self._distinct):
                self._distinct.append(app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        if scope["type"] != "http":
            await self._distinct[0](scope, receive, send)
            return
        scheme, _, given = Headers(scope=scope).get("authorization", "").partition(" ")
        principal = (
            find_principal(self._principals, given.strip()) if scheme.lower() == "bearer" else None
        )
        if principal is None:
            response = JSONResponse(
                {
                    "error": "unauthorized",
                    "message": "missing or wrong bearer token",
                    "hint": "send 'Authorization: Bearer <token>' with a token the server "
                    "was configured with",
                },
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="signaldesk"'},
            )
            await response(scope, receive, send)
            return
        await self._apps[principal.digest](scope, receive, send)

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        if len(self._distinct) == 1:
            await self._distinct[0](scope, receive, send)
            return
        # Each app runs its own lifespan protocol; this relays startup and shutdown to all
        # of them, in order, and reports the first failure.
        async with AsyncExitStack() as streams, anyio.create_task_group() as tg:
            relays = []
            for app in self._distinct:
                to_app, app_inbox = anyio.create_memory_object_stream[Message](1)
                app_outbox, from_app = anyio.create_memory_object_stream[Message](1)
                for stream in (to_app, app_inbox, app_outbox, from_app):
                    streams.push_async_callback(stream.aclose)
                tg.start_soon(_run_app, app, scope, app_inbox.receive, app_outbox.send)
                relays.append((to_app, from_app))
            for phase in ("startup", "shutdown"):
                message = await receive()
                for to_app, from_app in relays:
                    await to_app.send(message)
                    reply = await from_app.receive()
                    if reply["type"].endswith(".failed"):
                        await send(reply)
                        tg.cancel_scope.cancel()
                        return
                await send({"type": f"lifespan.{phase}.complete"})


async def _run_app(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    await app(scope, receive, send)


def _session_app(server: MCPServer, *, host: str, port: int, settings: McpSettings) -> ASGIApp:
    """``server`` at ``settings.path``, its sessions bounded by ``settings.http_max_sessions``
    and ``settings.http_session_idle_seconds``."""
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=settings.path,
        transport_security=transport_security(host, port, settings),
        host=host,
        session_idle_timeout=settings.http_session_idle_seconds,
        # The keeper bounds the count, closing idle sessions rather than refusing clients.
        max_sessions=None,
    )
    return SessionKeeper(
        app,
        path=settings.path,
        max_sessions=settings.http_max_sessions,
        idle_timeout=settings.http_session_idle_seconds,
    )


def build_http_app(
    server: MCPServer,
    *,
    host: str,
    port: int,
    settings: McpSettings,
    principals: Sequence[Principal] = (),
) -> ASGIApp:
    """The ASGI app serving ``server``; with ``principals``, only to their tokens.

    :raises TransportConfigError: ``host`` is not loopback and there is no token.
    """
    check_binding(host, guarded=bool(principals))
    app = _session_app(server, host=host, port=port, settings=settings)
    return TokenGuard([(p, app) for p in principals]) if principals else app


def build_team_app(
    servers: Sequence[tuple[Principal, MCPServer]],
    *,
    host: str,
    port: int,
    settings: McpSettings,
) -> ASGIApp:
    """One app for a team: each principal's requests go to its own server.

    :raises TransportConfigError: no principal (team mode always needs tokens).
    """
    if not servers:
        raise TransportConfigError(
            "team mode serves HTTP only to tokens, and none is configured",
            hint="add [[mcp.tokens]] entries (name, token_env or token_sha256, vaults)",
        )
    return TokenGuard(
        [
            (principal, _session_app(server, host=host, port=port, settings=settings))
            for principal, server in servers
        ]
    )


@dataclass(frozen=True, slots=True)
class HttpEndpoint:
    """Where a started HTTP server listens, and how to stop it."""

    url: str
    host: str
    port: int
    stop: Callable[[], None]


class _Uvicorn(uvicorn.Server):
    """uvicorn that says when it is accepting requests (lifespan done, sockets served)."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.should_exit:
            self._on_started()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # Trigger: a listening socket made without an explicit protocol (as
    # socket.create_server makes it) has proto 0, and so do the sockets it accepts.
    # Why: asyncio turns Nagle's algorithm off only for sockets whose proto is
    # IPPROTO_TCP, so each response's second write waited for the client's delayed
    # ACK. Outcome: about 40 ms added to every MCP call over HTTP; naming the
    # protocol removes it.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(256)
        return sock
    except OSError as exc:
        sock.close()
        raise TransportConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="choose another --port (0 picks a free one) or stop what is using it",
        ) from exc


async def serve_http(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    settings: McpSettings,
    task_status: TaskStatus[HttpEndpoint] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` until stopped (SIGINT/SIGTERM, or ``HttpEndpoint.stop``).

    The socket is bound before uvicorn starts, so ``port=0`` picks a free port and
    the endpoint handed to ``task_status`` has the real one; it is handed over once
    uvicorn accepts requests. Each request must arrive within
    ``settings.http_request_timeout_seconds`` (see :mod:`mcp_server.http_limits`).

    :raises TransportConfigError: the address cannot be bound.
    """
    sock = _bind(host, port)
    bound_port = sock.getsockname()[1]
    url = f"http://{_host_for_header(host.strip('[]'))}:{bound_port}{settings.path}"
    config = LimitedConfig(
        app,
        request_timeout=settings.http_request_timeout_seconds,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )

    def started() -> None:
        _log.info("MCP server listening on %s", url)
        task_status.started(HttpEndpoint(url=url, host=host, port=bound_port, stop=stop))

    server = _Uvicorn(config, started)

    def stop() -> None:
        server.should_exit = True

    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()
