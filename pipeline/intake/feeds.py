"""The feed registry: subscriptions and their polling state, kept in the ledger database.

Each row is a :class:`sources.rss.FeedState` (what the poller needs and updates)
plus what only the registry knows: when it was added, its OPML category and its
authority prior for scoring. Keeping feeds in the ledger's database lets a poll's
new state and the items it produced commit in one transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from signaldesk.items import Item
from signaldesk.pipeline.errors import FeedRegistryError
from signaldesk.pipeline.ledger.base import ItemLedger
from signaldesk.pipeline.ledger.records import utcnow
from signaldesk.pipeline.ledger.sql import LedgerTx
from signaldesk.sources.errors import FetchError, OpmlError
from signaldesk.sources.feed_discovery import feed_links
from signaldesk.sources.http import build_client, fetch
from signaldesk.sources.opml import OpmlFeed, export_opml, parse_opml
from signaldesk.sources.rss import FeedState, PollResult, poll_feed
from signaldesk.sources.settings import HttpSettings, RssSettings

__all__ = [
    "FeedCheck",
    "FeedRecord",
    "FeedRegistry",
    "ImportReport",
    "check_feed",
    "prior_of",
    "validate_feed_url",
]

# FeedState fields stored as ISO 8601 text.
_TIME_FIELDS = ("next_check_at", "first_error_at", "last_success_at")
_STATE_FIELDS = tuple(f.name for f in dataclasses.fields(FeedState))
_COLUMNS = (*_STATE_FIELDS, "added_at", "category", "prior")


@dataclass(frozen=True, slots=True)
class FeedRecord:
    """One subscription: its polling state and the registry's own fields."""

    state: FeedState
    added_at: datetime
    category: str | None = None
    prior: float | None = None

    @property
    def url(self) -> str:
        return self.state.url

    @property
    def disabled(self) -> bool:
        return self.state.disabled_reason is not None


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an OPML import did: feeds added, already subscribed, and not http(s) URLs."""

    added: tuple[str, ...]
    already_present: tuple[str, ...]
    invalid: tuple[str, ...] = ()


def validate_feed_url(url: str) -> str:
    """A feed URL, stripped, if it is absolute http(s).

    :raises FeedRegistryError: anything else.
    """
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme.lower() not in {"http", "https"} or not parts.hostname:
        raise FeedRegistryError(
            f"not a feed URL: {url!r}", hint="give an absolute http:// or https:// URL"
        )
    return url


@dataclass(frozen=True, slots=True)
class FeedCheck:
    """What one fetch of a feed found: its title and how many entries it holds.

    :param url: the feed's URL: the one given, or the one its page links to.
    :param page: the web page given in its place, whose feed link was followed.
    """

    url: str
    title: str | None
    entries: int
    page: str | None = None


async def check_feed(url: str, *, http: HttpSettings, rss: RssSettings) -> FeedCheck:
    """Fetch ``url`` once and read it as a feed (what `feeds add` does before subscribing).

    A web page that is no feed is searched for the feeds it links to
    (:func:`~sources.feed_discovery.feed_links`): the first that reads as a feed is
    the one checked, so the blog's own address subscribes to its feed.

    :raises FeedRegistryError: not an http(s) URL, or the answer is not a feed: a 404,
        an HTML page without a feed link, a host that refuses or does not answer, ...
        (the message says which).
    """
    url = validate_feed_url(url)
    async with build_client(http) as client:

        async def poll(target: str) -> PollResult:
            return await poll_feed(
                client, FeedState(url=target), http=http, rss=rss, now=utcnow(), force=True
            )

        result = await poll(url)
        if result.outcome == "updated":
            return FeedCheck(url=url, title=result.state.title, entries=len(result.items))
        # Only an answer that is no feed may be a page naming one (a host that did not
        # answer is not asked twice).
        links = await _linked_feeds(client, url, http) if result.cause == "not a feed" else None
        for link in links or ():
            found = await poll(link)
            if found.outcome == "updated":
                return FeedCheck(link, found.state.title, len(found.items), page=url)
    if links:
        problem = (
            "is not a readable feed (a web page whose feed links cannot be read either: "
            f"{', '.join(links)})"
        )
    elif links is not None:
        problem = "is not a readable feed (a web page that links to no RSS, Atom or JSON feed)"
    elif result.cause == "not a feed":
        problem = _parse_problem(result.error or "", url)
    else:
        # Why: a host that did not answer or a 404 says nothing about whether it serves
        # a feed; "not a readable feed (timed out after 30 s)" sent people to the URL.
        problem = f"could not be fetched ({result.error or result.outcome})"
    raise FeedRegistryError(
        f"not subscribed: {url} {problem}",
        hint="check the URL (the feed's own, or a page that links to it), or add it anyway "
        "with --no-check",
    )


def _parse_problem(error: str, url: str) -> str:
    """The parser's complaint about ``url`` without the "not a readable feed: URL" it
    opens with (the refusal names the URL once): "is not a readable feed (why)"."""
    rest = error.removeprefix(f"not a readable feed: {url}").strip()
    if rest.startswith("is "):  # "is an HTML page"
        return rest
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1]
    return f"is not a readable feed ({rest})" if rest else "is not a readable feed"


async def _linked_feeds(
    client: httpx.AsyncClient, url: str, http: HttpSettings
) -> list[str] | None:
    """The feeds the web page at ``url`` links to; ``None`` when it is no web page."""
    try:
        page = await fetch(client, url, settings=http, headers={"Accept": "text/html"})
    except FetchError:
        return None
    kind = (page.content_type or "").lower()
    head = page.body[:4096].lower()
    if not 200 <= page.status < 300 or ("html" not in kind and b"<html" not in head):
        return None
    return feed_links(page.body, page.url)


def _to_db(name: str, value: Any) -> Any:
    if isinstance(value, datetime):
        # Fixed width, so that text comparison in SQL is time order.
        return value.astimezone(UTC).isoformat(timespec="microseconds")
    if isinstance(value, bool):
        return int(value)
    return value


def _from_db(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _TIME_FIELDS or name == "added_at":
        return datetime.fromisoformat(value)
    if name == "full_text":
        return bool(value)
    return value


def _record(row: Sequence[Any]) -> FeedRecord:
    values = {name: _from_db(name, value) for name, value in zip(_COLUMNS, row, strict=True)}
    state = FeedState(**{name: values[name] for name in _STATE_FIELDS})
    return FeedRecord(
        state=state, added_at=values["added_at"], category=values["category"], prior=values["prior"]
    )


def prior_of(item: Item, priors: Mapping[str, float]) -> float | None:
    """The prior of the feed ``item`` came from (:meth:`FeedRegistry.priors`), if any."""
    return priors.get(item.source_id) if item.source_kind == "rss" else None


class FeedRegistry:
    """Feed subscriptions in the ledger database.

    :param ledger: an open ledger; writes go through its single write path.
    """

    def __init__(self, ledger: ItemLedger) -> None:
        self._ledger = ledger

    async def get(self, url: str) -> FeedRecord | None:
        """The subscription for ``url``, if any."""
        row = await self._ledger.fetch_one(
            f"SELECT {', '.join(_COLUMNS)} FROM feeds WHERE url = ?", (url,)
        )
        return _record(row) if row else None

    async def records(self) -> list[FeedRecord]:
        """Every subscription, by URL."""
        rows = await self._ledger.fetch_all(f"SELECT {', '.join(_COLUMNS)} FROM feeds ORDER BY url")
        return [_record(row) for row in rows]

    async def priors(self) -> dict[str, float]:
        """The prior of every feed that has one, by feed URL (its items' ``source_id``)."""
        return {r.url: r.prior for r in await self.records() if r.prior is not None}

    async def due(self, now: datetime | None = None) -> list[FeedRecord]:
        """Enabled subscriptions whose next check has come (never-checked ones first)."""
        stamp = _to_db("next_check_at", now or utcnow())
        rows = await self._ledger.fetch_all(
            f"SELECT {', '.join(_COLUMNS)} FROM feeds WHERE disabled_reason IS NULL "
            "AND (next_check_at IS NULL OR next_check_at <= ?) "
            "ORDER BY next_check_at IS NOT NULL, next_check_at, url",
            (stamp,),
        )
        return [_record(row) for row in rows]

    async def add(
        self,
        url: str,
        *,
        title: str | None = None,
        full_text: bool = True,
        prior: float | None = None,
        category: str | None = None,
        now: datetime | None = None,
    ) -> FeedRecord:
        """Subscribe to ``url``; it is due at once.

        :raises FeedRegistryError: the URL is not http(s), the prior is outside 0..1,
            or the feed is already subscribed.
        """
        url = validate_feed_url(url)
        if prior is not None and not 0.0 <= prior <= 1.0:
            raise FeedRegistryError(f"prior must be between 0 and 1, got {prior}")
        record = FeedRecord(
            state=FeedState(url=url, title=title, full_text=full_text),
            added_at=now or utcnow(),
            category=category,
            prior=prior,
        )
        async with self._ledger.write() as tx:
            if not await self._insert(tx, record):
                raise FeedRegistryError(
                    f"already subscribed to {url}", hint="see `signaldesk feeds list`"
                )
        return record

    @staticmethod
    async def _insert(tx: LedgerTx, record: FeedRecord) -> bool:
        values = [_to_db(name, getattr(record.state, name)) for name in _STATE_FIELDS]
        values += [_to_db("added_at", record.added_at), record.category, record.prior]
        marks = ", ".join("?" for _ in _COLUMNS)
        changed = await tx.execute(
            f"INSERT INTO feeds ({', '.join(_COLUMNS)}) VALUES ({marks}) "
            "ON CONFLICT (url) DO NOTHING",
            values,
        )
        return bool(changed)

    async def remove(self, url: str) -> None:
        """Unsubscribe (the items already recorded stay in the ledger).

        :raises FeedRegistryError: no such subscription.
        """
        async with self._ledger.write() as tx:
            if not await tx.execute("DELETE FROM feeds WHERE url = ?", (url.strip(),)):
                raise FeedRegistryError(
                    f"not subscribed to {url}", hint="see `signaldesk feeds list`"
                )

    async def enable(self, url: str, *, now: datetime | None = None) -> FeedRecord:
        """Re-enable a disabled feed: clear its error streak and make it due now.

        :raises FeedRegistryError: no such subscription.
        """
        stamp = _to_db("next_check_at", now or utcnow())
        async with self._ledger.write() as tx:
            changed = await tx.execute(
                "UPDATE feeds SET disabled_reason = NULL, error_count = 0, first_error_at = NULL, "
                "next_check_at = ? WHERE url = ?",
                (stamp, url.strip()),
            )
            if not changed:
                raise FeedRegistryError(
                    f"not subscribed to {url}", hint="see `signaldesk feeds list`"
                )
        record = await self.get(url.strip())
        assert record is not None
        return record

    @staticmethod
    async def save_state(tx: LedgerTx, polled_url: str, state: FeedState) -> None:
        """Store a poll's new state inside an open ledger transaction.

        When a permanent redirect moved the feed (``state.url != polled_url``) the row
        is re-keyed; if the target is itself already subscribed, the old row goes.
        """
        assignments = ", ".join(f"{name} = ?" for name in _STATE_FIELDS)
        values = [_to_db(name, getattr(state, name)) for name in _STATE_FIELDS]
        if state.url != polled_url and await tx.fetch_one(
            "SELECT 1 FROM feeds WHERE url = ?", (state.url,)
        ):
            await tx.execute("DELETE FROM feeds WHERE url = ?", (polled_url,))
            return
        await tx.execute(f"UPDATE feeds SET {assignments} WHERE url = ?", (*values, polled_url))

    async def import_opml(self, data: bytes, *, now: datetime | None = None) -> ImportReport:
        """Subscribe to every feed of an OPML document; known ones are left as they are.

        :raises FeedRegistryError: the document cannot be read as OPML.
        """
        try:
            feeds = parse_opml(data)
        except OpmlError as exc:
            raise FeedRegistryError(f"cannot import OPML: {exc.message}") from exc
        added: list[str] = []
        present: list[str] = []
        invalid: list[str] = []
        stamp = now or utcnow()
        async with self._ledger.write() as tx:
            for feed in feeds:
                try:
                    url = validate_feed_url(feed.url)
                except FeedRegistryError:
                    invalid.append(feed.url)
                    continue
                record = FeedRecord(
                    state=FeedState(url=url, title=feed.title),
                    added_at=stamp,
                    category=feed.category,
                )
                (added if await self._insert(tx, record) else present).append(url)
        return ImportReport(
            added=tuple(added), already_present=tuple(present), invalid=tuple(invalid)
        )

    async def export_opml(self) -> bytes:
        """Every subscription as an OPML 2.0 document."""
        records = await self.records()
        return export_opml(
            [
                OpmlFeed(url=r.url, title=r.state.title, html_url=None, category=r.category)
                for r in records
            ]
        )
