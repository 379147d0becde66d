"""What `signaldesk serve` has been doing, persisted for `signaldesk status`.

The state lives in a small JSON file in the vault's state folder
(``.signaldesk/scheduler.json``), rewritten atomically after each job run.
Why a file and not a ledger table: it is operational state of one process, not
a record of items; losing it loses nothing (the next run rewrites it); `status`
can read it without opening SQLite while `serve` writes; and it needs no
schema migration shared with the intake ledger. There is exactly one writer:
`serve` holds ``.signaldesk/serve.lock`` for as long as it runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from signaldesk.pipeline.errors import PipelineError
from signaldesk.vault import STATE_DIR, atomic_write_text

__all__ = [
    "LOCK_FILENAME",
    "STATE_FILENAME",
    "JobOutcome",
    "JobState",
    "ServeLock",
    "ServeState",
    "ServiceRunningError",
    "load_state",
    "render_state",
    "save_state",
    "serve_running",
    "state_path",
]

logger = logging.getLogger(__name__)

STATE_FILENAME = "scheduler.json"
LOCK_FILENAME = "serve.lock"

JobOutcome = Literal["ok", "error", "timeout", "cancelled", "running"]


class ServiceRunningError(PipelineError):
    """`signaldesk serve` is already running for this vault."""


@dataclass(slots=True)
class JobState:
    """One job's last run and its running totals."""

    name: str
    description: str = ""
    last_started: datetime | None = None
    last_finished: datetime | None = None
    outcome: JobOutcome | None = None
    duration: float | None = None
    summary: str | None = None
    error: str | None = None
    next_run: datetime | None = None
    runs: int = 0
    failures: int = 0
    consecutive_failures: int = 0
    last_success: datetime | None = None


@dataclass(slots=True)
class ServeState:
    """The whole state file: the process and its jobs."""

    pid: int | None = None
    started_at: datetime | None = None
    ready: bool = False
    stopped_at: datetime | None = None
    clean_exit: bool | None = None
    jobs: dict[str, JobState] = field(default_factory=dict)

    def job(self, name: str) -> JobState:
        """The state of ``name`` (created on first use)."""
        return self.jobs.setdefault(name, JobState(name))


def state_path(vault: Path) -> Path:
    """Where the state file of ``vault`` lives."""
    return vault / STATE_DIR / STATE_FILENAME


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


_TIME_FIELDS = ("last_started", "last_finished", "next_run", "last_success")


def _decode_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def render_state(state: ServeState) -> str:
    """The state file's text for ``state`` (a snapshot: later changes do not affect it)."""
    return json.dumps(_encode(asdict(state)), indent=2, ensure_ascii=False) + "\n"


def save_state(path: Path, state: ServeState) -> None:
    """Write ``state`` atomically (readers see the old file or the new one)."""
    atomic_write_text(path, render_state(state))


def load_state(path: Path) -> ServeState | None:
    """The state file's content; ``None`` when there is none or it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        logger.warning("cannot read the scheduler state %s: %s", path, exc)
        return None
    if not isinstance(data, dict):
        return None
    jobs: dict[str, JobState] = {}
    known = set(JobState.__dataclass_fields__)
    for name, raw in (data.get("jobs") or {}).items():
        if not isinstance(raw, dict):
            continue
        values = {k: v for k, v in raw.items() if k in known}
        for key in _TIME_FIELDS:
            values[key] = _decode_time(values.get(key))
        values["name"] = name
        jobs[name] = JobState(**values)
    return ServeState(
        pid=data.get("pid"),
        started_at=_decode_time(data.get("started_at")),
        ready=bool(data.get("ready")),
        stopped_at=_decode_time(data.get("stopped_at")),
        clean_exit=data.get("clean_exit"),
        jobs=jobs,
    )


class ServeLock:
    """An exclusive ``flock`` on ``.signaldesk/serve.lock``: one `serve` per vault.

    The kernel drops the lock when the process dies, so a crash never leaves a
    stale lock behind.
    """

    def __init__(self, vault: Path) -> None:
        self.path = vault / STATE_DIR / LOCK_FILENAME
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or fail at once.

        :raises ServiceRunningError: another `serve` holds it.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise ServiceRunningError(
                f"`signaldesk serve` is already running for this vault ({self.path})",
                hint="see `signaldesk status`; stop the other one first",
            ) from exc
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        """Let go of the lock (idempotent)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the ``with`` block."""
        self.acquire()
        try:
            yield
        finally:
            self.release()


def serve_running(vault: Path) -> bool:
    """Whether a `serve` process holds the vault's lock right now."""
    path = vault / STATE_DIR / LOCK_FILENAME
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
