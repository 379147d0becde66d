"""A real, scriptable HTTP server on 127.0.0.1 for fetch and feed tests.

Usage::

    with FeedServer() as server:
        server.route("/feed.xml", Reply(body=b"<rss ...>", headers={"ETag": '"v1"'}))
        server.route("/moved", Reply.redirect(301, "/feed.xml"))
        server.route("/flaky", [Reply(status=503), Reply(body=b"...")])  # in turn, last repeats
        server.route("/echo", lambda request: Reply(body=request.path.encode()))
        url = server.url("/feed.xml")
        ...
        assert server.requests_for("/feed.xml")[-1].headers["if-none-match"] == '"v1"'

A :class:`Reply` can be delayed (``delay``), dripped slowly (``drip_interval``), gzipped
(``gzip=True``) or endless (``endless=True``: a chunked body that never ends). The
server runs in a thread (``ThreadingHTTPServer``) so it needs no event loop and works
with any client; stopping it releases every slow or endless reply at once.

The pytest fixture ``feed_server`` (in this module; import it into a test module or a
conftest) gives a started server that is stopped after the test.
"""

from __future__ import annotations

import gzip as gzip_module
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Union

import pytest

__all__ = ["FeedServer", "RecordedRequest", "Reply", "feed_server"]


@dataclass(frozen=True)
class Reply:
    """One scripted response.

    :param delay: seconds to wait before sending anything (a slow server).
    :param drip_interval: when set, the body is sent ``drip_size`` bytes at a time with
        this many seconds between pieces (a slow-drip server).
    :param endless: send a chunked body that never ends (until the client hangs up).
    :param gzip: compress the body and say so in ``Content-Encoding``.
    :param declare_length: send ``Content-Length`` (off: the body is chunked).
    """

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str | None = "application/xml"
    delay: float = 0.0
    drip_interval: float | None = None
    drip_size: int = 1
    endless: bool = False
    gzip: bool = False
    declare_length: bool = True

    @staticmethod
    def redirect(status: int, location: str) -> Reply:
        """A redirect to ``location`` (absolute, or a path on this server)."""
        return Reply(status=status, headers={"Location": location}, content_type=None)


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received; ``headers`` keys are lower-cased."""

    method: str
    path: str
    headers: Mapping[str, str]


Handler = Callable[[RecordedRequest], Reply]
RouteSpec = Union[Reply, Sequence[Reply], Handler]  # noqa: UP007 (a runtime alias)


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up (a cap or a timeout on its side) is not an error here."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class FeedServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 with scripted routes and a request log."""

    def __init__(self) -> None:
        self._routes: dict[str, RouteSpec] = {}
        self._counters: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[RecordedRequest] = []
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------

    def start(self) -> FeedServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases delayed, dripping and endless replies
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FeedServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- scripting --------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def url(self, path: str) -> str:
        """The absolute URL of ``path`` on this server."""
        return self.base_url + path

    def route(self, path: str, spec: RouteSpec) -> None:
        """Script ``path`` (query string included if you want to match it; else ignored).

        ``spec`` is one :class:`Reply`, a sequence served in turn (the last one
        repeats), or a callable from the request to a reply.
        """
        with self._lock:
            self._routes[path] = spec
            self._counters[path] = 0

    def requests_for(self, path: str) -> list[RecordedRequest]:
        """The requests received for ``path``, oldest first."""
        with self._lock:
            return [r for r in self.requests if r.path == path or r.path.split("?")[0] == path]

    # -- serving ----------------------------------------------------------------

    def _reply_for(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            path = request.path if request.path in self._routes else request.path.split("?")[0]
            spec = self._routes.get(path)
            if spec is None:
                return Reply(status=404, body=b"not found", content_type="text/plain")
            if isinstance(spec, Reply):
                return spec
            if isinstance(spec, Sequence):
                index = min(self._counters[path], len(spec) - 1)
                self._counters[path] += 1
                return spec[index]
        return spec(request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # quiet
                return

            def do_GET(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                request = RecordedRequest("GET", self.path, headers)
                try:
                    server._serve(self, server._reply_for(request))
                except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                    self.close_connection = True

        return _Handler

    def _serve(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        if reply.delay and self._stopping.wait(reply.delay):
            handler.close_connection = True
            return
        body = gzip_module.compress(reply.body) if reply.gzip else reply.body
        handler.send_response(reply.status)
        if reply.content_type:
            handler.send_header("Content-Type", reply.content_type)
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        if reply.gzip:
            handler.send_header("Content-Encoding", "gzip")
        chunked = reply.endless or not reply.declare_length
        if chunked:
            handler.send_header("Transfer-Encoding", "chunked")
        else:
            handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if reply.status in (204, 304):
            return
        if reply.endless:
            self._send_endless(handler)
            return
        pieces = self._pieces(body, reply)
        for index, piece in enumerate(pieces):
            if index and reply.drip_interval and self._stopping.wait(reply.drip_interval):
                handler.close_connection = True
                return
            self._write(handler, piece, chunked=chunked)
        if chunked:
            handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()

    @staticmethod
    def _pieces(body: bytes, reply: Reply) -> Iterator[bytes]:
        if not reply.drip_interval:
            yield body
            return
        for start in range(0, len(body), reply.drip_size):
            yield body[start : start + reply.drip_size]

    @staticmethod
    def _write(handler: BaseHTTPRequestHandler, data: bytes, *, chunked: bool) -> None:
        if chunked:
            if not data:
                return
            handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        else:
            handler.wfile.write(data)
        handler.wfile.flush()

    def _send_endless(self, handler: BaseHTTPRequestHandler) -> None:
        block = b"<!-- endless -->" * 4096  # 64 KiB
        while not self._stopping.is_set():
            self._write(handler, block, chunked=True)
        handler.close_connection = True


@pytest.fixture
def feed_server() -> Iterator[FeedServer]:
    """A started :class:`FeedServer`, stopped after the test."""
    with FeedServer() as server:
        yield server
