"""The retriever's read connections: a small pool on the live index generation.

A full rebuild publishes a new database file (see :mod:`retrieval.generations`).
Before handing out a connection the pool compares a cheap fingerprint of the
pointer and of the live file (two ``stat`` calls); when it changed, the pool
leases the new generation, checks it, and from then on hands out connections to
it. Searches already running finish on the old file; its idle connections are
closed at once, busy ones when they come back, and the old lease is released
with the last of them, so the writer can delete the file.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from signaldesk.retrieval.errors import IndexUnavailableError, RetrievalError
from signaldesk.retrieval.generations import ReaderLease, pointer_token, read_pointer
from signaldesk.retrieval.store import Connection, connect

__all__ = ["NO_INDEX_HINT", "ReaderPool", "lease_and_check"]

logger = logging.getLogger(__name__)

NO_INDEX_HINT = "run `signaldesk index` to build it"

# (pointer inode, mtime, size) or None, and the live file's (device, inode).
_Token = tuple[tuple[int, int, int] | None, tuple[int, int] | None]


class _Generation:
    """The connections of one database file, and the lease that keeps it on disk."""

    def __init__(self, lease: ReaderLease) -> None:
        self.lease = lease
        self.path = lease.db
        self.idle: list[Any] = []
        self.busy = 0


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def lease_and_check(
    base: Path, check: Callable[[Any], None], then: Callable[[Any], None] | None = None
) -> tuple[_Generation, Any]:
    """Lease the live generation of the index at ``base`` and open one checked connection.

    :raises IndexUnavailableError: there is no index, or ``check`` says it cannot be searched.
    """
    lease = ReaderLease.take(base)
    if lease is None:
        raise IndexUnavailableError(f"no index at {base}", hint=NO_INDEX_HINT)
    try:
        conn = connect(lease.db, readonly=True)
    except BaseException:
        lease.release()
        raise
    try:
        check(conn)
        if then is not None:
            then(conn)
    except BaseException:
        conn.close()
        lease.release()
        raise
    return _Generation(lease), conn


class ReaderPool:
    """At most ``size`` read connections at once, always to the live generation.

    :param check: run (in a worker thread) on the first connection to every
        generation; raises :class:`IndexUnavailableError` when it cannot be searched.
    :param on_switch: run (in a worker thread) with the first connection to a newly
        published generation, after ``check`` (the retriever re-probes it).
    """

    def __init__(
        self,
        base: Path,
        first: _Generation,
        token: _Token,
        *,
        size: int,
        check: Callable[[Any], None],
    ) -> None:
        self._base = base
        self._current = first
        self._token = token
        self._slots = anyio.Semaphore(size)
        self._switch_lock = anyio.Lock()
        self._check = check
        self.on_switch: Callable[[Any], None] | None = None
        self._closed = False

    @classmethod
    async def open(cls, base: Path, *, size: int, check: Callable[[Any], None]) -> ReaderPool:
        """Lease the live generation of the index at ``base`` and check one connection.

        :raises IndexUnavailableError: there is no index, or it cannot be searched.
        """
        token = cls._read_token(base)
        generation, conn = await anyio.to_thread.run_sync(lease_and_check, base, check)
        generation.idle.append(conn)
        return cls(base, generation, token, size=size, check=check)

    @property
    def path(self) -> Path:
        """The database file searches read now."""
        return self._current.path

    @staticmethod
    def _read_token(base: Path) -> _Token:
        try:
            live = read_pointer(base)
        except RetrievalError:
            live = base
        return (pointer_token(base), _file_id(live))

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        """A connection to the live generation, for one search (one read transaction)."""
        async with self.connections(1) as (conn,):
            yield conn

    @asynccontextmanager
    async def connections(self, count: int) -> AsyncIterator[tuple[Any, ...]]:
        """``count`` connections to one generation, for one search in one slot.

        A search that reads two lists side by side holds two connections; a slot
        bounds searches, not connections (at most ``count`` per slot are kept idle).
        """
        if self._closed:
            raise RetrievalError("the retriever is closed")
        async with self._slots:
            await self._follow()
            generation = self._current
            # Counted as busy before any await: a switch meanwhile must not release
            # the lease of the file these connections are about to open.
            generation.busy += count
            conns: list[Connection] = []
            try:
                while len(conns) < count:
                    conns.append(
                        generation.idle.pop()
                        if generation.idle
                        else await anyio.to_thread.run_sync(
                            lambda: connect(generation.path, readonly=True)
                        )
                    )
            except BaseException:
                self._give_back(generation, conns, count)
                raise
            try:
                yield tuple(conns)
            finally:
                self._give_back(generation, conns, count)

    def _give_back(self, generation: _Generation, conns: list[Any], busy: int) -> None:
        """Return a search's connections: kept idle on the live generation, else closed."""
        generation.busy -= busy
        for conn in conns:
            if self._closed or generation is not self._current:
                conn.close()
            else:
                generation.idle.append(conn)
        self._retire(generation)

    async def _follow(self) -> None:
        """Move to a newly published generation, if there is one (cheap when not)."""
        token = self._read_token(self._base)
        if token == self._token:
            return
        async with self._switch_lock:
            token = self._read_token(self._base)
            if token == self._token:
                return
            generation, conn = await anyio.to_thread.run_sync(
                lease_and_check, self._base, self._check, self.on_switch
            )
            if generation.path == self._current.path and token[1] == self._token[1]:
                conn.close()
                generation.lease.release()
                self._token = token
                return
            old, self._current, self._token = self._current, generation, token
            generation.idle.append(conn)
            logger.info("searching the new index generation %s", generation.path.name)
            for idle in old.idle:
                idle.close()
            old.idle.clear()
            self._retire(old)

    def _retire(self, generation: _Generation) -> None:
        retired = generation is not self._current or self._closed
        if retired and generation.busy == 0 and not generation.idle:
            generation.lease.release()

    async def aclose(self) -> None:
        """Close every connection and release the lease; later use raises."""
        self._closed = True
        generation = self._current
        for conn in generation.idle:
            conn.close()
        generation.idle.clear()
        self._retire(generation)
