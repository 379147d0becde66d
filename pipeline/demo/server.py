"""A tiny HTTP server on 127.0.0.1 for the demo: the bundled sample site (feeds and
article pages), so that feed polling and full-text extraction run for real, offline."""

from __future__ import annotations

import email.utils
import logging
import re
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from importlib.resources.abc import Traversable
from types import TracebackType
from typing import Any

__all__ = ["DEMO_DATA", "GONE_PATHS", "DemoServer", "render_template"]

logger = logging.getLogger(__name__)

DEMO_DATA: Traversable = files("signaldesk.pipeline.demo") / "data"

# A feed that was retired by its publisher: the server answers 410 Gone, so the demo
# shows how a dead subscription is disabled and reported instead of polled forever.
GONE_PATHS = frozenset({"/feeds/retired.xml"})

_CONTENT_TYPES = {
    ".xml": "application/rss+xml; charset=utf-8",
    ".atom": "application/atom+xml; charset=utf-8",
    ".html": "text/html; charset=utf-8",
}
_PLACEHOLDER = re.compile(r"\{\{(BASE|DATE|ISO|DAY|MAILDATE)(?::(-?\d+))?\}\}")


def render_template(text: str, *, base: str, now: datetime) -> str:
    """Fill the sample data's placeholders: ``{{BASE}}`` (the server's address) and dates
    relative to ``now`` (``{{DATE:-1}}`` RFC 822, ``{{ISO:-1}}``, ``{{DAY:-1}}``)."""

    def replace(match: re.Match[str]) -> str:
        kind, offset = match.group(1), int(match.group(2) or 0)
        if kind == "BASE":
            return base
        # An hour before now, so that "today" is never in the future.
        moment = now + timedelta(days=offset) - timedelta(hours=1)
        if kind in ("DATE", "MAILDATE"):
            return email.utils.format_datetime(moment)
        if kind == "ISO":
            return moment.isoformat(timespec="seconds")
        return moment.date().isoformat()

    return _PLACEHOLDER.sub(replace, text)


def _handler(site: Traversable, render: Callable[[str], str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "signaldesk-demo/1"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path in GONE_PATHS:
                self._send(410, b"This feed has been retired.\n", "text/plain")
                return
            parts = [p for p in path.split("/") if p]
            if not parts or any(p in {".", ".."} or p.startswith(".") for p in parts):
                self._send(404, b"not found\n", "text/plain")
                return
            resource = site.joinpath(*parts)
            suffix = "." + parts[-1].rsplit(".", 1)[-1] if "." in parts[-1] else ""
            if suffix not in _CONTENT_TYPES or not resource.is_file():
                self._send(404, b"not found\n", "text/plain")
                return
            body = render(resource.read_text(encoding="utf-8")).encode("utf-8")
            self._send(200, body, _CONTENT_TYPES[suffix])

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            logger.debug("demo server: " + format, *args)

    return Handler


class DemoServer:
    """Serves ``data/site`` on 127.0.0.1 from a background thread.

    :param port: the port wanted; when it is taken, any free port is used. A stable
        port keeps the demo's feed URLs the same from one run to the next.
    """

    def __init__(self, *, port: int = 0, now: datetime | None = None) -> None:
        self._wanted = port
        self._now = now or datetime.now().astimezone()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> DemoServer:
        site = DEMO_DATA / "site"
        holder: dict[str, str] = {}

        def render(text: str) -> str:
            return render_template(text, base=holder["base"], now=self._now)

        handler = _handler(site, render)
        try:
            server = ThreadingHTTPServer(("127.0.0.1", self._wanted), handler)
        except OSError:
            server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        self._server = server
        holder["base"] = self.base_url
        self._thread = threading.Thread(
            target=server.serve_forever, name="signaldesk-demo-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> DemoServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
