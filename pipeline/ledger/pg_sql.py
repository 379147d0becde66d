"""Running the ledger's SQL on psycopg: placeholders, and values PostgreSQL refuses.

Kept apart from :mod:`pipeline.ledger.pg_store` so the reading side
(:mod:`pipeline.ledger.pg_queries`) shares it without the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from signaldesk.pipeline.ledger.sql import Row

if TYPE_CHECKING:
    import psycopg

__all__ = ["PgTx", "clean_params", "pg_sql"]


def pg_sql(sql: str) -> str:
    """Portable SQL (``?`` placeholders, see :mod:`pipeline.ledger.sql`) for psycopg."""
    return sql.replace("%", "%%").replace("?", "%s")


def _clean(value: Any) -> Any:
    # PostgreSQL text cannot hold NUL; SQLite can. A hostile feed's NUL must not fail a
    # whole transaction (the payload JSON escapes it, the plain columns would not).
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def clean_params(params: Sequence[Any]) -> list[Any]:
    return [_clean(v) for v in params]


class PgTx:
    """:class:`~pipeline.ledger.sql.LedgerTx` over a psycopg cursor in a transaction."""

    def __init__(self, cursor: psycopg.AsyncCursor[Any]) -> None:
        self.cursor = cursor

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        await self.cursor.execute(pg_sql(sql), clean_params(params))
        return max(self.cursor.rowcount, 0)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        batch = [clean_params(row) for row in rows]
        if batch:
            await self.cursor.executemany(pg_sql(sql), batch)

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        await self.cursor.execute(pg_sql(sql), clean_params(params))
        return [tuple(row) for row in await self.cursor.fetchall()]

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        await self.cursor.execute(pg_sql(sql), clean_params(params))
        row = await self.cursor.fetchone()
        return tuple(row) if row is not None else None
