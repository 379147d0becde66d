"""The ledger's read side: looking items up and counting them, no writes.

:class:`~pipeline.ledger.store.Ledger` inherits these; a reader (the CLI's listings,
the triage report, ``status``) needs nothing else.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import aiosqlite

from signaldesk.pipeline.errors import LedgerError
from signaldesk.pipeline.ledger.clippings import (
    FINGERPRINT_KEY,
    ClippingClaim,
    clipping_claims_from_rows,
)
from signaldesk.pipeline.ledger.records import ENTRY_COLUMNS, LedgerEntry, entry_from_row
from signaldesk.pipeline.ledger.schema import ITEM_STATUSES, RESUMABLE_STATUSES

__all__ = ["LedgerReading", "check_status", "entries_query"]


def check_status(status: str | None) -> None:
    """:raises LedgerError: ``status`` is given and not a known status."""
    if status is not None and status not in ITEM_STATUSES:
        raise LedgerError(
            f"unknown item status {status!r}", hint=f"use one of: {', '.join(ITEM_STATUSES)}"
        )


def entries_query(
    status: str | None, source_kind: str | None, limit: int | None, placeholder: str
) -> tuple[str, list[Any]]:
    """The SQL and parameters of ``entries`` (``placeholder``: ``?`` for SQLite, ``%s``
    for PostgreSQL), newest first.

    :raises LedgerError: ``status`` is not a known status.
    """
    check_status(status)
    clauses: list[str] = []
    params: list[Any] = []
    for column, value in (("status", status), ("source_kind", source_kind)):
        if value is not None:
            clauses.append(f"{column} = {placeholder}")
            params.append(value)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    tail = ""
    if limit is not None:
        tail = f" LIMIT {placeholder}"
        params.append(limit)
    return (
        f"SELECT {ENTRY_COLUMNS} FROM items {where} ORDER BY discovered_at DESC, id{tail}",
        params,
    )


class LedgerReading:
    """Queries over one open ledger connection."""

    _conn: aiosqlite.Connection

    async def get(self, item_id: str) -> LedgerEntry | None:
        """One entry by id."""
        async with self._conn.execute(
            f"SELECT {ENTRY_COLUMNS} FROM items WHERE id = ?", (item_id,)
        ) as cursor:
            row = await cursor.fetchone()
        return entry_from_row(row) if row else None

    async def in_flight(
        self, *, kinds: Collection[str] | None = None, abandoned: bool = False
    ) -> list[LedgerEntry]:
        """Entries a previous run left mid-stage, oldest first, of ``kinds`` (default
        all); ``abandoned``: those another worker left, none here (one worker)."""
        if abandoned:
            return []
        marks = ", ".join("?" for _ in RESUMABLE_STATUSES)
        async with self._conn.execute(
            f"SELECT {ENTRY_COLUMNS} FROM items WHERE status IN ({marks}) ORDER BY discovered_at",
            RESUMABLE_STATUSES,
        ) as cursor:
            found = [entry_from_row(row) async for row in cursor]
        return [e for e in found if kinds is None or e.source_kind in kinds]

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
        sql, params = entries_query(status, source_kind, limit, "?")
        async with self._conn.execute(sql, params) as cursor:
            return [entry_from_row(row) async for row in cursor]

    async def clipping_claims(self) -> dict[str, list[ClippingClaim]]:
        """The clipper items by vault path (see :mod:`pipeline.ledger.clippings` for
        how a clipping file is matched to one)."""
        rows = await self._conn.execute_fetchall(
            "SELECT id, json_extract(payload, '$.guid'), json_extract(payload, "
            "'$.origin_path'), status, note_path, json_extract(payload, '$.extra."
            + FINGERPRINT_KEY
            + "'), canonical_url FROM items WHERE source_kind = 'clipper' "
            "ORDER BY discovered_at, id"
        )
        return clipping_claims_from_rows(rows)

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
            f"SELECT {ENTRY_COLUMNS} FROM items WHERE duplicate_of = ? ORDER BY discovered_at",
            (item_id,),
        ) as cursor:
            return [entry_from_row(row) async for row in cursor]

    async def status_counts(self) -> dict[tuple[str, str], int]:
        """``{(source_kind, status): count}`` over the whole ledger."""
        async with self._conn.execute(
            "SELECT source_kind, status, COUNT(*) FROM items GROUP BY source_kind, status"
        ) as cursor:
            return {(row[0], row[1]): int(row[2]) async for row in cursor}
