"""Preparing notes in parallel: chunking and scrubbing are pure-Python CPU work.

The GIL keeps threads from helping, so a large run (a first build, a full
rebuild) spreads :func:`~retrieval._prepare.prepare_many` over worker
processes while the indexer's own thread embeds and writes what is already
prepared. Small incremental runs stay in-process: starting workers costs more
than a few dozen notes.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager

from signaldesk.retrieval._prepare import (
    FileJob,
    Outcome,
    PrepareOptions,
    prepare_file,
    prepare_many,
)

__all__ = ["POOL_MIN_FILES", "default_workers", "prepared"]

logger = logging.getLogger(__name__)

# Below this many files the in-process path is faster than starting workers.
POOL_MIN_FILES = 600
# Files per task sent to a worker, and tasks in flight per worker: enough to
# keep every worker busy, few enough that memory stays flat on any vault size.
_TASK_FILES = 48
_IN_FLIGHT_PER_WORKER = 3
_PARENT_POLL_SECONDS = 0.5


def default_workers() -> int:
    """Worker processes for a large run: the CPUs this process may use, at most 4."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


@contextmanager
def prepared(
    vault: str,
    jobs: Sequence[FileJob],
    options: PrepareOptions,
    *,
    workers: int,
) -> Iterator[Iterator[Outcome]]:
    """The outcome of every job, in job order; leaving the block cancels what is pending."""
    if workers <= 1 or len(jobs) < POOL_MIN_FILES:
        yield (prepare_file(vault, job, options) for job in jobs)
        return
    # "spawn": the indexer runs in a thread of a process that may hold locks
    # (the event loop, SQLite); forking such a process can deadlock the child.
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_init,
        initargs=(os.getpid(),),
    )
    try:
        yield _with_fallback(
            _ordered(pool, vault, jobs, options, workers * _IN_FLIGHT_PER_WORKER),
            vault,
            jobs,
            options,
        )
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _with_fallback(
    outcomes: Iterator[Outcome],
    vault: str,
    jobs: Sequence[FileJob],
    options: PrepareOptions,
) -> Iterator[Outcome]:
    """Finish in this process if the pool breaks (a worker killed, spawn impossible)."""
    done = 0
    try:
        for outcome in outcomes:
            yield outcome
            done += 1
    except BrokenProcessPool as exc:
        logger.warning("worker processes failed (%s); preparing the rest in-process", exc)
        for job in jobs[done:]:
            yield prepare_file(vault, job, options)


def _ordered(
    pool: ProcessPoolExecutor,
    vault: str,
    jobs: Sequence[FileJob],
    options: PrepareOptions,
    window: int,
) -> Iterator[Outcome]:
    pending: deque[Future[list[Outcome]]] = deque()
    starts: Iterator[int] = iter(range(0, len(jobs), _TASK_FILES))
    for start in starts:
        pending.append(
            pool.submit(prepare_many, vault, list(jobs[start : start + _TASK_FILES]), options)
        )
        if len(pending) >= window:
            break
    while pending:
        outcomes = pending.popleft().result()
        following = next(starts, None)
        if following is not None:
            pending.append(
                pool.submit(
                    prepare_many,
                    vault,
                    list(jobs[following : following + _TASK_FILES]),
                    options,
                )
            )
        yield from outcomes


def _worker_init(parent: int) -> None:
    # Ctrl-C reaches the whole process group; the parent decides how to stop
    # (finish the transaction in flight), so the workers must not die first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Trigger: the indexer is killed (kill -9, the OOM killer) mid-run.
    # Why: an idle spawned worker blocks on its task queue forever (the queue's
    # pipe stays open in the worker itself), and so does multiprocessing's resource
    # tracker; measured, they were still there 11 minutes after the kill.
    # Outcome: each worker exits within a second of its parent's death. The parent's
    # pid comes from the parent: a worker still starting up when the parent died
    # would otherwise take its new parent (init) for the one to watch.
    threading.Thread(target=_exit_with, args=(parent,), name="parent-watch", daemon=True).start()


def _exit_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_SECONDS)
    os._exit(1)
