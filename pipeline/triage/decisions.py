"""Which items triage scores again, and the person's decision in place of the threshold's.

Kept apart from :mod:`pipeline.triage.run` (the run itself): finding an item by id or prefix,
the items scored on a teaser whose full text has arrived since, and a card carrying the
decision a person made with ``signaldesk triage accept`` or ``move``.
"""

from __future__ import annotations

import re
from dataclasses import replace

from signaldesk.pipeline.ledger.base import ItemLedger
from signaldesk.pipeline.ledger.records import LedgerEntry
from signaldesk.scoring.records import RouteDecision, ScoreCard

__all__ = ["as_decided", "full_text_arrived", "lookup_entry"]

_HEX_PREFIX = re.compile(r"[0-9a-f]{6,63}")


async def lookup_entry(ledger: ItemLedger, item_id: str) -> LedgerEntry | None:
    """The entry with id ``item_id``, or with that unique id prefix (as `items` shows)."""
    entry = await ledger.get(item_id)
    if entry is None and _HEX_PREFIX.fullmatch(item_id):
        rows = await ledger.fetch_all(
            "SELECT id FROM items WHERE id LIKE ? LIMIT 2", (item_id + "%",)
        )
        if len(rows) == 1:
            entry = await ledger.get(rows[0][0])
    return entry


async def full_text_arrived(ledger: ItemLedger) -> list[str]:
    """Items filed or rejected on a teaser whose stored item now has the full text."""
    return await ledger.full_text_arrived()


def as_decided(card: ScoreCard, file: bool, domain: str | None) -> ScoreCard:
    """``card`` with the person's decision in place of the threshold's (scores kept)."""
    route = card.route
    if domain is not None and domain != route.domain:
        route = RouteDecision(
            domain=domain,
            confidence=1.0,
            reason=f"{domain} (1.00): you chose it; the rules said {route.domain} "
            f"({route.confidence:.2f})",
            candidates=((domain, 1.0), *route.candidates[:2]),
        )
    return replace(card, passed=file, route=route, by_person=True)
