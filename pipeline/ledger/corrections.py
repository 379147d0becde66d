"""The ledger's record of a person's corrections to triage (the ``corrections`` table).

A correction is what the person did with one item: kept it, threw it away, or put it under
another domain, and how they did it (a command, or an edit in the vault that
:mod:`pipeline.triage.corrections` noticed). Rows are never rewritten: undoing a correction or
resetting them all stamps ``undone_at``, so the history stays and scoring ignores them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from signaldesk.pipeline.ledger.base import ItemLedger
from signaldesk.pipeline.ledger.records import iso_utc, utcnow

__all__ = [
    "CorrectionRecord",
    "active_corrections",
    "corrections_recorded",
    "latest_correction",
    "record_correction",
    "undo_corrections",
]


@dataclass(frozen=True, slots=True)
class CorrectionRecord:
    """One row of the ``corrections`` table."""

    id: int
    item_id: str
    accept: bool | None
    domain: str | None
    how: str
    recorded_at: datetime
    undone_at: datetime | None


_COLUMNS = "id, item_id, accept, domain, how, recorded_at, undone_at"


def _row(row: tuple[object, ...]) -> CorrectionRecord:
    accept = row[2]
    return CorrectionRecord(
        id=int(row[0]),  # type: ignore[call-overload]
        item_id=str(row[1]),
        accept=None if accept is None else bool(accept),
        domain=None if row[3] is None else str(row[3]),
        how=str(row[4]),
        recorded_at=datetime.fromisoformat(str(row[5])),
        undone_at=None if row[6] is None else datetime.fromisoformat(str(row[6])),
    )


async def record_correction(
    ledger: ItemLedger,
    item_id: str,
    *,
    accept: bool | None,
    domain: str | None,
    how: str,
    now: datetime | None = None,
    once: bool = False,
) -> CorrectionRecord | None:
    """Record a correction, unless the item's latest one in force already says the same.

    :param once: also skip it when the item's latest correction, undone or not, says the
        same: what the vault shows is recorded once, and stays undone after a reset.
    :returns: the new row, or ``None`` when nothing new was recorded.
    """
    latest = await latest_correction(ledger, item_id, include_undone=once)
    if latest is not None and (latest.accept, latest.domain) == (accept, domain):
        return None
    stamp = iso_utc(now or utcnow())
    async with ledger.write() as tx:
        row = await tx.fetch_one(
            "INSERT INTO corrections (item_id, accept, domain, how, recorded_at) "
            f"VALUES (?, ?, ?, ?, ?) RETURNING {_COLUMNS}",
            (item_id, None if accept is None else int(accept), domain, how, stamp),
        )
    return _row(row) if row else None


async def latest_correction(
    ledger: ItemLedger, item_id: str, *, include_undone: bool = False
) -> CorrectionRecord | None:
    """The item's most recent correction still in force (or at all, ``include_undone``)."""
    in_force = "" if include_undone else "AND undone_at IS NULL "
    row = await ledger.fetch_one(
        f"SELECT {_COLUMNS} FROM corrections WHERE item_id = ? {in_force}"
        "ORDER BY recorded_at DESC, id DESC LIMIT 1",
        (item_id,),
    )
    return _row(row) if row else None


async def active_corrections(ledger: ItemLedger) -> list[CorrectionRecord]:
    """Each corrected item's latest correction in force, oldest first."""
    rows = await ledger.fetch_all(
        f"SELECT {_COLUMNS} FROM corrections c WHERE undone_at IS NULL AND id = ("
        "SELECT id FROM corrections d WHERE d.item_id = c.item_id AND d.undone_at IS NULL "
        "ORDER BY recorded_at DESC, id DESC LIMIT 1) ORDER BY recorded_at, id"
    )
    return [_row(row) for row in rows]


async def corrections_recorded(ledger: ItemLedger, start: str, end: str) -> list[CorrectionRecord]:
    """Every correction recorded from ``start`` (inclusive) to ``end`` (ISO UTC), in order,
    undone ones included (the triage report says which)."""
    rows = await ledger.fetch_all(
        f"SELECT {_COLUMNS} FROM corrections WHERE recorded_at >= ? AND recorded_at < ? "
        "ORDER BY recorded_at, id",
        (start, end),
    )
    return [_row(row) for row in rows]


async def undo_corrections(
    ledger: ItemLedger, *, last: int | None = None, now: datetime | None = None
) -> int:
    """Undo the ``last`` corrections in force (all of them when ``None``: a reset).

    :returns: how many were undone.
    """
    stamp = iso_utc(now or utcnow())
    async with ledger.write() as tx:
        if last is None:
            return await tx.execute(
                "UPDATE corrections SET undone_at = ? WHERE undone_at IS NULL", (stamp,)
            )
        return await tx.execute(
            "UPDATE corrections SET undone_at = ? WHERE id IN (SELECT id FROM corrections "
            "WHERE undone_at IS NULL ORDER BY recorded_at DESC, id DESC LIMIT ?)",
            (stamp, max(last, 0)),
        )
