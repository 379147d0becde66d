"""One triage writer at a time per vault: an advisory lock file in the state folder.

Two triage runs at once (the scheduler's scan and a `signaldesk triage` typed by
hand) could both find an item pending and both write a note for it. Each batch
is therefore scored, filed and recorded under this lock, and re-read from the
ledger once the lock is held. ``fcntl.flock`` locks belong to the open file
description, so the kernel drops a dead process's lock (no stale lock files).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from signaldesk.pipeline.errors import PipelineError

__all__ = ["TriageBusyError", "triage_lock"]

_POLL_SECONDS = 0.05


class TriageBusyError(PipelineError):
    """Another triage run kept the lock for longer than the wait allowed."""


@asynccontextmanager
async def triage_lock(path: Path, *, timeout: float) -> AsyncIterator[None]:
    """Hold the exclusive lock at ``path`` for the block, waiting at most ``timeout`` s.

    :raises TriageBusyError: the lock was still held by someone else after ``timeout``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            with anyio.fail_after(timeout):
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        await anyio.sleep(_POLL_SECONDS)
        except TimeoutError as exc:
            raise TriageBusyError(
                f"another triage run held {path.name} for over {timeout:g} s",
                hint="let it finish; items it did not reach stay pending for the next run",
            ) from exc
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
