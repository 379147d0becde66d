"""An offline scan of the real shared feeds: ``python -m bench.offline_scan``.

Serves every feed file under ``shared/data/feeds`` (rss-parser's 31 real feeds and
feedparser's 629 test feeds; ``--corpus`` narrows it) from a local HTTP server on
127.0.0.1, subscribes a fresh vault to all of them and runs ``signaldesk scan`` as a
subprocess, the way a person would, with the network closed: every article page the
entries link to is unreachable (HTTP(S)_PROXY points at a closed local port). It
runs the scan with ``[rss] full_text`` on and off and prints, for each:

- wall time, and the ratio full text on / off (the bar: at most 2);
- the ledger's statuses after the first scan (the bar: nothing left ``discovered``);
- stderr: lines, tracebacks, and the most repeated lines.

``--blackhole`` also points every entry of a few feeds at a local server that accepts
connections and never answers, to show what such a host costs a scan.

The figures move with the machine's load; the load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import anyio

__all__ = ["main"]

_REPO = Path(__file__).resolve().parent.parent
_DEFAULT_SHARED = _REPO.parent / "shared" / "data"
_HEADER = re.compile(rb"^Header:\s*Content-type:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def _feed_files(shared: Path, corpus: str) -> list[Path]:
    root = shared / "feeds"
    files: list[Path] = []
    if corpus in ("all", "rss-parser"):
        files += sorted((root / "rss-parser_tests" / "input").iterdir())
    if corpus in ("all", "feedparser"):
        files += sorted(p for p in (root / "feedparser_tests").rglob("*") if p.is_file())
    return [p for p in files if p.is_file() and p.name != "LICENSE"]


class _Blackhole:
    """Three silent hosts (127.0.0.2-4, one port): they accept connections and never answer."""

    def __init__(self) -> None:
        first = socket.socket()
        first.bind(("127.0.0.2", 0))
        self.port = first.getsockname()[1]
        self.socks = [first]
        for host in ("127.0.0.3", "127.0.0.4"):
            sock = socket.socket()
            sock.bind((host, self.port))
            self.socks.append(sock)
        for sock in self.socks:
            sock.listen(512)
            sock.settimeout(0.2)
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(s,), daemon=True) for s in self.socks
        ]

    def _run(self, sock: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._held.append(conn)

    def __enter__(self) -> _Blackhole:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2)
        for conn in self._held:
            conn.close()
        for sock in self.socks:
            sock.close()


def _blackhole_feed(port: int, n: int) -> bytes:
    items = "".join(
        f"<item><title>Silent host entry {i}</title><link>http://127.0.0.{2 + i % 3}:{port}/a/{i}"
        f"</link><guid>urn:blackhole:{i}</guid><description>A short teaser {i}.</description>"
        "</item>"
        for i in range(n)
    )
    return (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>Silent</title>'
        f"{items}</channel></rss>"
    ).encode()


def _scan(vault: Path, *, full_text: bool, env: dict[str, str]) -> dict[str, object]:
    config = vault / "signaldesk.toml"
    text = config.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^\[rss\]\n", "[rss]\n", text)
    text = re.sub(
        r"(?m)^#? ?full_text = (true|false)$",
        f"full_text = {str(full_text).lower()}",
        text,
        count=1,
    )
    config.write_text(text, encoding="utf-8")
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "signaldesk", "--vault", str(vault), "scan"],
        capture_output=True,
        env=env,
        check=False,
        timeout=3600,
    )
    wall = time.perf_counter() - started
    stderr = out.stderr.decode("utf-8", "replace")
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    with sqlite3.connect(vault / ".signaldesk" / "ledger.db") as db:
        statuses = dict(db.execute("SELECT status, COUNT(*) FROM items GROUP BY status").fetchall())
        teasers = db.execute(
            "SELECT COUNT(*) FROM items WHERE json_extract(payload, '$.teaser')"
        ).fetchone()[0]
        parked = dict(
            db.execute(
                "SELECT last_error, COUNT(*) FROM items WHERE status = 'parked' GROUP BY 1"
            ).fetchall()
        )
    return {
        "rc": out.returncode,
        "wall": wall,
        "stderr_lines": len(lines),
        "tracebacks": stderr.count("Traceback"),
        "top_lines": Counter(re.sub(r"\d+", "N", ln)[:120] for ln in lines).most_common(4),
        "statuses": statuses,
        "teasers": teasers,
        "parked": parked,
        "stdout_tail": [
            ln for ln in out.stdout.decode("utf-8", "replace").splitlines() if ln.startswith("  ")
        ][-12:],
    }


def _prepare(tmp: Path, urls: list[str], name: str) -> Path:
    from signaldesk.pipeline.config import resolve_workspace
    from signaldesk.pipeline.intake.feeds import FeedRegistry
    from signaldesk.pipeline.ledger.store import open_ledger
    from signaldesk.pipeline.vault_setup import init_vault

    vault = tmp / name
    init_vault(vault)
    workspace = resolve_workspace(vault)

    async def subscribe() -> None:
        async with open_ledger(workspace) as ledger:
            registry = FeedRegistry(ledger)
            for url in urls:
                await registry.add(url)

    anyio.run(subscribe)
    return vault


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.offline_scan")
    parser.add_argument("--shared", type=Path, default=_DEFAULT_SHARED)
    parser.add_argument("--corpus", choices=["all", "rss-parser", "feedparser"], default="all")
    parser.add_argument(
        "--blackhole", type=int, default=0, help="entries pointing at a silent host"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from tests.feedserver import FeedServer, Reply

    files = _feed_files(args.shared, args.corpus)
    closed = "http://127.0.0.1:9"
    env = {
        **os.environ,
        "PYTHONPATH": str(_REPO),
        "HTTP_PROXY": closed,
        "HTTPS_PROXY": closed,
        "http_proxy": closed,
        "https_proxy": closed,
        # The silent host answers on 127.0.0.2-4 (three hosts); they are local too.
        "NO_PROXY": "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4,localhost",
        "no_proxy": "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4,localhost",
        "HF_HUB_OFFLINE": "1",
    }
    results: dict[str, object] = {}
    with FeedServer() as server, _Blackhole() as hole, tempfile.TemporaryDirectory() as tmp:
        urls: list[str] = []
        for n, path in enumerate(files):
            data = path.read_bytes()
            header = _HEADER.search(data[:2000])
            ctype = header.group(1).decode("latin-1") if header else "application/xml"
            route = f"/f/{n}/{path.name}"
            server.route(route, Reply(body=data, content_type=ctype))
            urls.append(server.url(route))
        if args.blackhole:
            server.route("/silent.xml", Reply(body=_blackhole_feed(hole.port, args.blackhole)))
            urls.append(server.url("/silent.xml"))
        for full_text in (True, False):
            name = "full-text-on" if full_text else "full-text-off"
            vault = _prepare(Path(tmp), urls, name)
            results[name] = _scan(vault, full_text=full_text, env=env)
    load = os.getloadavg()
    on, off = results["full-text-on"], results["full-text-off"]
    assert isinstance(on, dict) and isinstance(off, dict)
    if args.json:
        print(json.dumps({"feeds": len(files), "load": load, **results}, default=str, indent=2))
        return 0
    print(f"{len(files)} feed files served from 127.0.0.1; article pages unreachable")
    for name, r in results.items():
        assert isinstance(r, dict)
        print(
            f"{name:14} rc={r['rc']} wall={r['wall']:.1f}s stderr_lines={r['stderr_lines']} "
            f"tracebacks={r['tracebacks']} teasers={r['teasers']} statuses={r['statuses']}"
        )
        print(f"    parked: {r['parked']}")
        for line, count in r["top_lines"]:  # type: ignore[attr-defined]
            print(f"    {count:>5} x {line}")
        for line in r["stdout_tail"]:  # type: ignore[attr-defined]
            print(f"    | {line}")
    print(f"full text on / off: {on['wall'] / off['wall']:.2f}x  (load average {load[0]:.2f})")
    print(
        "(python -m bench.offline_scan"
        + (f" --blackhole {args.blackhole}" if args.blackhole else "")
        + ")"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
