"""Preparing notes in parallel: chunking and scrubbing are pure-Python CPU work.

The GIL keeps threads from helping, so a large run (a first build, a full
rebuild) spreads :func:`~retrieval._prepare.prepare_many` over worker
processes while the indexer's own thread embeds and writes what is already
prepared. Small incremental runs stay in-process: starting workers costs more
than a few dozen notes.

Each worker has a pipe of its own and nothing else is shared with it: no queue
whose lock a killed worker could take with it, no manager thread that could wait
forever. A worker that dies is seen at once (its sentinel), and the rest of the
run is prepared in this process. A worker whose parent dies reads end-of-file
from its pipe and exits.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess

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
# A task (48 paths and stats) pickles to a few KB, so the tasks in flight fit
# in a pipe's buffer and sending one never waits on a busy worker.
_TASK_FILES = 48
_IN_FLIGHT_PER_WORKER = 3
# How long a worker may take to notice its pipe closed (it finishes the task in
# hand first) before it is terminated.
_STOP_SECONDS = 5.0


class WorkerLost(RuntimeError):
    """A worker process died or its pipe broke; the run goes on in-process."""


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
    """The outcome of every job, in job order; leaving the block stops the workers."""
    if workers <= 1 or len(jobs) < POOL_MIN_FILES:
        yield (prepare_file(vault, job, options) for job in jobs)
        return
    crew = _Crew(vault, options)
    try:
        crew.start(workers)
        yield _with_fallback(crew.outcomes(jobs), vault, jobs, options)
    finally:
        crew.stop()


def _with_fallback(
    outcomes: Iterator[Outcome],
    vault: str,
    jobs: Sequence[FileJob],
    options: PrepareOptions,
) -> Iterator[Outcome]:
    """Finish in this process if a worker is lost (killed, out of memory, spawn impossible)."""
    done = 0
    try:
        for outcome in outcomes:
            yield outcome
            done += 1
    except WorkerLost as exc:
        logger.warning("worker processes failed (%s); preparing the rest in-process", exc)
        for job in jobs[done:]:
            yield prepare_file(vault, job, options)


class _Crew:
    """Worker processes, each fed tasks round-robin through its own pipe."""

    def __init__(self, vault: str, options: PrepareOptions) -> None:
        self._vault = vault
        self._options = options
        self._workers: list[tuple[BaseProcess, Connection]] = []
        self._start_error: OSError | None = None

    def start(self, count: int) -> None:
        # "spawn": the indexer runs in a thread of a process that may hold locks
        # (the event loop, SQLite); forking such a process can deadlock the child.
        context = multiprocessing.get_context("spawn")
        try:
            for _ in range(count):
                ours, theirs = context.Pipe()
                process = context.Process(
                    target=_serve,
                    args=(theirs, self._vault, self._options),
                    name="signaldesk-prepare",
                    daemon=True,
                )
                process.start()
                # Only the worker holds its end now: when this process dies, the
                # worker's next read or write fails and it exits.
                theirs.close()
                self._workers.append((process, ours))
        except OSError as exc:  # no processes left (ulimit), no memory to spawn
            self._start_error = exc

    def outcomes(self, jobs: Sequence[FileJob]) -> Iterator[Outcome]:
        if self._start_error is not None or not self._workers:
            raise WorkerLost(f"could not start workers: {self._start_error}")
        tasks = [list(jobs[i : i + _TASK_FILES]) for i in range(0, len(jobs), _TASK_FILES)]
        # Task k goes to worker k mod n, and each worker answers in the order it
        # was asked, so reading the workers round-robin keeps the job order.
        # Every answer read is followed by the task that keeps that worker's
        # queue full.
        window = len(self._workers) * _IN_FLIGHT_PER_WORKER
        for index in range(min(window, len(tasks))):
            self._send(index, tasks[index])
        for index in range(len(tasks)):
            answer = self._receive(index)
            if index + window < len(tasks):
                self._send(index + window, tasks[index + window])
            yield from answer

    def _send(self, index: int, task: list[FileJob]) -> None:
        process, conn = self._workers[index % len(self._workers)]
        try:
            conn.send(task)
        except OSError as exc:
            raise WorkerLost(f"worker {process.pid}: {exc}") from exc

    def _receive(self, index: int) -> list[Outcome]:
        process, conn = self._workers[index % len(self._workers)]
        ready = wait([conn, process.sentinel])
        if conn not in ready:
            process.join()
            raise WorkerLost(f"worker {process.pid} exited with status {process.exitcode}")
        try:
            answer: list[Outcome] = conn.recv()
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            raise WorkerLost(f"worker {process.pid}: {exc or 'pipe closed'}") from exc
        return answer

    def stop(self) -> None:
        # Closing our ends is the stop signal: a worker waiting for a task reads
        # end-of-file, one busy with a task fails to send it back.
        for _, conn in self._workers:
            conn.close()
        for process, _ in self._workers:
            process.join(_STOP_SECONDS)
            if process.exitcode is None:
                process.kill()
                process.join()
        self._workers.clear()


def _serve(conn: Connection, vault: str, options: PrepareOptions) -> None:
    """A worker's loop: prepare each task it is sent until its pipe closes."""
    # Ctrl-C reaches the whole process group; the parent decides how to stop
    # (finish the transaction in flight), so the workers must not die first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        while True:
            conn.send(prepare_many(vault, conn.recv(), options))
    except (EOFError, OSError):
        return
