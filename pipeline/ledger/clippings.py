"""Which ledger item a clipping file is: identity by path, then by content once the path is free.

A Web Clipper note is named after the page it saves, so the same vault path comes
back: triage moves a passing clipping out of ``Clippings/`` and a later clipping of
another page (or a new version of the same one) is saved under the same name. The
path alone cannot be the identity, and the bytes alone cannot be either (a person
fixing a typo in a clipping waiting in the inbox has not made a second signal).

The rule, per file at ``path`` with content ``fingerprint`` (sha256 of its bytes):

1. a ledger item for ``path`` recorded with this ``fingerprint``: that item (the
   same clipping read again; also the original a ``copy`` left in the inbox);
2. else a ledger item that still *holds* ``path`` (:meth:`ClippingClaim.holds`):
   that item, the clipping edited where it is. An item not yet triaged holds its
   path whatever the file now says (triage will file that file for it). One that
   triage left in place (rejected, a duplicate, or filed with ``clipping_action =
   "leave"``) holds it only while the file still names the same source page: a
   clipping of another page saved under the same name after a person deleted the
   first one is a new clipping, a fixed typo is not;
3. else the path is free (every item recorded for it was filed somewhere else, or
   parked because the note was empty): a new clipping, whose guid carries the
   fingerprint, so each generation of the path has its own identity.

The first clipping at a path keeps the plain ``clipper:<path>`` guid that
:func:`sources.clipper.clipping_to_item` gives it, so ledgers written before this
rule resolve exactly as they did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from signaldesk.items import Item
from signaldesk.pipeline.ledger.dedupe import canonical_url

__all__ = [
    "FINGERPRINT_KEY",
    "ClippingClaim",
    "clipping_claims_from_rows",
    "clipping_guid",
    "resolve_clipping",
]

FINGERPRINT_KEY = "clipping_sha256"
"""The ``Item.extra`` key holding the sha256 of the clipping file's bytes as read."""

# Not triaged yet: the file at the path is this item's, whatever it says now.
_UNTRIAGED = frozenset({"discovered", "fetched", "extracted", "pending"})
# Triaged and left in the inbox: the file is still this item's unless replaced.
_LEFT_IN_PLACE = frozenset({"rejected", "duplicate"})


@dataclass(frozen=True, slots=True)
class ClippingClaim:
    """A ledger item recorded from a clipping file, as far as identity needs it."""

    item_id: str
    guid: str
    path: str
    status: str
    note_path: str | None
    fingerprint: str | None
    canonical_url: str | None

    def holds(self, item: Item) -> bool:
        """Whether ``item``, read from this claim's :attr:`path`, is this claim's
        clipping (edited, perhaps) rather than a new one (see the module docstring)."""
        if self.status in _UNTRIAGED:
            return True
        in_place = self.status in _LEFT_IN_PLACE or (
            self.status == "filed" and self.note_path == self.path
        )
        # Parked (an empty note), or moved/copied away by triage: the path is free.
        return in_place and canonical_url(item.url) == self.canonical_url


def clipping_guid(path: str, fingerprint: str, *, first: bool) -> str:
    """The guid of the clipping at ``path``: plain for the first one ever seen there,
    with the content's fingerprint for each later one."""
    return f"clipper:{path}" if first else f"clipper:{path}@{fingerprint[:16]}"


def clipping_claims_from_rows(rows: Iterable[Sequence[Any]]) -> dict[str, list[ClippingClaim]]:
    """Every clipper item by its vault path, from rows of ``(id, guid, origin_path,
    status, note_path, fingerprint, canonical_url)`` read oldest first (each ledger
    backend reads them with its own JSON access).

    Rows parked by location (a file that could not be read at all) have no guid and
    are left out: they stand for a path, not a clipping, and go once the file reads.
    Clipper items are few (a person saves each one), so they are read in one go.
    """
    claims: dict[str, list[ClippingClaim]] = {}
    for item_id, guid, path, status, note_path, fingerprint, canon in rows:
        if path and guid:
            claims.setdefault(path, []).append(
                ClippingClaim(item_id, guid, path, status, note_path, fingerprint, canon)
            )
    return claims


def resolve_clipping(
    item: Item, fingerprint: str, claims: Mapping[str, Sequence[ClippingClaim]]
) -> Item:
    """``item`` (read from a clipping file) with the guid that makes it the right
    ledger item under the module's rule, and its ``fingerprint`` in ``extra``."""
    path = item.origin_path or ""
    known = claims.get(path, ())
    guid = next((c.guid for c in known if c.fingerprint == fingerprint), None)
    if guid is None:
        guid = next((c.guid for c in known if c.holds(item)), None)
    if guid is None:
        guid = clipping_guid(path, fingerprint, first=not known)
    return dataclasses.replace(item, guid=guid, extra={**item.extra, FINGERPRINT_KEY: fingerprint})
