"""What the pipeline asks of an item ledger, whichever database holds it.

Two backends implement :class:`ItemLedger`: :class:`pipeline.ledger.store.Ledger` (one
SQLite file, one machine: the default) and
:class:`pipeline.ledger.pg_store.PostgresLedger` (one PostgreSQL database shared by
several workers). Both keep the same rows with the same identities, stages and crash
guarantees; the records, identities and dedupe decisions are computed once, in
:mod:`pipeline.ledger.records`, :mod:`pipeline.ledger.settling` and
:mod:`pipeline.ledger.dedupe`.

Sharing: a shared ledger (``shared``) is worked on by several processes at once, so a
worker *claims* what it takes (feeds to poll, in-flight and pending items) and
:meth:`ItemLedger.claim_feeds` / :meth:`ItemLedger.claim_items` answer which of the
candidates are its own to do now. On a ledger of one's own they answer "all of them".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Literal, Protocol

from signaldesk.items import Item, SourceKind
from signaldesk.pipeline.ledger.clippings import ClippingClaim
from signaldesk.pipeline.ledger.records import DedupeVerdict, ItemStatus, LedgerEntry
from signaldesk.pipeline.ledger.sql import LedgerTx, Row

__all__ = ["ItemLedger"]


class ItemLedger(Protocol):
    """The item ledger and the feed table (see the module docstring)."""

    @property
    def shared(self) -> bool:
        """Whether other processes work on this ledger at the same time."""
        ...

    @property
    def where(self) -> str:
        """Where the ledger is, for messages (a path, or the database)."""
        ...

    # -- portable SQL (pipeline.ledger.sql) ---------------------------------------------

    def write(self) -> AbstractAsyncContextManager[LedgerTx]: ...

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...

    # -- claims -------------------------------------------------------------------------

    async def claim_feeds(self, urls: Sequence[str], *, due: datetime | None) -> set[str]:
        """Which of ``urls`` this worker polls now (claimed for it); ``due``: only feeds
        still due at that time (``None``: any enabled one, a forced scan)."""
        ...

    async def claim_items(self, item_ids: Sequence[str]) -> set[str]:
        """Which of ``item_ids`` this worker works on now (claimed for it)."""
        ...

    # -- reading ------------------------------------------------------------------------

    async def get(self, item_id: str) -> LedgerEntry | None: ...

    async def in_flight(self, *, abandoned: bool = False) -> list[LedgerEntry]:
        """Entries a previous run left mid-stage, oldest first (claimed on a shared
        ledger: those of a worker that is gone, never those of one still at work).

        :param abandoned: only those another worker left (not this worker's own, which
            are on its way through the stages): none on a ledger of one's own.
        """
        ...

    async def entries(
        self,
        *,
        status: str | None = None,
        source_kind: str | None = None,
        limit: int | None = None,
    ) -> list[LedgerEntry]: ...

    async def clipping_claims(self) -> dict[str, list[ClippingClaim]]: ...

    async def known_guids(self, source_kind: str) -> set[str]: ...

    async def duplicates_of(self, item_id: str) -> list[LedgerEntry]: ...

    async def status_counts(self) -> dict[tuple[str, str], int]: ...

    async def full_text_arrived(self) -> list[str]: ...

    async def teasers_due(
        self, *, now: datetime, max_attempts: int, limit: int
    ) -> list[LedgerEntry]: ...

    async def index_queue(self) -> list[str]: ...

    # -- recording ----------------------------------------------------------------------

    async def insert_items(
        self, tx: LedgerTx, items: Iterable[Item], *, status: ItemStatus, now: datetime
    ) -> list[str]: ...

    async def record(
        self,
        items: Iterable[Item],
        *,
        status: ItemStatus = "discovered",
        now: datetime | None = None,
    ) -> list[str]: ...

    async def park_location(
        self,
        kind: SourceKind,
        source_id: str,
        location: str,
        reason: str,
        *,
        now: datetime | None = None,
    ) -> tuple[str, bool]: ...

    async def clear_parked_locations(
        self, kind: SourceKind, source_id: str, locations: Sequence[str]
    ) -> None: ...

    async def advance(
        self,
        item_id: str,
        status: ItemStatus,
        *,
        item: Item | None = None,
        now: datetime | None = None,
    ) -> None: ...

    async def replace_payload(
        self, item_id: str, item: Item, *, status: ItemStatus, now: datetime | None = None
    ) -> bool: ...

    async def record_failure(
        self, item_id: str, error: str, *, now: datetime | None = None
    ) -> int: ...

    async def park(self, item_id: str, reason: str, *, now: datetime | None = None) -> None: ...

    async def settle(
        self, item_id: str, item: Item, *, now: datetime | None = None
    ) -> DedupeVerdict: ...

    async def settle_many(
        self, batch: Sequence[tuple[str, Item]], *, now: datetime | None = None
    ) -> list[DedupeVerdict]: ...

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
    ) -> None: ...

    async def clear_index_queue(
        self, started: datetime, paths: Sequence[str] | None = None
    ) -> None: ...
