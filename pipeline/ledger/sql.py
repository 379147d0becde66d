"""The few SQL calls the ledger's neighbours make, the same over SQLite and PostgreSQL.

The feed registry, the corrections table and the triage report write plain SQL that both
engines understand (``?`` placeholders, ``ON CONFLICT … DO NOTHING``, ``RETURNING``); they
run it through a :class:`LedgerTx` (inside a write transaction) or the ledger's
``fetch_all`` / ``fetch_one`` (reads), never through a driver's connection, so one copy of
each statement serves both backends. What differs between the engines (JSON access,
claims) stays inside each backend's store.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import aiosqlite

__all__ = ["LedgerTx", "Row", "SqliteTx"]

Row = tuple[Any, ...]


class LedgerTx(Protocol):
    """One open write transaction of a ledger (``?`` placeholders on either engine)."""

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; returns the number of rows it changed."""
        ...

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement once per row of parameters."""
        ...

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Every row of a query (or of a statement with ``RETURNING``)."""
        ...

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """The first row of a query, if any."""
        ...


class SqliteTx:
    """:class:`LedgerTx` over the SQLite ledger's connection (inside its transaction)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        cursor = await self._conn.execute(sql, params)
        try:
            return int(cursor.rowcount)
        finally:
            await cursor.close()

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        await self._conn.executemany(sql, rows)

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return [tuple(row) for row in await self._conn.execute_fetchall(sql, params)]

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        async with self._conn.execute(sql, params) as cursor:
            row = await cursor.fetchone()
        return tuple(row) if row is not None else None
