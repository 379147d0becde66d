"""A scan killed with SIGKILL at a random moment loses nothing and writes nothing twice.

A real `python -m pipeline.cli scan` subprocess scans 200 locally served feeds; it
is killed once the ledger shows progress, then a second scan finishes the job.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from signaldesk.pipeline.config import resolve_workspace
from signaldesk.pipeline.intake.feeds import FeedRegistry
from signaldesk.pipeline.ledger.store import ledger_path, open_ledger
from tests.feedserver import FeedServer
from tests.intake_data import serve_feeds

REPO = Path(__file__).resolve().parent.parent
FEEDS, ENTRIES = 200, 6


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM items").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _scan_command(vault: Path, config: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "signaldesk",
        "--vault",
        str(vault),
        "--config",
        str(config),
        "scan",
        "--json",
    ]


@pytest.mark.slow
def test_kill_9_mid_scan_then_rescan_loses_nothing(vault: Path, tmp_path: Path) -> None:
    config = tmp_path / "signaldesk.toml"
    config.write_text(
        "[http]\nper_host = 16\ntotal_timeout = 20.0\n"
        "[pipeline]\nfeed_concurrency = 8\nextract_concurrency = 8\nretry_backoff = 0.05\n",
        encoding="utf-8",
    )
    workspace = resolve_workspace(vault, config)
    db = ledger_path(workspace)
    seed = random.randrange(1_000_000)
    kill_at = random.Random(seed).randrange(100, 700)
    with FeedServer() as server:
        feeds = serve_feeds(server, FEEDS, ENTRIES, teaser_every=6)

        async def subscribe() -> None:
            async with open_ledger(workspace) as ledger:
                registry = FeedRegistry(ledger)
                for url in feeds.urls:
                    await registry.add(url)

        anyio.run(subscribe)
        log = (tmp_path / "first-scan.log").open("wb")
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        first = subprocess.Popen(
            _scan_command(vault, config), stdout=subprocess.DEVNULL, stderr=log, env=env
        )
        deadline = time.monotonic() + 90
        try:
            while _count(db) < kill_at:
                assert first.poll() is None, f"scan ended before the kill (seed {seed})"
                assert time.monotonic() < deadline, "no progress in the ledger"
                time.sleep(0.02)  # polling the ledger, not waiting for a guess
            first.send_signal(signal.SIGKILL)
        finally:
            first.wait(timeout=30)
            log.close()
        assert first.returncode == -signal.SIGKILL
        recorded_at_kill = _count(db)
        assert recorded_at_kill < FEEDS * ENTRIES, f"the kill came too late (seed {seed})"

        second = subprocess.run(
            _scan_command(vault, config), capture_output=True, env=env, timeout=110, check=False
        )
        assert second.returncode == 0, second.stderr.decode()[-2000:]
        summary = json.loads(second.stdout)
        assert summary["totals"]["duplicate"] == 0

    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT json_extract(payload, '$.guid'), status FROM items").fetchall()
    guids = [row[0] for row in rows]
    assert len(guids) == len(set(guids)), "an entry was written twice"
    assert set(guids) == set(feeds.guids), (
        f"lost: {sorted(feeds.guids - set(guids))[:5]} (seed {seed})"
    )
    # `scan` also runs triage, so a settled item may be pending, filed or rejected;
    # none may be left in flight.
    statuses = {row[1] for row in rows}
    assert statuses <= {"pending", "filed", "rejected"}, f"left mid-stage: {statuses}"
