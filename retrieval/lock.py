"""One writer at a time: an advisory lock file beside the index database.

``fcntl.flock`` locks belong to the open file description, so the kernel drops
the lock when the process dies, even by ``kill -9``: a crashed indexer never
leaves a stale lock behind, unlike a PID file. Readers do not take the lock;
SQLite's WAL mode lets them query while the writer works.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from pathlib import Path
from types import TracebackType

from signaldesk.retrieval.errors import IndexLockedError

__all__ = ["DEFAULT_LOCK_TIMEOUT", "IndexLock", "LockWaitAborted", "lock_path_for"]

logger = logging.getLogger(__name__)

DEFAULT_LOCK_TIMEOUT = 30.0
_POLL_SECONDS = 0.05


class LockWaitAborted(Exception):
    """The wait for the lock was given up on request (not an error to report)."""


def lock_path_for(db_path: Path) -> Path:
    """The lock file guarding ``db_path`` (``index.db`` → ``index.db.lock``)."""
    return db_path.with_name(db_path.name + ".lock")


class IndexLock:
    """An exclusive, process-wide writer lock on one index database.

    Use as a context manager or call :meth:`acquire` / :meth:`release`. Waiting
    is bounded: after ``timeout`` seconds :class:`IndexLockedError` is raised,
    and setting ``abort`` ends the wait at once.
    """

    def __init__(
        self,
        db_path: Path,
        *,
        timeout: float = DEFAULT_LOCK_TIMEOUT,
        abort: threading.Event | None = None,
    ) -> None:
        self.path = lock_path_for(db_path)
        self.timeout = timeout
        self.abort = abort
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock, polling until ``timeout``.

        :raises IndexLockedError: another process (or another :class:`IndexLock`
            in this one) still holds it after ``timeout`` seconds.
        :raises LockWaitAborted: ``abort`` was set while waiting.
        """
        if self._fd is not None:
            raise RuntimeError("IndexLock is not re-entrant")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if self.abort is not None and self.abort.is_set():
                    os.close(fd)
                    raise LockWaitAborted(f"stopped while waiting for {self.path}") from None
                if time.monotonic() >= deadline:
                    holder = _read_holder(fd)
                    os.close(fd)
                    raise IndexLockedError(
                        f"the index is being written by another process{holder} "
                        f"(waited {self.timeout:g} s for {self.path})",
                        hint="wait for the other `signaldesk index` (or `serve`) to finish, "
                        "then run the command again",
                    ) from None
                time.sleep(_POLL_SECONDS)
        # Who holds it, for the message another waiter prints; advisory only.
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        logger.debug("index lock taken: %s", self.path)

    def release(self) -> None:
        """Drop the lock (a no-op when it is not held)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        logger.debug("index lock released: %s", self.path)

    def __enter__(self) -> IndexLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""
