"""The PostgreSQL ledger's read side: looking items up and counting them, no writes.

:class:`~pipeline.ledger.pg_store.PostgresLedger` inherits these, as the SQLite ledger
inherits :class:`~pipeline.ledger.queries.LedgerReading`; the JSON access differs (the
payload is JSON text, read with ``::json``), the rows and their readers are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from signaldesk.pipeline.ledger.clippings import (
    FINGERPRINT_KEY,
    ClippingClaim,
    clipping_claims_from_rows,
)
from signaldesk.pipeline.ledger.queries import entries_query
from signaldesk.pipeline.ledger.records import ENTRY_COLUMNS, LedgerEntry, entry_from_row
from signaldesk.pipeline.ledger.sql import Row

__all__ = ["PostgresReading"]


class PostgresReading:
    """Queries over the PostgreSQL ledger's connection (through :meth:`_rows`)."""

    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        raise NotImplementedError

    async def get(self, item_id: str) -> LedgerEntry | None:
        rows = await self._rows(f"SELECT {ENTRY_COLUMNS} FROM items WHERE id = %s", (item_id,))
        return entry_from_row(rows[0]) if rows else None

    async def entries(
        self,
        *,
        status: str | None = None,
        source_kind: str | None = None,
        limit: int | None = None,
    ) -> list[LedgerEntry]:
        sql, params = entries_query(status, source_kind, limit, "%s")
        rows = await self._rows(sql, params)
        return [entry_from_row(row) for row in rows]

    async def clipping_claims(self) -> dict[str, list[ClippingClaim]]:
        rows = await self._rows(
            "SELECT id, payload::json ->> 'guid', payload::json ->> 'origin_path', status, "
            f"note_path, payload::json #>> '{{extra,{FINGERPRINT_KEY}}}', canonical_url "
            "FROM items WHERE source_kind = 'clipper' ORDER BY discovered_at, id"
        )
        return clipping_claims_from_rows(rows)

    async def known_guids(self, source_kind: str) -> set[str]:
        rows = await self._rows(
            "SELECT payload::json ->> 'guid' FROM items WHERE source_kind = %s", (source_kind,)
        )
        return {row[0] for row in rows if row[0]}

    async def duplicates_of(self, item_id: str) -> list[LedgerEntry]:
        rows = await self._rows(
            f"SELECT {ENTRY_COLUMNS} FROM items WHERE duplicate_of = %s ORDER BY discovered_at",
            (item_id,),
        )
        return [entry_from_row(row) for row in rows]

    async def status_counts(self) -> dict[tuple[str, str], int]:
        rows = await self._rows(
            "SELECT source_kind, status, COUNT(*) FROM items GROUP BY source_kind, status"
        )
        return {(row[0], row[1]): int(row[2]) for row in rows}

    async def full_text_arrived(self) -> list[str]:
        rows = await self._rows(
            "SELECT id FROM items WHERE status IN ('filed', 'rejected') "
            "AND scores::json ->> 'teaser' = 'true' "
            "AND COALESCE((payload::json ->> 'teaser')::boolean, false) = false "
            "ORDER BY discovered_at"
        )
        return [str(row[0]) for row in rows]

    async def index_queue(self) -> list[str]:
        rows = await self._rows("SELECT path FROM index_queue ORDER BY queued_at, path")
        return [str(row[0]) for row in rows]
