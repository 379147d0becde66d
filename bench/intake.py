"""Intake benchmark: ``python -m bench.intake``.

Serves generated RSS feeds (``--entries`` entries each; every ``--teaser-every``-th
entry is a teaser whose article page is served too) from a local HTTP server on
127.0.0.1, then for each size in ``--sizes`` (default 50, 100, 200 feeds) runs one
full scan in a fresh vault **in its own subprocess** and prints wall time, entries/s
and that subprocess's peak RSS. Flat RSS across sizes shows the bounded streams at
work: memory follows the queue sizes, not the number of feeds. Nothing leaves
127.0.0.1: every feed and article URL points at the local server.

``--child`` is the subprocess side (not for direct use).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

__all__ = ["main"]

_REPO = Path(__file__).resolve().parent.parent


def _child(vault: Path, config: Path) -> None:
    """Run one scan in this process and print its figures as JSON."""
    from signaldesk.pipeline.config import resolve_workspace
    from signaldesk.pipeline.intake.run import scan

    workspace = resolve_workspace(vault, config)
    started = time.perf_counter()
    stats = anyio.run(lambda: scan(workspace))
    wall = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    total = stats.totals
    print(
        json.dumps(
            {
                "wall": wall,
                "feeds": stats.feeds_polled,
                "failed": stats.feeds_failed,
                "new": total.new,
                "duplicate": total.duplicate,
                "parked": total.parked,
                "errors": total.errors,
                "peak_rss_mb": peak_kb / 1024,
            }
        )
    )


def _run_size(feeds: int, urls: tuple[str, ...], args: argparse.Namespace) -> dict[str, float]:
    from signaldesk.pipeline.config import resolve_workspace
    from signaldesk.pipeline.intake.feeds import FeedRegistry
    from signaldesk.pipeline.ledger.store import open_ledger
    from signaldesk.pipeline.vault_setup import init_vault

    with tempfile.TemporaryDirectory(prefix="bench-intake-") as tmp:
        vault = Path(tmp) / "vault"
        init_vault(vault)
        config = Path(tmp) / "bench.toml"
        config.write_text(
            f"[http]\nper_host = {args.per_host}\n"
            f"[pipeline]\nfeed_concurrency = {args.feed_concurrency}\n"
            f"extract_concurrency = {args.extract_concurrency}\nqueue_size = {args.queue_size}\n",
            encoding="utf-8",
        )
        workspace = resolve_workspace(vault, config)

        async def subscribe() -> None:
            async with open_ledger(workspace) as ledger:
                registry = FeedRegistry(ledger)
                for url in urls[:feeds]:
                    await registry.add(url)

        anyio.run(subscribe)
        env = {**os.environ, "PYTHONPATH": str(_REPO), "NO_PROXY": "127.0.0.1,localhost"}
        out = subprocess.run(
            [sys.executable, "-m", "bench.intake", "--child", str(vault), str(config)],
            capture_output=True,
            env=env,
            check=False,
        )
        if out.returncode != 0:
            raise SystemExit(out.stderr.decode()[-3000:])
        result: dict[str, float] = json.loads(out.stdout.decode().strip().splitlines()[-1])
        return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.intake", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--sizes", default="50,100,200", help="Feed counts, comma-separated.")
    parser.add_argument("--entries", type=int, default=50, help="Entries per feed.")
    parser.add_argument(
        "--teaser-every", type=int, default=10, help="Every Nth entry is a teaser (0: none)."
    )
    parser.add_argument("--per-host", type=int, default=16)
    parser.add_argument("--feed-concurrency", type=int, default=8)
    parser.add_argument("--extract-concurrency", type=int, default=8)
    parser.add_argument("--queue-size", type=int, default=64)
    parser.add_argument("--child", nargs=2, metavar=("VAULT", "CONFIG"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(Path(args.child[0]), Path(args.child[1]))
        return

    from tests.feedserver import FeedServer
    from tests.intake_data import serve_feeds

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    with FeedServer() as server:
        feed_set = serve_feeds(server, max(sizes), args.entries, teaser_every=args.teaser_every)
        print(
            f"local server {server.base_url}: {max(sizes)} feeds x {args.entries} entries, "
            f"{len(feed_set.article_paths)} article pages (teaser every {args.teaser_every})"
        )
        print(
            f"{'feeds':>6} {'entries':>8} {'wall s':>8} {'entries/s':>10} {'peak RSS MB':>12} "
            f"{'failed':>7}"
        )
        for size in sizes:
            r = _run_size(size, feed_set.urls, args)
            entries = r["new"] + r["duplicate"] + r["parked"]
            print(
                f"{size:>6} {int(entries):>8} {r['wall']:>8.1f} {entries / r['wall']:>10.0f} "
                f"{r['peak_rss_mb']:>12.1f} {int(r['failed']):>7}",
                flush=True,
            )


if __name__ == "__main__":
    main()
