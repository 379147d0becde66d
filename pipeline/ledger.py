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
in the in-flight statuses (:data:`~pipeline.ledger_schema.RESUMABLE_STATUSES`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

import aiosqlite
import anyio

from pipeline.dedupe import (
    NEAR_DUPLICATE_DISTANCE,
    canonical_url,
    from_signed64,
    nearest,
    simhash64,
    simhash_bands,
    to_signed64,
)
from pipeline.errors import LedgerError
from pipeline.ledger_schema import (
    ITEM_STATUSES,
    MIGRATIONS,
    RESUMABLE_STATUSES,
    SCHEMA_VERSION,
    SETTLED_STATUSES,
)
from signaldesk.items import Item, SourceKind

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
    "utcnow",
]

logger = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000
ItemStatus = Literal[
    "discovered", "fetched", "extracted", "pending", "duplicate", "parked", "filed", "rejected"
]


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def item_to_json(item: Item) -> str:
    """Serialise an :class:`Item` for the ledger's payload column."""
    data = dataclasses.asdict(item)
    data["published"] = item.published.isoformat() if item.published else None
    data["tags"] = list(item.tags)
    return json.dumps(data, ensure_ascii=False, default=str)


def item_from_json(text: str) -> Item:
    """The inverse of :func:`item_to_json`."""
    data: dict[str, Any] = json.loads(text)
    published = data.get("published")
    data["published"] = datetime.fromisoformat(published) if published else None
    data["tags"] = tuple(data.get("tags") or ())
    data["extra"] = dict(data.get("extra") or {})
    return Item(**data)


def global_guid(item: Item) -> str | None:
    """The item's identity if it is meaningful across sources, else ``None``.

    A Message-ID is global by construction; a feed GUID only when it is a URL,
    URN or tag URI (many feeds number entries "1", "2", … which would collide
    across feeds). Clipping and tool-output guids are local file paths.
    """
    guid = (item.guid or "").strip()
    if not guid:
        return None
    if item.source_kind == "newsletter":
        return guid.strip("<>").lower()
    if item.source_kind == "rss" and ":" in guid and len(guid) >= 12:
        return guid
    return None


def item_identity(item: Item) -> str:
    """A stable id: sha256 of the source kind, the subscription and the entry's own id
    (its GUID, else its canonical URL, else its title and text)."""
    if item.guid:
        key = f"guid:{item.guid}"
    elif (canon := canonical_url(item.url)) is not None:
        key = f"url:{canon}"
    else:
        key = "text:" + hashlib.sha256(f"{item.title}\n{item.text}".encode()).hexdigest()
    raw = f"{item.source_kind}\x1f{item.source_id}\x1f{key}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _location_identity(kind: str, source_id: str, location: str) -> str:
    raw = f"{kind}\x1f{source_id}\x1flocation:{location}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One row of the ledger, with its payload decoded."""

    id: str
    status: ItemStatus
    item: Item
    canonical_url: str | None
    duplicate_of: str | None
    attempts: int
    last_error: str | None
    discovered_at: datetime
    updated_at: datetime
    score: float | None
    scores: dict[str, Any] | None
    domain: str | None
    note_path: str | None

    @property
    def source_kind(self) -> SourceKind:
        return self.item.source_kind

    @property
    def title(self) -> str:
        return self.item.title


@dataclass(frozen=True, slots=True)
class DedupeVerdict:
    """What :meth:`Ledger.settle` decided: ``pending`` (unique) or ``duplicate`` of whom,
    and by which key (``guid``, ``url`` or ``simhash``)."""

    item_id: str
    status: Literal["pending", "duplicate"]
    duplicate_of: str | None = None
    matched_on: Literal["guid", "url", "simhash"] | None = None


_ENTRY_COLUMNS = (
    "id, status, payload, canonical_url, duplicate_of, attempts, last_error, discovered_at, "
    "updated_at, score, scores, domain, note_path"
)


def _entry(row: Sequence[Any]) -> LedgerEntry:
    return LedgerEntry(
        id=row[0],
        status=cast(ItemStatus, row[1]),
        item=item_from_json(row[2]),
        canonical_url=row[3],
        duplicate_of=row[4],
        attempts=row[5],
        last_error=row[6],
        discovered_at=datetime.fromisoformat(row[7]),
        updated_at=datetime.fromisoformat(row[8]),
        score=row[9],
        scores=json.loads(row[10]) if row[10] else None,
        domain=row[11],
        note_path=row[12],
    )


