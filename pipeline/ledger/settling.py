"""What both ledger backends write when they record and settle items, decided once.

The SQLite ledger (:mod:`pipeline.ledger.store`) and the PostgreSQL one
(:mod:`pipeline.ledger.pg_store`) differ in their SQL only: the row an item is inserted
as, and a dedupe batch's verdicts and the rows they update, are computed here from the
candidate rows a backend read, with :mod:`pipeline.ledger.dedupe`'s pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from signaldesk.items import Item
from signaldesk.pipeline.ledger.dedupe import (
    DedupeIndex,
    canonical_url,
    from_signed64,
    simhash64,
    simhash_bands,
    to_signed64,
)
from signaldesk.pipeline.ledger.records import (
    DedupeVerdict,
    ItemStatus,
    global_guid,
    iso_utc,
    item_identity,
    item_to_json,
    stored_item,
    stored_text,
)

__all__ = ["DedupeKeys", "SettlePlan", "dedupe_keys", "item_rows", "plan_settle"]

# (item id, item, global guid, canonical URL, simhash)
DedupeKeys = tuple[str, Item, str | None, str | None, int | None]


def item_rows(
    items: Iterable[Item], *, status: ItemStatus, now: datetime
) -> dict[str, tuple[Any, ...]]:
    """The ``items`` rows to insert, by identity (the first of two with one id wins):
    ``(id, source_kind, source_id, guid, url, canonical_url, title, status, payload,
    discovered_at, updated_at)``."""
    stamp = iso_utc(now)
    rows: dict[str, tuple[Any, ...]] = {}
    for raw in items:
        item_id = item_identity(raw)
        item = stored_item(raw)
        rows.setdefault(
            item_id,
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
    return rows


def dedupe_keys(batch: Sequence[tuple[str, Item]]) -> list[DedupeKeys]:
    """Each item's dedupe keys (~1 ms of CPU per article: run it in a worker thread)."""
    return [
        (item_id, item, global_guid(item), canonical_url(item.url), simhash64(item.text))
        for item_id, item in batch
    ]


@dataclass(slots=True)
class SettlePlan:
    """A dedupe batch decided: the verdicts and the rows to write for them.

    ``duplicates``: ``(duplicate_of, payload, canonical_url, simhash, updated_at,
    settled_at, id)``; ``uniques``: ``(payload, title, url, canonical_url, simhash,
    updated_at, settled_at, id)``; ``new_bands``: ``(band, item_id)``.
    """

    verdicts: list[DedupeVerdict] = field(default_factory=list)
    duplicates: list[tuple[Any, ...]] = field(default_factory=list)
    uniques: list[tuple[Any, ...]] = field(default_factory=list)
    new_bands: list[tuple[int, str]] = field(default_factory=list)


def plan_settle(
    prepared: Sequence[DedupeKeys],
    exact: Iterable[Sequence[Any]],
    near: Iterable[Sequence[Any]],
    *,
    now: datetime,
) -> SettlePlan:
    """Decide a batch against the settled items that could match it.

    :param exact: ``(id, guid, canonical_url)`` of settled items sharing a guid or a
        canonical URL with the batch, oldest first.
    :param near: ``(id, signed simhash)`` of items sharing a simhash band, oldest first.
    """
    stamp = iso_utc(now)
    index = DedupeIndex()
    for row in exact:
        index.add(row[0], row[1], row[2], None)
    for row in near:
        index.add(row[0], None, None, from_signed64(row[1]))
    plan = SettlePlan()
    for item_id, item, guid, canon, fingerprint in prepared:
        signed = to_signed64(fingerprint) if fingerprint is not None else None
        item = stored_item(item)
        payload = item_to_json(item)
        stored_canon = stored_text(canon) if canon else canon
        match = index.match(guid, canon, fingerprint)
        if match is not None:
            plan.duplicates.append((match[0], payload, stored_canon, signed, stamp, stamp, item_id))
            plan.verdicts.append(DedupeVerdict(item_id, "duplicate", match[0], match[1]))
            continue
        index.add(item_id, guid, canon, fingerprint)
        plan.uniques.append(
            (payload, item.title, item.url, stored_canon, signed, stamp, stamp, item_id)
        )
        if fingerprint is not None:
            plan.new_bands += [(band, item_id) for band in simhash_bands(fingerprint)]
        plan.verdicts.append(DedupeVerdict(item_id, "pending"))
    return plan


def batch_lookups(prepared: Sequence[DedupeKeys]) -> tuple[list[str], list[str], list[int]]:
    """The batch's global guids, canonical URLs and simhash bands (sorted, distinct)."""
    guids = sorted({p[2] for p in prepared if p[2] is not None})
    urls = sorted({p[3] for p in prepared if p[3] is not None})
    bands = sorted({b for p in prepared if p[4] is not None for b in simhash_bands(p[4])})
    return guids, urls, bands
