"""A `signaldesk serve` for the benchmarks' forwarded one-shot searches (issue 15).

:func:`serving` starts ``signaldesk serve`` on a vault with the benchmark's config (its
``[schedule]`` made quiet by :data:`QUIET_SCHEDULE`: no daily notes, no polling during
the measurement), waits until it answers a one-shot search over its socket and its
start-up jobs are done, and stops it with SIGTERM afterwards. serve writes its state
(ledger, ``scheduler.json``, the socket) into the vault's ``.signaldesk``: give it a vault
that may be written.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["QUIET_SCHEDULE", "serving"]

# serve runs each interval job once at start, then every interval: a day apart, so
# that only the searches run while the one-shot figures are taken. No catch-up: the
# daily report and log would write notes into the vault.
QUIET_SCHEDULE = """
[schedule]
feeds_interval = 86400.0
drops_interval = 86400.0
triage_interval = 86400.0
index_interval = 86400.0
watch_interval = 86400.0
catch_up = false
"""


def _settled(vault: Path) -> bool:
    """Every job of serve's first round has finished."""
    try:
        state = json.loads((vault / ".signaldesk" / "scheduler.json").read_text())
    except (FileNotFoundError, ValueError):
        return False
    jobs = state.get("jobs") or {}
    interval_jobs = ("feeds", "drops", "triage", "watch", "index")
    return bool(state.get("ready")) and all(
        (jobs.get(name) or {}).get("last_finished") for name in interval_jobs
    )


@contextmanager
def serving(
    base: list[str], vault: Path, probe_query: str, timeout: float = 300.0
) -> Iterator[int]:
    """Run ``base + ["serve"]`` (``base``: the CLI with its ``--vault`` and ``--config``)
    until the block ends; yields its pid once a one-shot search is answered by it."""
    proc = subprocess.Popen([*base, "serve"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        probe = [*base, "-vv", "search", probe_query, "--json"]
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited with {proc.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"serve did not answer within {timeout:g} s")
            if _settled(vault):
                # The first forwarded search opens serve's retriever (and may time out
                # into an in-process search); the probe repeats until serve answers.
                done = subprocess.run(probe, capture_output=True, text=True, check=False)
                if done.returncode == 0 and "search runs in-process" not in done.stderr:
                    break
            time.sleep(0.5)
        yield proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
