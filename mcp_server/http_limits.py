"""Bounds on what HTTP clients can hold: the time to send a request, and the sessions.

Two defaults of the stack under the HTTP transport let a client hold the server:

- uvicorn starts no timer until a connection has had its first response, so a client
  that sends its request a byte at a time (slowloris), or never finishes it, keeps the
  connection, and its memory, for ever (none of 320 such connections was closed in
  40 s). :class:`RequestDeadlineProtocol` gives every request a deadline instead.
- the SDK keeps a session until it has been idle for 30 minutes and refuses new ones
  with 503 while 10,000 are open, so after a burst of sessions every new client was
  refused for half an hour. :class:`SessionKeeper` keeps a bounded number and, when a
  new client needs room, closes the session that has been idle longest.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import anyio
import h11
import uvicorn
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["LimitedConfig", "RequestDeadlineProtocol", "SessionKeeper"]

_log = logging.getLogger(__name__)

_SESSION_HEADER = "mcp-session-id"
_VERSION_HEADER = "mcp-protocol-version"
# The h11 states of a peer whose request has not fully arrived: still sending the
# request line and headers, or the body.
_RECEIVING = (h11.IDLE, h11.SEND_BODY)


class LimitedConfig(uvicorn.Config):
    """uvicorn's configuration plus the request deadline :class:`RequestDeadlineProtocol` reads.

    :param request_timeout: seconds a client has to send a whole request (headers and
        body) from when it connects or receives its previous response.
    """

    def __init__(self, app: ASGIApp, *, request_timeout: float, **kwargs: object) -> None:
        super().__init__(app, http=RequestDeadlineProtocol, **kwargs)  # type: ignore[arg-type]
        self.request_timeout = request_timeout


class RequestDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for receiving each request.

    The deadline runs from when the connection is made and again from the end of each
    response (the next request on a kept-alive connection gets the same time). When it
    passes while the request line, the headers or the body are still incomplete, the
    connection is closed. A request that has fully arrived is never cut: a long tool
    call or an open event stream is the server's time, not the client's.
    """

    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        timeout = getattr(self.config, "request_timeout", None)
        if timeout and not self.transport.is_closing():
            self._deadline = self.loop.call_later(timeout, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state not in _RECEIVING:
            return
        where = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
        _log.info("closed the connection from %s: its request did not arrive in time", where)
        self.transport.close()


@dataclass(slots=True)
class _Session:
    in_flight: int
    last_used: float


class SessionKeeper:
    """ASGI middleware bounding the streamable HTTP sessions to ``max_sessions``.

    It watches the session id the SDK hands out (the ``Mcp-Session-Id`` response header
    of an ``initialize``) and the requests made under each. When a new session takes
    the count past ``max_sessions``, the session idle longest is closed with a
    ``DELETE``, the protocol's own way to end a session, sent to the app from here (the
    client of that session gets 404 on its next request, which the protocol tells it to
    answer by starting a new session). A session with a request in flight (an open
    event stream included) is never closed: while every session is busy, a new client
    is refused with 503 and a hint.

    A session is also forgotten once it has been idle longer than ``idle_timeout``
    (the SDK ends it then), when the client deletes it, and when the app answers 404.

    Wrap the SDK's app directly (inside any token check): the ``DELETE`` is sent to
    the wrapped app, with a loopback ``Host``.
    """

    def __init__(self, app: ASGIApp, *, path: str, max_sessions: int, idle_timeout: float) -> None:
        self._app = app
        self._path = path
        self._max = max_sessions
        self._idle_timeout = idle_timeout
        self._sessions: dict[str, _Session] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self._path:
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        version = headers.get(_VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            # A later protocol's single-exchange request: it has no session to count.
            await self._app(scope, receive, send)
            return
        session_id = headers.get(_SESSION_HEADER)
        if session_id is None:
            await self._new_session(scope, receive, send)
            return
        session = self._sessions.get(session_id)
        status: list[int] = []
        if session is not None:
            session.in_flight += 1
        try:
            await self._app(scope, receive, _recording(send, status))
        finally:
            if session is not None:
                session.in_flight -= 1
                session.last_used = anyio.current_time()
            gone = bool(status) and status[0] == 404
            deleted = bool(status) and scope["method"] == "DELETE" and status[0] < 300
            if gone or deleted:
                self._sessions.pop(session_id, None)

    async def _new_session(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._forget_expired()
        if scope["method"] == "POST" and len(self._sessions) >= self._max and not self._idle():
            _log.warning("refused a new MCP session: all %d sessions are busy", self._max)
            response = JSONResponse(
                {
                    "error": "too_many_sessions",
                    "message": f"all {self._max} MCP sessions are busy",
                    "hint": "try again shortly, or raise [mcp] http_max_sessions",
                },
                status_code=503,
                headers={"Retry-After": "5"},
            )
            await response(scope, receive, send)
            return
        opened: list[str] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 300:
                new_id = Headers(raw=message.get("headers", [])).get(_SESSION_HEADER)
                if new_id and new_id not in self._sessions:
                    self._sessions[new_id] = _Session(in_flight=1, last_used=anyio.current_time())
                    opened.append(new_id)
            await send(message)

        try:
            await self._app(scope, receive, watch)
        finally:
            for new_id in opened:
                session = self._sessions.get(new_id)
                if session is not None:
                    session.in_flight -= 1
                    session.last_used = anyio.current_time()
        if opened:
            await self._make_room(scope, keep=opened[0])

    def _idle(self, keep: str | None = None) -> list[tuple[float, str]]:
        return sorted(
            (s.last_used, sid)
            for sid, s in self._sessions.items()
            if s.in_flight == 0 and sid != keep
        )

    def _forget_expired(self) -> None:
        cutoff = anyio.current_time() - self._idle_timeout
        expired = [k for k, s in self._sessions.items() if not s.in_flight and s.last_used < cutoff]
        for sid in expired:
            del self._sessions[sid]

    async def _make_room(self, scope: Scope, *, keep: str) -> None:
        while len(self._sessions) > self._max:
            idle = self._idle(keep)
            if not idle:
                return
            last_used, victim = idle[0]
            self._sessions.pop(victim, None)
            status = await self._delete(scope, victim)
            _log.info(
                "closed the MCP session idle longest (%.0f s) to stay within %d sessions "
                "(status %s)",
                anyio.current_time() - last_used,
                self._max,
                status,
            )

    async def _delete(self, template: Scope, session_id: str) -> int | None:
        """End ``session_id`` the way a client would, with a ``DELETE`` to the app."""
        scope: Scope = {
            **template,
            "method": "DELETE",
            "query_string": b"",
            "headers": [(b"host", b"127.0.0.1"), (_SESSION_HEADER.encode(), session_id.encode())],
        }
        sent = False

        async def receive() -> Message:
            # An empty body, then what a closed connection reports.
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}

        status: list[int] = []

        async def discard(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])

        with anyio.move_on_after(10):
            await self._app(scope, receive, discard)
        return status[0] if status else None


def _recording(send: Send, status: list[int]) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        await send(message)

    return wrapped
