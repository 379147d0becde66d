"""The ledger's records: what an item row holds and how an item gets its identity.

Kept apart from :mod:`pipeline.ledger.store` (the database side) so the serialisation and
identity rules can be read, and tested, on their own.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, cast

from signaldesk.items import Item, SourceKind
from signaldesk.pipeline.ledger.dedupe import MatchKey, canonical_url
from signaldesk.retrieval.scrubber import scrub_text, scrub_value

__all__ = [
    "ENTRY_COLUMNS",
    "DedupeVerdict",
    "ItemStatus",
    "LedgerEntry",
    "entry_from_row",
    "global_guid",
    "iso_utc",
    "item_from_json",
    "item_identity",
    "item_to_json",
    "location_identity",
    "stored_item",
    "stored_text",
    "utcnow",
]

ItemStatus = Literal[
    "discovered", "fetched", "extracted", "pending", "duplicate", "parked", "filed", "rejected"
]


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def iso_utc(value: datetime) -> str:
    """``value`` as fixed-width ISO 8601 UTC text (so text order is time order)."""
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def item_to_json(item: Item) -> str:
    """Serialise an :class:`Item` for the ledger's payload column.

    Text with lone surrogates (undecodable bytes an adapter let through) cannot be
    stored as UTF-8; such a payload is written with ``\\u`` escapes instead, which
    :func:`item_from_json` reads back to the same item.
    """
    data = dataclasses.asdict(item)
    data["published"] = item.published.isoformat() if item.published else None
    data["tags"] = list(item.tags)
    text = json.dumps(data, ensure_ascii=False, default=str)
    if _has_surrogates(text):
        return json.dumps(data, ensure_ascii=True, default=str)
    return text


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _utf8(text: str) -> bytes:
    # surrogatepass: an id must be computable for any string an adapter produced.
    return text.encode("utf-8", "surrogatepass")


def stored_item(item: Item) -> Item:
    """``item`` as the ledger stores it: credentials in its text fields scrubbed.

    What signaldesk writes is scrubbed (issue 12): the payload feeds the notes triage
    renders. Identities are computed from the item as read (:func:`item_identity`);
    ``guid``, ``source_id`` and ``origin_path`` are identities and paths, kept as they are.
    """
    return dataclasses.replace(
        item,
        title=scrub_text(item.title),
        text=scrub_text(item.text),
        summary=scrub_text(item.summary) if item.summary else item.summary,
        author=scrub_text(item.author) if item.author else item.author,
        url=scrub_text(item.url) if item.url else item.url,
        site_name=scrub_text(item.site_name) if item.site_name else item.site_name,
        tags=tuple(scrub_text(tag) for tag in item.tags),
        extra=scrub_value(item.extra),
    )


def stored_text(text: str) -> str:
    """A reason or error message as the ledger stores it (scrubbed: it may quote input)."""
    return scrub_text(text)


def item_from_json(text: str) -> Item:
    """The inverse of :func:`item_to_json`."""
    data: dict[str, Any] = json.loads(text)
    published = data.get("published")
    data["published"] = datetime.fromisoformat(published) if published else None
    data["tags"] = tuple(data.get("tags") or ())
    data["extra"] = dict(data.get("extra") or {})
    return Item(**data)


def global_guid(item: Item) -> str | None:
    """The item's identity if it is meaningful across sources, else ``None``.

    A Message-ID is global by construction; a feed GUID only when it is a URL,
    URN or tag URI (many feeds number entries "1", "2", … which would collide
    across feeds). Clipping and tool-output guids are local file paths.
    """
    guid = (item.guid or "").strip()
    if not guid:
        return None
    if item.source_kind == "newsletter":
        return guid.strip("<>").lower()
    if item.source_kind == "rss" and ":" in guid and len(guid) >= 12:
        return guid
    return None


def item_identity(item: Item) -> str:
    """A stable id: sha256 of the source kind, the subscription and the entry's own id
    (its GUID, else its canonical URL, else its title and text)."""
    if item.guid:
        key = f"guid:{item.guid}"
    elif (canon := canonical_url(item.url)) is not None:
        key = f"url:{canon}"
    else:
        key = "text:" + hashlib.sha256(_utf8(f"{item.title}\n{item.text}")).hexdigest()
    raw = f"{item.source_kind}\x1f{item.source_id}\x1f{key}"
    return hashlib.sha256(_utf8(raw)).hexdigest()


def location_identity(kind: str, source_id: str, location: str) -> str:
    raw = f"{kind}\x1f{source_id}\x1flocation:{location}"
    return hashlib.sha256(_utf8(raw)).hexdigest()


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One row of the ledger, with its payload decoded."""

    id: str
    status: ItemStatus
    item: Item
    canonical_url: str | None
    duplicate_of: str | None
    attempts: int
    last_error: str | None
    discovered_at: datetime
    updated_at: datetime
    score: float | None
    scores: dict[str, Any] | None
    domain: str | None
    note_path: str | None

    @property
    def source_kind(self) -> SourceKind:
        return self.item.source_kind

    @property
    def title(self) -> str:
        return self.item.title


@dataclass(frozen=True, slots=True)
class DedupeVerdict:
    """What :meth:`Ledger.settle` decided: ``pending`` (unique) or ``duplicate`` of whom,
    and by which key (``guid``, ``url`` or ``simhash``)."""

    item_id: str
    status: Literal["pending", "duplicate"]
    duplicate_of: str | None = None
    matched_on: MatchKey | None = None


ENTRY_COLUMNS = (
    "id, status, payload, canonical_url, duplicate_of, attempts, last_error, discovered_at, "
    "updated_at, score, scores, domain, note_path"
)


def entry_from_row(row: Sequence[Any]) -> LedgerEntry:
    return LedgerEntry(
        id=row[0],
        status=cast(ItemStatus, row[1]),
        item=item_from_json(row[2]),
        canonical_url=row[3],
        duplicate_of=row[4],
        attempts=row[5],
        last_error=row[6],
        discovered_at=datetime.fromisoformat(row[7]),
        updated_at=datetime.fromisoformat(row[8]),
        score=row[9],
        scores=json.loads(row[10]) if row[10] else None,
        domain=row[11],
        note_path=row[12],
    )