async def _migrate(conn: aiosqlite.Connection) -> None:
    async with conn.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise LedgerError(
            f"the ledger is at schema version {version}, newer than this signaldesk "
            f"({SCHEMA_VERSION})",
            hint="upgrade signaldesk",
        )
    for target in range(version, SCHEMA_VERSION):
        # executescript commits first; the version bump rides in the same script so
        # a crash leaves either the old schema or the new one.
        await conn.executescript(
            f"BEGIN IMMEDIATE;\n{MIGRATIONS[target]}\nPRAGMA user_version = {target + 1};\nCOMMIT;"
        )
        logger.info("ledger migrated to schema version %d", target + 1)


class Ledger:
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
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = await aiosqlite.connect(
                str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open the ledger at {path}: {exc}") from exc
        try:
            try:
                await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                await conn.execute("PRAGMA journal_mode = WAL")
                await conn.execute("PRAGMA synchronous = NORMAL")
                await conn.execute("PRAGMA foreign_keys = ON")
                await _migrate(conn)
            except sqlite3.DatabaseError as exc:
                raise LedgerError(
                    f"{path} is not a usable ledger: {exc}",
                    hint="move it aside; signaldesk will start a new one",
                ) from exc
            yield cls(conn, path)
        finally:
            await conn.close()

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

    # -- recording ----------------------------------------------------------------

    @staticmethod
    async def insert_items(
        conn: aiosqlite.Connection,
        items: Iterable[Item],
        *,
        status: ItemStatus,
        now: datetime,
    ) -> list[str]:
        """Insert ``items`` inside an open transaction; returns the ids that were new."""
        new: list[str] = []
        stamp = _iso(now)
        for item in items:
            item_id = item_identity(item)
            cursor = await conn.execute(
                "INSERT OR IGNORE INTO items (id, source_kind, source_id, guid, url, "
                "canonical_url, "
                "title, status, payload, discovered_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    item_id,
                    item.source_kind,
                    item.source_id,
                    global_guid(item),
                    item.url,
                    canonical_url(item.url),
                    item.title,
                    status,
                    item_to_json(item),
                    stamp,
                    stamp,
                ),
            )
            if cursor.rowcount:
                new.append(item_id)
        return new

    async def record(
        self,
        items: Iterable[Item],
        *,
        status: ItemStatus = "discovered",
        now: datetime | None = None,
    ) -> list[str]:
        """Record newly seen items (already known ones are left alone); returns new ids."""
        async with self.transaction() as conn:
            return await self.insert_items(conn, items, status=status, now=now or utcnow())

    async def park_location(
        self,
        kind: SourceKind,
        source_id: str,
        location: str,
        reason: str,
        *,
        now: datetime | None = None,
    ) -> tuple[str, bool]:
        """Park something that could not even be read as an item (a broken clipping or
        mail), keyed by where it is. Returns its id and whether it was new."""
        item_id = _location_identity(kind, source_id, location)
        placeholder = Item(
            source_kind=kind, source_id=source_id, title=location, text="", origin_path=location
        )
        stamp = _iso(now or utcnow())
        async with self.transaction() as conn:
            cursor = await conn.execute(
                "INSERT OR IGNORE INTO items (id, source_kind, source_id, title, status, "
                "last_error, "
                "attempts, payload, discovered_at, updated_at, settled_at) "
                "VALUES (?, ?, ?, ?, 'parked', ?, 1, ?, ?, ?, ?)",
                (
                    item_id,
                    kind,
                    source_id,
                    location,
                    reason,
                    item_to_json(placeholder),
                    stamp,
                    stamp,
                    stamp,
                ),
            )
            if cursor.rowcount:
                return item_id, True
            await conn.execute(
                "UPDATE items SET last_error = ?, updated_at = ? WHERE id = ? AND status = "
                "'parked' "
                "AND last_error IS NOT ?",
                (reason, stamp, item_id, reason),
            )
            return item_id, False

    async def clear_parked_locations(
        self, kind: SourceKind, source_id: str, locations: Sequence[str]
    ) -> None:
        """Forget parked-by-location rows for ``locations`` (they read fine now)."""
        if not locations:
            return
        async with self.transaction() as conn:
            await conn.executemany(
                "DELETE FROM items WHERE id = ? AND status = 'parked'",
                [(_location_identity(kind, source_id, loc),) for loc in locations],
            )

    async def advance(
        self,
        item_id: str,
        status: ItemStatus,
        *,
        item: Item | None = None,
        now: datetime | None = None,
    ) -> None:
        """Move an in-flight item to ``status``, replacing its payload when given."""
        stamp = _iso(now or utcnow())
        async with self.transaction() as conn:
            if item is None:
                await conn.execute(
                    "UPDATE items SET status = ?, updated_at = ? WHERE id = ?",
                    (status, stamp, item_id),
                )
            else:
                await conn.execute(
                    "UPDATE items SET status = ?, payload = ?, title = ?, url = ?, canonical_url "
                    "= ?, "
                    "updated_at = ? WHERE id = ?",
                    (
                        status,
                        item_to_json(item),
                        item.title,
                        item.url,
                        canonical_url(item.url),
                        stamp,
                        item_id,
                    ),
                )

    async def record_failure(self, item_id: str, error: str, *, now: datetime | None = None) -> int:
        """Count a failed attempt (the item stays where it is); returns the attempt count."""
        async with self.transaction() as conn:
            await conn.execute(
                "UPDATE items SET attempts = attempts + 1, last_error = ?, updated_at = ? WHERE "
                "id = ?",
                (error, _iso(now or utcnow()), item_id),
            )
            async with conn.execute(
                "SELECT attempts FROM items WHERE id = ?", (item_id,)
            ) as cursor:
                row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def park(self, item_id: str, reason: str, *, now: datetime | None = None) -> None:
        """Park an item for good with the reason (a permanent error)."""
        stamp = _iso(now or utcnow())
        async with self.transaction() as conn:
            await conn.execute(
                "UPDATE items SET status = 'parked', last_error = ?, attempts = attempts + 1, "
                "updated_at = ?, settled_at = ? WHERE id = ?",
                (reason, stamp, stamp, item_id),
            )

    async def settle(
        self, item_id: str, item: Item, *, now: datetime | None = None
    ) -> DedupeVerdict:
        """Normalise-and-dedupe in one transaction: mark the item ``pending`` or
        ``duplicate`` of the earliest settled item sharing its global GUID, its
        canonical URL, or near-identical text.

        Calls must not run concurrently with each other for the verdict to hold
        (the intake pipeline runs one dedupe worker); the write lock makes each
        call atomic regardless.
        """
        stamp = _iso(now or utcnow())
        guid = global_guid(item)
        canon = canonical_url(item.url)
        fingerprint = simhash64(item.text)
        settled = ", ".join(f"'{s}'" for s in SETTLED_STATUSES)
        async with self.transaction() as conn:
            match: tuple[str, Literal["guid", "url", "simhash"]] | None = None
            if guid is not None:
                async with conn.execute(
                    f"SELECT id FROM items WHERE guid = ? AND id != ? AND status IN ({settled}) "
                    "ORDER BY discovered_at LIMIT 1",
                    (guid, item_id),
                ) as cursor:
                    row = await cursor.fetchone()
                if row:
                    match = (row[0], "guid")
            if match is None and canon is not None:
                async with conn.execute(
                    "SELECT id FROM items WHERE canonical_url = ? AND id != ? AND status IN "
                    f"({settled}) "
                    "ORDER BY discovered_at LIMIT 1",
                    (canon, item_id),
                ) as cursor:
                    row = await cursor.fetchone()
                if row:
                    match = (row[0], "url")
            bands = simhash_bands(fingerprint) if fingerprint is not None else []
            if match is None and fingerprint is not None:
                marks = ", ".join("?" for _ in bands)
                async with conn.execute(
                    "SELECT DISTINCT i.id, i.simhash FROM simhash_bands b JOIN items i ON i.id = "
                    "b.item_id "
                    f"WHERE b.band IN ({marks}) AND i.id != ?",
                    (*bands, item_id),
                ) as cursor:
                    candidates = [(r[0], from_signed64(r[1])) async for r in cursor]
                near = nearest(fingerprint, candidates, NEAR_DUPLICATE_DISTANCE)
                if near is not None:
                    match = (near, "simhash")
            signed = to_signed64(fingerprint) if fingerprint is not None else None
            if match is not None:
                await conn.execute(
                    "UPDATE items SET status = 'duplicate', duplicate_of = ?, payload = ?, "
                    "canonical_url = ?, "
                    "simhash = ?, updated_at = ?, settled_at = ? WHERE id = ?",
                    (match[0], item_to_json(item), canon, signed, stamp, stamp, item_id),
                )
                return DedupeVerdict(item_id, "duplicate", match[0], match[1])
            await conn.execute(
                "UPDATE items SET status = 'pending', duplicate_of = NULL, payload = ?, title = "
                "?, url = ?, "
                "canonical_url = ?, simhash = ?, updated_at = ?, settled_at = ? WHERE id = ?",
                (item_to_json(item), item.title, item.url, canon, signed, stamp, stamp, item_id),
            )
            if bands:
                await conn.executemany(
                    "INSERT OR IGNORE INTO simhash_bands (band, item_id) VALUES (?, ?)",
                    [(band, item_id) for band in bands],
                )
            return DedupeVerdict(item_id, "pending")

    async def record_triage(
        self,
        item_id: str,
        status: Literal["filed", "rejected", "pending"],
        *,
        score: float | None = None,
        scores: dict[str, Any] | None = None,
        domain: str | None = None,
        note_path: str | None = None,
        now: datetime | None = None,
    ) -> None:
        """Record triage's outcome for an item (the seam for scoring and routing)."""
        async with self.transaction() as conn:
            await conn.execute(
                "UPDATE items SET status = ?, score = ?, scores = ?, domain = ?, note_path = ?, "
                "updated_at = ? WHERE id = ?",
                (
                    status,
                    score,
                    json.dumps(scores) if scores is not None else None,
                    domain,
                    note_path,
                    _iso(now or utcnow()),
                    item_id,
                ),
            )

    # -- reading --------------------------------------------------------------------

    async def get(self, item_id: str) -> LedgerEntry | None:
        """One entry by id."""
        async with self._conn.execute(
            f"SELECT {_ENTRY_COLUMNS} FROM items WHERE id = ?", (item_id,)
        ) as cursor:
            row = await cursor.fetchone()
        return _entry(row) if row else None

    async def in_flight(self) -> list[LedgerEntry]:
        """Entries a previous run left mid-stage, oldest first."""
        marks = ", ".join("?" for _ in RESUMABLE_STATUSES)
        async with self._conn.execute(
            f"SELECT {_ENTRY_COLUMNS} FROM items WHERE status IN ({marks}) ORDER BY discovered_at",
            RESUMABLE_STATUSES,
        ) as cursor:
            return [_entry(row) async for row in cursor]

    async def entries(
        self,
        *,
        status: str | None = None,
        source_kind: str | None = None,
        limit: int | None = None,
    ) -> list[LedgerEntry]:
        """Entries, newest first, optionally filtered by status and source kind.

        :raises LedgerError: ``status`` is not a known status.
        """
        if status is not None and status not in ITEM_STATUSES:
            raise LedgerError(
                f"unknown item status {status!r}", hint=f"use one of: {', '.join(ITEM_STATUSES)}"
            )
        clauses: list[str] = []
        params: list[Any] = []
        if status is not None:
            clauses.append("status = ?")
            params.append(status)
        if source_kind is not None:
            clauses.append("source_kind = ?")
            params.append(source_kind)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        tail = ""
        if limit is not None:
            tail = " LIMIT ?"
            params.append(limit)
        async with self._conn.execute(
            f"SELECT {_ENTRY_COLUMNS} FROM items {where} ORDER BY discovered_at DESC, id{tail}",
            params,
        ) as cursor:
            return [_entry(row) async for row in cursor]

    async def known_guids(self, source_kind: str) -> set[str]:
        """The source's own guids (as the adapter gave them) already in the ledger."""
        async with self._conn.execute(
            "SELECT json_extract(payload, '$.guid') FROM items WHERE source_kind = ?",
            (source_kind,),
        ) as cursor:
            return {row[0] async for row in cursor if row[0]}

    async def duplicates_of(self, item_id: str) -> list[LedgerEntry]:
        """The entries recorded as duplicates of ``item_id`` (other sources of the same signal)."""
        async with self._conn.execute(
            f"SELECT {_ENTRY_COLUMNS} FROM items WHERE duplicate_of = ? ORDER BY discovered_at",
            (item_id,),
        ) as cursor:
            return [_entry(row) async for row in cursor]

    async def status_counts(self) -> dict[tuple[str, str], int]:
        """``{(source_kind, status): count}`` over the whole ledger."""
        async with self._conn.execute(
            "SELECT source_kind, status, COUNT(*) FROM items GROUP BY source_kind, status"
        ) as cursor:
            return {(row[0], row[1]): int(row[2]) async for row in cursor}
