"""The durable item ledger: every signal's identity, stage and payload, in SQLite.

One :class:`Ledger` owns one aiosqlite connection, which is also the single
writer: every write runs inside :meth:`Ledger.transaction`, which holds a lock
across the ``BEGIN … COMMIT`` so concurrent pipeline stages never interleave
their statements in one transaction. Readers that live elsewhere (the CLI, the
MCP server) open their own connections; WAL lets them read during a scan.

Why a crash loses nothing and writes nothing twice: an item is inserted with
``INSERT OR IGNORE`` under a stable identity (:func:`item_identity`), in the
same transaction as the feed state that produced it; every later stage moves
the row forward in one transaction; and a run starts by re-queueing rows left
in the in-flight statuses (:data:`~pipeline.ledger.schema.RESUMABLE_STATUSES`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import aiosqlite
import anyio
import anyio.to_thread

from signaldesk.items import Item
from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.errors import LedgerError
from signaldesk.pipeline.ledger.base import ItemLedger
from signaldesk.pipeline.ledger.faults import first_sqlite_error, ledger_error
from signaldesk.pipeline.ledger.queries import LedgerReading
from signaldesk.pipeline.ledger.records import (
    ENTRY_COLUMNS,
    DedupeVerdict,
    ItemStatus,
    LedgerEntry,
    entry_from_row,
    global_guid,
    iso_utc,
    item_from_json,
    item_identity,
    item_to_json,
    utcnow,
)
from signaldesk.pipeline.ledger.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    SETTLED_STATUSES,
)
from signaldesk.pipeline.ledger.settling import (
    batch_lookups,
    dedupe_keys,
    item_rows,
    plan_settle,
)
from signaldesk.pipeline.ledger.sql import LedgerTx, Row, SqliteTx
from signaldesk.pipeline.ledger.writes import LedgerWrites
from signaldesk.retrieval.store import split_statements

__all__ = [
    "BUSY_TIMEOUT_MS",
    "DedupeVerdict",
    "ItemStatus",
    "Ledger",
    "LedgerEntry",
    "global_guid",
    "item_from_json",
    "item_identity",
    "item_to_json",
    "ledger_exists",
    "ledger_path",
    "open_ledger",
    "utcnow",
]

logger = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000


async def _migrate(conn: aiosqlite.Connection) -> None:
    """Bring the ledger to :data:`SCHEMA_VERSION`, one step per immediate transaction.

    The version is read again inside each step's write-locked transaction: two jobs of
    one serve (or two processes) opening a new ledger at once both saw the migration as
    due, and the second failed with "table meta already exists".
    """
    _check_not_newer(await _user_version(conn))
    while (version := await _user_version(conn)) < SCHEMA_VERSION:
        await conn.execute("BEGIN IMMEDIATE")
        try:
            version = await _user_version(conn)
            _check_not_newer(version)
            if version < SCHEMA_VERSION:
                for statement in split_statements(MIGRATIONS[version]):
                    await conn.execute(statement)
                await conn.execute(f"PRAGMA user_version = {version + 1}")
            await conn.execute("COMMIT")
        except BaseException:
            # SQLite may have rolled back already (a full disk): keep the error that says why.
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await conn.execute("ROLLBACK")
            raise
        if version < SCHEMA_VERSION:
            logger.info("ledger migrated to schema version %d", version + 1)


async def _user_version(conn: aiosqlite.Connection) -> int:
    async with conn.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


def _check_not_newer(version: int) -> None:
    if version > SCHEMA_VERSION:
        raise LedgerError(
            f"the ledger is at schema version {version}, newer than this signaldesk "
            f"({SCHEMA_VERSION})",
            hint="upgrade signaldesk",
        )


async def _join_worker(pending: aiosqlite.Connection) -> None:
    thread = getattr(pending, "_thread", None)
    if thread is not None and thread.is_alive():
        await anyio.to_thread.run_sync(thread.join, 5.0)


async def _enter_wal(conn: aiosqlite.Connection) -> None:
    """Put the ledger in WAL mode, waiting out another connection that is opening it.

    Switching a new file to WAL needs an exclusive lock, and SQLite answers "database is
    locked" at once rather than through the busy handler when another connection holds a
    lock on the file meanwhile (serve's jobs opening a new ledger together: 4% of
    three-way opens failed before this wait).
    """
    deadline = anyio.current_time() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            await conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or anyio.current_time() >= deadline:
                raise
            await anyio.sleep(0.005)


class Ledger(LedgerReading, LedgerWrites):
    """The item ledger and feed table over one aiosqlite connection (use :meth:`open`)."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self._lock = anyio.Lock()

    @classmethod
    @asynccontextmanager
    async def open(cls, path: Path) -> AsyncIterator[Ledger]:
        """Open (creating and migrating as needed) the ledger at ``path``.

        :raises LedgerError: the file cannot be opened or is not a ledger.
        """
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ledger_error(exc, path) from exc
        pending = aiosqlite.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            conn = await pending
        except sqlite3.Error as exc:
            # aiosqlite stops its worker thread on a failed connect; wait for it, or
            # it reports to an event loop that is closed by then ("Event loop is closed").
            await _join_worker(pending)
            raise ledger_error(exc, path) from exc
        try:
            try:
                await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                await _enter_wal(conn)
                await conn.execute("PRAGMA synchronous = NORMAL")
                await conn.execute("PRAGMA foreign_keys = ON")
                await _migrate(conn)
            except sqlite3.Error as exc:
                raise ledger_error(exc, path) from exc
            try:
                yield cls(conn, path)
            except sqlite3.Error as exc:
                raise ledger_error(exc, path) from exc
            except BaseExceptionGroup as group:
                # A failure inside a task group (a scan's stages) arrives wrapped.
                found = first_sqlite_error(group)
                if found is None:
                    raise
                raise ledger_error(found, path) from group
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await conn.close()
                except sqlite3.Error as exc:  # a full disk can fail the final checkpoint
                    logger.warning("the ledger %s did not close cleanly: %s", path, exc)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """The single write path: ``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on error),
        serialised across tasks."""
        async with self._lock:
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self._conn.rollback()
                raise
            else:
                with anyio.CancelScope(shield=True):
                    await self._conn.commit()

    @property
    def connection(self) -> aiosqlite.Connection:
        """The underlying connection, for reads by modules sharing this ledger."""
        return self._conn

    # -- the portable SQL of the ledger's neighbours (see pipeline.ledger.sql) -------

    # One process owns a SQLite ledger: nothing to claim from other workers.
    shared = False

    @property
    def where(self) -> str:
        return str(self.path)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[LedgerTx]:
        """A write transaction for portable SQL (see :mod:`pipeline.ledger.sql`)."""
        async with self.transaction() as conn:
            yield SqliteTx(conn)

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Every row of a read-only query (portable SQL)."""
        return await SqliteTx(self._conn).fetch_all(sql, params)

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """The first row of a read-only query (portable SQL), if any."""
        return await SqliteTx(self._conn).fetch_one(sql, params)

    def among(self, values: Sequence[Any]) -> tuple[str, Any]:
        """One of ``values``: a JSON array read by ``json_each`` (one parameter)."""
        return "IN (SELECT value FROM json_each(?))", json.dumps(list(values))

    async def claim_feeds(self, urls: Sequence[str], *, due: datetime | None) -> set[str]:
        """The feeds of ``urls`` this worker may poll now: all of them (one process)."""
        return set(urls)

    async def claim_items(self, item_ids: Sequence[str]) -> set[str]:
        """The items of ``item_ids`` this worker may work on now: all of them (one
        process; two runs on one machine take turns under the triage lock)."""
        return set(item_ids)

    # -- recording ----------------------------------------------------------------

    async def insert_items(
        self,
        tx: LedgerTx,
        items: Iterable[Item],
        *,
        status: ItemStatus,
        now: datetime,
    ) -> list[str]:
        """Insert ``items`` inside an open transaction (:meth:`write`); returns the ids
        that were new.

        Two statements whatever the count (each aiosqlite call is a thread round trip):
        which ids exist already, then one ``INSERT OR IGNORE`` batch. The open
        ``BEGIN IMMEDIATE`` keeps any other writer out in between.
        """
        rows = item_rows(items, status=status, now=now)
        if not rows:
            return []
        ids = list(rows)
        marks = ", ".join("?" for _ in ids)
        existing = {
            r[0] for r in await tx.fetch_all(f"SELECT id FROM items WHERE id IN ({marks})", ids)
        }
        new = [i for i in ids if i not in existing]
        await tx.executemany(
            "INSERT OR IGNORE INTO items (id, source_kind, source_id, guid, url, canonical_url, "
            "title, status, payload, discovered_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [rows[i] for i in new],
        )
        return new

    async def teasers_due(
        self, *, now: datetime, max_attempts: int, limit: int
    ) -> list[LedgerEntry]:
        """Feed entries settled on their teaser whose article page is due another try
        (``extra.full_text_after`` passed, fewer than ``max_attempts`` tries), oldest first."""
        async with self._conn.execute(
            f"SELECT {ENTRY_COLUMNS} FROM items WHERE source_kind = 'rss' "
            "AND status IN ('pending', 'filed', 'rejected') "
            "AND json_extract(payload, '$.teaser') "
            "AND json_extract(payload, '$.extra.full_text_after') <= ? "
            "AND COALESCE(json_extract(payload, '$.extra.full_text_attempts'), 0) < ? "
            "ORDER BY updated_at LIMIT ?",
            (iso_utc(now), max_attempts, limit),
        ) as cursor:
            return [entry_from_row(row) async for row in cursor]

    async def settle_many(
        self, batch: Sequence[tuple[str, Item]], *, now: datetime | None = None
    ) -> list[DedupeVerdict]:
        """Dedupe a batch in one transaction: each item becomes ``pending`` or a
        ``duplicate`` of the earliest settled item (or earlier batch member) sharing
        its global GUID, its canonical URL, or near-identical text.

        A fixed number of statements per batch, whatever its size: the candidate
        rows are read with two indexed queries, the verdicts written with three
        batched statements. Calls must not run concurrently with each other for the
        verdicts to hold (intake runs one dedupe worker); each call is atomic.
        """
        if not batch:
            return []
        # The fingerprints (~1 ms of CPU per article) are computed in a worker thread, so
        # a batch of 64 does not hold every other task of the scan up for that long.
        prepared = await anyio.to_thread.run_sync(dedupe_keys, batch)
        ids = [p[0] for p in prepared]
        guids, urls, bands = batch_lookups(prepared)
        settled = ", ".join(f"'{s}'" for s in SETTLED_STATUSES)
        not_batch = f"id NOT IN ({', '.join('?' for _ in ids)})"
        async with self.transaction() as conn:
            exact: Iterable[Sequence[Any]] = ()
            near: Iterable[Sequence[Any]] = ()
            if guids or urls:
                # Only non-empty IN lists: `x IN ()` stops SQLite using the indexes.
                keys = [
                    f"{column} IN ({', '.join('?' for _ in values)})"
                    for column, values in (("guid", guids), ("canonical_url", urls))
                    if values
                ]
                exact = await conn.execute_fetchall(
                    f"SELECT id, guid, canonical_url FROM items WHERE ({' OR '.join(keys)}) "
                    f"AND status IN ({settled}) AND {not_batch} ORDER BY discovered_at",
                    (*guids, *urls, *ids),
                )
            if bands:
                near = await conn.execute_fetchall(
                    "SELECT DISTINCT i.id, i.simhash FROM simhash_bands b JOIN items i "
                    f"ON i.id = b.item_id WHERE b.band IN ({', '.join('?' for _ in bands)}) "
                    f"AND i.{not_batch} ORDER BY i.discovered_at",
                    (*bands, *ids),
                )
            plan = plan_settle(prepared, exact, near, now=now or utcnow())
            if plan.duplicates:
                await conn.executemany(
                    "UPDATE items SET status = 'duplicate', duplicate_of = ?, payload = ?, "
                    "canonical_url = ?, simhash = ?, updated_at = ?, settled_at = ? WHERE id = ?",
                    plan.duplicates,
                )
            if plan.uniques:
                await conn.executemany(
                    "UPDATE items SET status = 'pending', duplicate_of = NULL, payload = ?, "
                    "title = ?, url = ?, canonical_url = ?, simhash = ?, updated_at = ?, "
                    "settled_at = ? WHERE id = ?",
                    plan.uniques,
                )
            if plan.new_bands:
                await conn.executemany(
                    "INSERT OR IGNORE INTO simhash_bands (band, item_id) VALUES (?, ?)",
                    plan.new_bands,
                )
        return plan.verdicts

    async def full_text_arrived(self) -> list[str]:
        """Items filed or rejected on a teaser whose stored item now has the full text."""
        rows = await self._conn.execute_fetchall(
            "SELECT id FROM items WHERE status IN ('filed', 'rejected') "
            "AND json_extract(scores, '$.teaser') = 1 "
            "AND coalesce(json_extract(payload, '$.teaser'), 0) = 0 ORDER BY discovered_at"
        )
        return [str(row[0]) for row in rows]

    async def index_queue(self) -> list[str]:
        """Vault paths triage wrote that no index run has looked at since, oldest first."""
        rows = await self._conn.execute_fetchall(
            "SELECT path FROM index_queue ORDER BY queued_at, path"
        )
        return [str(row[0]) for row in rows]


def ledger_path(workspace: Workspace) -> Path:
    """Where the workspace's ledger lives (``[pipeline] ledger_path``)."""
    return workspace.resolve(workspace.config.pipeline.ledger_path)


def ledger_exists(workspace: Workspace) -> bool:
    """Whether the workspace has a ledger yet (a shared one always does: opening it
    only migrates an empty database, so a reader may open it)."""
    if workspace.config.pipeline.ledger_backend == "postgres":
        return True
    return ledger_path(workspace).exists()


@asynccontextmanager
async def open_ledger(workspace: Workspace) -> AsyncIterator[ItemLedger]:
    """Open the workspace's ledger (created on first use): the SQLite file at
    ``[pipeline] ledger_path``, or with ``ledger_backend = "postgres"`` the team database
    of ``[postgres]``."""
    if workspace.config.pipeline.ledger_backend == "postgres":
        # Imported here: psycopg is an optional dependency of team mode.
        from signaldesk.pipeline.ledger.pg_store import PostgresLedger

        async with PostgresLedger.open(workspace.config.postgres) as shared:
            yield shared
        return
    async with Ledger.open(ledger_path(workspace)) as ledger:
        yield ledger
