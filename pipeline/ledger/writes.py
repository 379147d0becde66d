"""The ledger's writes that read the same on SQLite and PostgreSQL, written once.

Trigger: the two stores (:mod:`pipeline.ledger.store`, :mod:`pipeline.ledger.pg_store`)
carried two copies of each of these statements, differing in a claim and a list
parameter, and drifting in wording. Why one copy can serve: both run portable SQL
through :meth:`write` (:mod:`pipeline.ledger.sql`: ``?`` placeholders, ``ON CONFLICT``,
``RETURNING``). Outcome: :class:`LedgerWrites`, which each store inherits, with two
hooks for what differs: :attr:`LedgerWrites.RELEASE_CLAIM` (a shared ledger lets go of
an item's claim when it is done with it) and :meth:`LedgerWrites.among` (a list of
values as one parameter). What stays in each store: opening, transactions, claims,
inserting new items and the batched dedupe.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, ClassVar, Literal

from signaldesk.items import Item, SourceKind
from signaldesk.pipeline.ledger.dedupe import canonical_url
from signaldesk.pipeline.ledger.records import (
    DedupeVerdict,
    ItemStatus,
    iso_utc,
    item_to_json,
    location_identity,
    stored_item,
    stored_text,
    utcnow,
)
from signaldesk.pipeline.ledger.sql import LedgerTx

__all__ = ["LedgerWrites"]


class LedgerWrites:
    """Recording items, their stages, failures and triage outcomes (see the module)."""

    RELEASE_CLAIM: ClassVar[str] = ""
    """``SET`` clauses that let go of an item's claim, with a leading comma (none here)."""

    # -- what each store provides ------------------------------------------------------

    def write(self) -> AbstractAsyncContextManager[LedgerTx]:
        raise NotImplementedError

    def among(self, values: Sequence[Any]) -> tuple[str, Any]:
        """``column`` + this is true when the column holds one of ``values``: the SQL
        and its one parameter."""
        raise NotImplementedError

    async def insert_items(
        self, tx: LedgerTx, items: Iterable[Item], *, status: ItemStatus, now: datetime
    ) -> list[str]:
        raise NotImplementedError

    async def settle_many(
        self, batch: Sequence[tuple[str, Item]], *, now: datetime | None = None
    ) -> list[DedupeVerdict]:
        raise NotImplementedError

    # -- the shared writes -------------------------------------------------------------

    async def record(
        self,
        items: Iterable[Item],
        *,
        status: ItemStatus = "discovered",
        now: datetime | None = None,
    ) -> list[str]:
        """Record newly seen items (already known ones are left alone); returns new ids."""
        async with self.write() as tx:
            return await self.insert_items(tx, items, status=status, now=now or utcnow())

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
        item_id = location_identity(kind, source_id, location)
        placeholder = Item(
            source_kind=kind, source_id=source_id, title=location, text="", origin_path=location
        )
        stamp = iso_utc(now or utcnow())
        why = stored_text(reason)
        async with self.write() as tx:
            if await tx.execute(
                "INSERT INTO items (id, source_kind, source_id, title, status, last_error, "
                "attempts, payload, discovered_at, updated_at, settled_at) "
                "VALUES (?, ?, ?, ?, 'parked', ?, 1, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (item_id, kind, source_id, location, why, item_to_json(placeholder)) + (stamp,) * 3,
            ):
                return item_id, True
            # Rewritten only when the reason changed (a parked row is not touched daily).
            await tx.execute(
                "UPDATE items SET last_error = ?, updated_at = ? WHERE id = ? AND status = "
                "'parked' AND (last_error IS NULL OR last_error <> ?)",
                (why, stamp, item_id, why),
            )
            return item_id, False

    async def clear_parked_locations(
        self, kind: SourceKind, source_id: str, locations: Sequence[str]
    ) -> None:
        """Forget parked-by-location rows for ``locations`` (they read fine now)."""
        if not locations:
            return
        ids, param = self.among([location_identity(kind, source_id, loc) for loc in locations])
        async with self.write() as tx:
            await tx.execute(f"DELETE FROM items WHERE id {ids} AND status = 'parked'", (param,))

    async def advance(
        self,
        item_id: str,
        status: ItemStatus,
        *,
        item: Item | None = None,
        now: datetime | None = None,
    ) -> None:
        """Move an in-flight item to ``status``, replacing its payload when given."""
        stamp = iso_utc(now or utcnow())
        async with self.write() as tx:
            if item is None:
                await tx.execute(
                    "UPDATE items SET status = ?, updated_at = ? WHERE id = ?",
                    (status, stamp, item_id),
                )
                return
            item = stored_item(item)
            await tx.execute(
                "UPDATE items SET status = ?, payload = ?, title = ?, url = ?, "
                "canonical_url = ?, updated_at = ? WHERE id = ?",
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

    async def replace_payload(
        self, item_id: str, item: Item, *, status: ItemStatus, now: datetime | None = None
    ) -> bool:
        """Store a new payload for an item that is still in ``status`` (a teaser whose page
        arrived later); returns whether it was. Its status and scores are left alone."""
        async with self.write() as tx:
            return bool(
                await tx.execute(
                    "UPDATE items SET payload = ?, updated_at = ? WHERE id = ? AND status = ?",
                    (item_to_json(stored_item(item)), iso_utc(now or utcnow()), item_id, status),
                )
            )

    async def record_failure(self, item_id: str, error: str, *, now: datetime | None = None) -> int:
        """Count a failed attempt (the item stays where it is); returns the attempt count."""
        async with self.write() as tx:
            row = await tx.fetch_one(
                "UPDATE items SET attempts = attempts + 1, last_error = ?, updated_at = ? "
                "WHERE id = ? RETURNING attempts",
                (stored_text(error), iso_utc(now or utcnow()), item_id),
            )
        return int(row[0]) if row else 0

    async def park(self, item_id: str, reason: str, *, now: datetime | None = None) -> None:
        """Park an item for good with the reason (a permanent error)."""
        stamp = iso_utc(now or utcnow())
        async with self.write() as tx:
            await tx.execute(
                "UPDATE items SET status = 'parked', last_error = ?, attempts = attempts + 1, "
                f"updated_at = ?, settled_at = ?{self.RELEASE_CLAIM} WHERE id = ?",
                (stored_text(reason), stamp, stamp, item_id),
            )

    async def settle(
        self, item_id: str, item: Item, *, now: datetime | None = None
    ) -> DedupeVerdict:
        """Normalise-and-dedupe one item (see :meth:`settle_many`)."""
        [verdict] = await self.settle_many([(item_id, item)], now=now)
        return verdict

    async def record_triage(
        self,
        item_id: str,
        status: Literal["filed", "rejected", "pending"],
        *,
        score: float | None = None,
        scores: dict[str, Any] | None = None,
        domain: str | None = None,
        note_path: str | None = None,
        index_paths: Sequence[str] = (),
        now: datetime | None = None,
    ) -> None:
        """Record triage's outcome for an item (the seam for scoring and routing).

        :param index_paths: vault paths the index must look at for this item (its note,
            where a moved clipping was), queued in the same transaction (see
            ``index_queue``).
        """
        stamp = iso_utc(now or utcnow())
        async with self.write() as tx:
            if index_paths:
                await tx.executemany(
                    "INSERT INTO index_queue (path, item_id, queued_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (path) DO UPDATE SET item_id = excluded.item_id, "
                    "queued_at = excluded.queued_at",
                    [(path, item_id, stamp) for path in dict.fromkeys(index_paths)],
                )
            await tx.execute(
                "UPDATE items SET status = ?, score = ?, scores = ?, domain = ?, note_path = ?, "
                f"updated_at = ?{self.RELEASE_CLAIM} WHERE id = ?",
                (
                    status,
                    score,
                    json.dumps(scores) if scores is not None else None,
                    domain,
                    note_path,
                    stamp,
                    item_id,
                ),
            )

    async def clear_index_queue(
        self, started: datetime, paths: Sequence[str] | None = None
    ) -> None:
        """Forget queued paths an index run that began at ``started`` has looked at.

        :param paths: the paths that run was given (``None``: it looked at the whole
            vault). A path queued again after ``started`` stays queued.
        """
        stamp = iso_utc(started)
        async with self.write() as tx:
            if paths is None:
                await tx.execute("DELETE FROM index_queue WHERE queued_at <= ?", (stamp,))
                return
            listed, param = self.among(list(paths))
            await tx.execute(
                f"DELETE FROM index_queue WHERE path {listed} AND queued_at <= ?", (param, stamp)
            )
