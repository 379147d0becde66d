"""The item ledger on PostgreSQL: one database shared by several `serve` workers.

The same rows, identities, stages and crash guarantees as the SQLite ledger
(:mod:`pipeline.ledger.store`): an item is inserted under its stable identity with
``ON CONFLICT DO NOTHING`` in the same transaction as the feed state that produced it
(so a retried feed, or two workers reading one drop folder, never doubles an item);
every later stage moves the row forward in one transaction; in-flight rows are picked
up again. What a shared ledger adds is *claims*, so that two workers never do the same
thing twice.

How a claim works, and why this way: a worker takes rows with ``UPDATE … WHERE id IN
(SELECT … FOR UPDATE SKIP LOCKED)``, writing its token into ``claimed_by`` (two workers
claiming at once skip each other's rows instead of waiting or taking them twice). The
claim lives as long as the worker's *connection*: on opening the ledger a worker takes
the session advisory lock ``(WORKER_LOCK_SPACE, token)``, which PostgreSQL releases when
the connection ends, whether the process exited, was killed with SIGKILL (the kernel
closes its socket) or its machine vanished (the server's TCP keepalives, which each
worker sets to about a minute for its own session, end it). A row whose ``claimed_by``
is no longer among :func:`live_workers` is free for anyone, at once.

The alternative, row locks held by one long transaction per batch, also dies with the
connection but would keep a transaction open while pages are fetched and notes written,
and every write of that batch would have to go through that one transaction (another
connection of the same worker updating a locked row waits for ever). A lease with a
heartbeat and an expiry would make a dead worker's items wait out the lease and depend
on the clocks of the machines. The session lock gives the immediacy of the first and
the short transactions of the second.

Claims are taken on: the feeds a scan polls (:meth:`PostgresLedger.claim_feeds`), the
items a worker inserts, resumes (:meth:`PostgresLedger.in_flight`), re-fetches
(:meth:`PostgresLedger.teasers_due`) or triages (:meth:`PostgresLedger.claim_items`).
They are let go when an item settles for good (duplicate, parked, triaged) and, for the
rest, when the worker's session ends. The one dedupe decision that must see every
worker's items is serialised across workers by a transaction advisory lock.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator, Collection, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from signaldesk.items import Item
from signaldesk.pipeline.errors import LedgerError
from signaldesk.pipeline.ledger.pg_queries import PostgresReading
from signaldesk.pipeline.ledger.pg_schema import (
    COMPONENT,
    MIGRATIONS,
    SCHEMA,
    WORKER_LOCK_SPACE,
)
from signaldesk.pipeline.ledger.pg_sql import PgTx, clean_params, pg_sql
from signaldesk.pipeline.ledger.records import (
    ENTRY_COLUMNS,
    DedupeVerdict,
    ItemStatus,
    LedgerEntry,
    entry_from_row,
    iso_utc,
    utcnow,
)
from signaldesk.pipeline.ledger.schema import RESUMABLE_STATUSES, SETTLED_STATUSES
from signaldesk.pipeline.ledger.settling import (
    batch_lookups,
    dedupe_keys,
    item_rows,
    plan_settle,
)
from signaldesk.pipeline.ledger.sql import LedgerTx, Row
from signaldesk.pipeline.ledger.writes import LedgerWrites
from signaldesk.postgres import PostgresSettings, connect, connect_async, migrate

if TYPE_CHECKING:
    import psycopg

__all__ = ["DEDUPE_LOCK", "PostgresLedger"]

logger = logging.getLogger(__name__)

# A worker whose machine vanished holds its claims until the server gives up on its
# connection: with these per-session settings after ~60 s (the OS default is two hours).
_KEEPALIVES = {"tcp_keepalives_idle": 30, "tcp_keepalives_interval": 10, "tcp_keepalives_count": 3}

# The transaction advisory lock every dedupe batch holds: a batch must see the items
# every earlier batch settled, whichever worker settled them.
DEDUPE_LOCK = (WORKER_LOCK_SPACE + 1, 0)
_TOKEN_LIMIT = 2**31 - 1


def _ledger_error(exc: Exception, where: str) -> LedgerError:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return LedgerError(
        f"the ledger in PostgreSQL ({where}) failed: {reason}",
        hint="check that the server is up and reachable (`signaldesk doctor`); the ledger "
        "keeps what was done, and the next run resumes where this one stopped",
    )


def _migrate(settings: PostgresSettings) -> None:
    with connect(settings) as conn:
        before = migrate(conn, COMPONENT, MIGRATIONS)
    if before < len(MIGRATIONS):
        logger.info("ledger (PostgreSQL) migrated to schema version %d", len(MIGRATIONS))


class PostgresLedger(PostgresReading, LedgerWrites):
    """The item ledger and feed table in PostgreSQL over one connection (use :meth:`open`).

    One connection per worker, like the SQLite ledger's single writer: its statements
    run one at a time (a lock), writes inside :meth:`transaction`. The connection is in
    autocommit mode, so a read holds nothing between statements.
    """

    shared = True
    # Triage and parking are done with an item: its claim goes with them.
    RELEASE_CLAIM = ", claimed_by = NULL"

    def __init__(
        self, conn: psycopg.AsyncConnection[Any], settings: PostgresSettings, token: int
    ) -> None:
        self._conn = conn
        self._settings = settings
        self.token = token
        self._lock = anyio.Lock()
        # Rows another worker may take: unclaimed, ours, or claimed by a worker whose
        # session is gone (`token` is our own integer, safe to inline).
        self._claimable = (
            f"(claimed_by IS NULL OR claimed_by = {token} "
            "OR claimed_by NOT IN (SELECT live_workers()))"
        )

    @property
    def where(self) -> str:
        return f"{self._settings.dsn} (schema {SCHEMA})"

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: PostgresSettings) -> AsyncIterator[PostgresLedger]:
        """Connect, migrate as needed and register as a worker.

        :raises PostgresError: the server cannot be reached or has a newer schema.
        :raises LedgerError: the server failed while the ledger was in use.
        """
        import psycopg

        where = settings.dsn
        try:
            await anyio.to_thread.run_sync(_migrate, settings)
            conn = await connect_async(settings, autocommit=True)
        except psycopg.Error as exc:
            raise _ledger_error(exc, where) from exc
        try:
            try:
                await conn.execute(f"SET search_path TO {SCHEMA}")
                for name, value in _KEEPALIVES.items():
                    await conn.execute(f"SET {name} = {value}")
                token = await _register(conn)
            except psycopg.Error as exc:
                raise _ledger_error(exc, where) from exc
            ledger = cls(conn, settings, token)
            try:
                yield ledger
                await ledger.release_claims()
            except psycopg.Error as exc:
                raise _ledger_error(exc, where) from exc
            except BaseExceptionGroup as group:
                # A failure inside a task group (a scan's stages) arrives wrapped.
                found = _first_pg_error(group)
                if found is None:
                    raise
                raise _ledger_error(found, where) from group
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await conn.close()  # the worker's claims end with the session
                except psycopg.Error as exc:
                    logger.warning("the ledger connection did not close cleanly: %s", exc)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[psycopg.AsyncCursor[Any]]:
        """``BEGIN`` … ``COMMIT`` (``ROLLBACK`` on error), one at a time across tasks."""
        async with self._lock, self._conn.cursor() as cursor:
            await cursor.execute("BEGIN")
            try:
                yield cursor
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await cursor.execute("ROLLBACK")
                raise
            else:
                with anyio.CancelScope(shield=True):
                    await cursor.execute("COMMIT")

    async def release_claims(self) -> None:
        """Let go of everything this worker still holds (a clean close: the others need
        not wait for the server to notice the session has ended)."""
        with anyio.CancelScope(shield=True):
            async with self.transaction() as cursor:
                for table in ("items", "feeds"):
                    await cursor.execute(
                        f"UPDATE {table} SET claimed_by = NULL WHERE claimed_by = %s",
                        (self.token,),
                    )
                await cursor.execute(
                    "SELECT pg_advisory_unlock(%s, %s)", (WORKER_LOCK_SPACE, self.token)
                )

    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        async with self._lock, self._conn.cursor() as cursor:
            await cursor.execute(sql, clean_params(params))
            return [tuple(row) for row in await cursor.fetchall()]

    # -- portable SQL -------------------------------------------------------------------

    @asynccontextmanager
    async def write(self) -> AsyncIterator[LedgerTx]:
        """A write transaction for portable SQL (see :mod:`pipeline.ledger.sql`)."""
        async with self.transaction() as cursor:
            yield PgTx(cursor)

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return await self._rows(pg_sql(sql), params)

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = await self._rows(pg_sql(sql), params)
        return rows[0] if rows else None

    def among(self, values: Sequence[Any]) -> tuple[str, Any]:
        """One of ``values``: an array parameter."""
        return "= ANY(?)", list(values)

    # -- claims -------------------------------------------------------------------------

    async def claim_feeds(self, urls: Sequence[str], *, due: datetime | None) -> set[str]:
        """Claim the feeds of ``urls`` no live worker holds (and, with ``due``, that are
        still due then: one another worker polled meanwhile is not polled again)."""
        if not urls:
            return set()
        when = "" if due is None else "AND (next_check_at IS NULL OR next_check_at <= %s) "
        params: list[Any] = [list(urls)] + ([] if due is None else [iso_utc(due)])
        async with self.transaction() as cursor:
            await cursor.execute(
                f"UPDATE feeds SET claimed_by = {self.token} WHERE url IN ("
                "SELECT url FROM feeds WHERE url = ANY(%s) AND disabled_reason IS NULL "
                f"{when}AND {self._claimable} FOR UPDATE SKIP LOCKED) RETURNING url",
                params,
            )
            return {str(row[0]) for row in await cursor.fetchall()}

    async def claim_items(self, item_ids: Sequence[str]) -> set[str]:
        """Claim the items of ``item_ids`` no live worker holds."""
        if not item_ids:
            return set()
        async with self.transaction() as cursor:
            await cursor.execute(
                f"UPDATE items SET claimed_by = {self.token} WHERE id IN ("
                f"SELECT id FROM items WHERE id = ANY(%s) AND {self._claimable} "
                "FOR UPDATE SKIP LOCKED) RETURNING id",
                [list(item_ids)],
            )
            return {str(row[0]) for row in await cursor.fetchall()}

    # -- reading ------------------------------------------------------------------------

    async def in_flight(
        self, *, kinds: Collection[str] | None = None, abandoned: bool = False
    ) -> list[LedgerEntry]:
        """In-flight entries of ``kinds`` no live worker holds (a dead worker's, or an
        earlier run's), claimed for this one, oldest first.

        :param abandoned: leave out this worker's own (on their way through its stages).
        """
        claimable = self._claimable
        if abandoned:
            claimable = f"(claimed_by IS DISTINCT FROM {self.token} AND {claimable})"
        of_kinds = "" if kinds is None else "AND source_kind = ANY(%s) "
        params: list[Any] = [list(RESUMABLE_STATUSES)]
        if kinds is not None:
            params.append(list(kinds))
        async with self.transaction() as cursor:
            await cursor.execute(
                f"UPDATE items SET claimed_by = {self.token} WHERE id IN ("
                f"SELECT id FROM items WHERE status = ANY(%s) {of_kinds}AND {claimable} "
                f"FOR UPDATE SKIP LOCKED) RETURNING {ENTRY_COLUMNS}",
                params,
            )
            rows = await cursor.fetchall()
        entries = [entry_from_row(row) for row in rows]
        return sorted(entries, key=lambda e: (e.discovered_at, e.id))

    async def teasers_due(
        self, *, now: datetime, max_attempts: int, limit: int
    ) -> list[LedgerEntry]:
        """As the SQLite ledger's, claimed for this worker (so one page is fetched once)."""
        async with self.transaction() as cursor:
            await cursor.execute(
                f"UPDATE items SET claimed_by = {self.token} WHERE id IN ("
                "SELECT id FROM items WHERE source_kind = 'rss' "
                "AND status IN ('pending', 'filed', 'rejected') "
                "AND COALESCE((payload::json ->> 'teaser')::boolean, false) "
                "AND payload::json #>> '{extra,full_text_after}' <= %s "
                "AND COALESCE((payload::json #>> '{extra,full_text_attempts}')::integer, 0) < %s "
                f"AND {self._claimable} ORDER BY updated_at LIMIT %s FOR UPDATE SKIP LOCKED) "
                f"RETURNING {ENTRY_COLUMNS}",
                (iso_utc(now), max_attempts, limit),
            )
            rows = await cursor.fetchall()
        return sorted((entry_from_row(row) for row in rows), key=lambda e: e.updated_at)

    # -- recording ----------------------------------------------------------------------

    async def insert_items(
        self, tx: LedgerTx, items: Iterable[Item], *, status: ItemStatus, now: datetime
    ) -> list[str]:
        """Insert ``items`` inside an open transaction, claimed for this worker; returns
        the ids that were new. ``ON CONFLICT DO NOTHING … RETURNING`` is exact under
        concurrency: of two workers inserting one id, the second waits for the first to
        commit and gets nothing back."""
        rows = item_rows(items, status=status, now=now)
        if not rows:
            return []
        columns = list(zip(*rows.values(), strict=True))
        inserted = await tx.fetch_all(
            "INSERT INTO items (id, source_kind, source_id, guid, url, canonical_url, title, "
            "status, payload, discovered_at, updated_at, claimed_by) "
            f"SELECT *, {self.token} FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], "
            "?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[]) "
            "ON CONFLICT (id) DO NOTHING RETURNING id",
            [list(column) for column in columns],
        )
        new = {str(row[0]) for row in inserted}
        return [item_id for item_id in rows if item_id in new]

    async def settle_many(
        self, batch: Sequence[tuple[str, Item]], *, now: datetime | None = None
    ) -> list[DedupeVerdict]:
        """As the SQLite ledger's; batches of all workers take turns (an advisory lock),
        so two copies of one signal settled by two workers at once are not both new."""
        if not batch:
            return []
        prepared = await anyio.to_thread.run_sync(dedupe_keys, batch)
        ids = [p[0] for p in prepared]
        guids, urls, bands = batch_lookups(prepared)
        async with self.transaction() as cursor:
            await cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", DEDUPE_LOCK)
            exact: list[Any] = []
            near: list[Any] = []
            if guids or urls:
                await cursor.execute(
                    "SELECT id, guid, canonical_url FROM items WHERE (guid = ANY(%s) "
                    "OR canonical_url = ANY(%s)) AND status = ANY(%s) AND NOT (id = ANY(%s)) "
                    "ORDER BY discovered_at",
                    (guids, urls, list(SETTLED_STATUSES), ids),
                )
                exact = list(await cursor.fetchall())
            if bands:
                await cursor.execute(
                    "SELECT i.id, i.simhash FROM items i WHERE i.id IN (SELECT b.item_id "
                    "FROM simhash_bands b WHERE b.band = ANY(%s)) AND NOT (i.id = ANY(%s)) "
                    "ORDER BY i.discovered_at",
                    (bands, ids),
                )
                near = list(await cursor.fetchall())
            plan = plan_settle(prepared, exact, near, now=now or utcnow())
            tx = PgTx(cursor)
            await tx.executemany(
                "UPDATE items SET status = 'duplicate', duplicate_of = ?, payload = ?, "
                "canonical_url = ?, simhash = ?, updated_at = ?, settled_at = ?, "
                "claimed_by = NULL WHERE id = ?",
                plan.duplicates,
            )
            await tx.executemany(
                "UPDATE items SET status = 'pending', duplicate_of = NULL, payload = ?, "
                "title = ?, url = ?, canonical_url = ?, simhash = ?, updated_at = ?, "
                "settled_at = ? WHERE id = ?",
                plan.uniques,
            )
            await tx.executemany(
                "INSERT INTO simhash_bands (band, item_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                plan.new_bands,
            )
        return plan.verdicts


async def _register(conn: psycopg.AsyncConnection[Any]) -> int:
    """Take a free worker token: its session advisory lock is held until the connection
    ends (a token held by a live worker is refused by the server, so none is shared)."""
    while True:
        token = secrets.randbelow(_TOKEN_LIMIT) + 1
        cursor = await conn.execute(
            "SELECT pg_try_advisory_lock(%s, %s)", (WORKER_LOCK_SPACE, token)
        )
        row = await cursor.fetchone()
        if row is not None and row[0]:
            return token


def _first_pg_error(group: BaseExceptionGroup[BaseException]) -> Exception | None:
    import psycopg

    for exc in group.exceptions:
        if isinstance(exc, psycopg.Error):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _first_pg_error(exc)
            if found is not None:
                return found
    return None
