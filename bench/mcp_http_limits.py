"""What slow clients and a crowd of sessions do to ``signaldesk mcp --http`` (issue 12, item 14).

Starts the real server (``signaldesk mcp --http --port 0``) on a vault and measures:

- slow clients: ``--slow`` connections that connect and send nothing, half a request
  line and headers, or the headers and half a body; how many the server has closed
  after ``--wait`` seconds (before the request deadline: none of 320 in 40 s);
- sessions: ``--sessions`` sessions opened one after another (``initialize``, never
  closed), how many of them were refused, and whether a new client is let in after them
  (before the session bound: every one after the 10,000th was refused with 503, for
  the SDK's 30-minute idle timeout).

Run from the repository root::

    python -m bench.mcp_http_limits --vault /tmp/mcp/demo
    python -m bench.mcp_http_limits --vault ~/vault --slow 320 --wait 40 --sessions 10050
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

READY_MARKER = "signaldesk MCP server ready on "
REPO_ROOT = Path(__file__).resolve().parent.parent
_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _start(vault: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = dict(os.environ)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        env.pop(name, None)
    process = subprocess.Popen(
        [sys.executable, "-m", "signaldesk", "--vault", str(vault), "mcp", "--http", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
        env=env,
    )
    assert process.stderr is not None
    for raw in iter(process.stderr.readline, b""):
        line = raw.decode("utf-8", "replace")
        if READY_MARKER in line:
            threading.Thread(target=lambda: process.stderr.read(), daemon=True).start()  # type: ignore[union-attr]
            return process, line.split(READY_MARKER, 1)[1].strip()
    raise SystemExit("the server exited before it was ready")


def slow_clients(port: int, count: int, wait: float) -> tuple[int, float]:
    """How many of ``count`` stalled connections the server closed within ``wait`` s."""
    partial = [
        b"",
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n",
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 500\r\n\r\n{",
    ]
    sockets = []
    for n in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        if partial[n % 3]:
            sock.sendall(partial[n % 3])
        sockets.append(sock)
    started = time.monotonic()
    closed: set[int] = set()
    last = 0.0
    while len(closed) < count and time.monotonic() - started < wait:
        for n, sock in enumerate(sockets):
            if n in closed:
                continue
            sock.settimeout(0.001)
            try:
                if sock.recv(4096) == b"":
                    closed.add(n)
                    last = time.monotonic() - started
            except (TimeoutError, BlockingIOError):
                pass
            except OSError:
                closed.add(n)
                last = time.monotonic() - started
        time.sleep(0.05)
    for sock in sockets:
        sock.close()
    return len(closed), last


def sessions(url: str, count: int) -> tuple[int, int, int]:
    """Open ``count`` sessions; then one more. Returns (refused, status of the new one, ms)."""
    refused = 0
    with httpx.Client(timeout=30) as http:
        for _ in range(count):
            if http.post(url, json=_INIT, headers=_HEADERS).status_code != 200:
                refused += 1
        started = time.perf_counter()
        status = http.post(url, json=_INIT, headers=_HEADERS).status_code
        return refused, status, round((time.perf_counter() - started) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--slow", type=int, default=320, help="stalled connections")
    parser.add_argument("--wait", type=float, default=40.0, help="seconds to watch them")
    parser.add_argument("--sessions", type=int, default=10_050, help="sessions to open")
    args = parser.parse_args()
    process, url = _start(args.vault)
    try:
        port = int(url.split(":")[2].split("/")[0])
        closed, last = slow_clients(port, args.slow, args.wait)
        print(
            f"slow clients: {closed} of {args.slow} closed within {args.wait:g} s"
            + (f" (the last after {last:.1f} s)" if closed else "")
        )
        started = time.monotonic()
        refused, status, ms = sessions(url, args.sessions)
        print(
            f"sessions: {args.sessions} opened in {time.monotonic() - started:.0f} s, "
            f"{refused} refused; a new client after them: HTTP {status} in {ms} ms"
        )
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"command: python -m bench.mcp_http_limits {' '.join(sys.argv[1:])}")
    finally:
        process.terminate()
        process.wait(timeout=30)


if __name__ == "__main__":
    main()
