"""The intake stages: discover -> fetch -> extract -> normalise + dedupe.

Each stage is a set of workers reading one bounded memory object stream and
writing the next, so a slow stage holds the ones before it back (memory stays
flat however many feeds there are). :func:`pipeline.intake.run_scan` wires them
up; this module holds what each stage does to one unit of work.

Error policy: only the listed transient errors (``FetchError.transient``,
``TimeoutError``) are retried, with exponential backoff and jitter, and logged
with ``exc_info``; a permanent error parks the item with its reason.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import anyio
import httpx
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from anyio.streams.memory import MemoryObjectReceiveStream

from signaldesk.errors import SignaldeskError
from signaldesk.items import Item, SourceKind
from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.feeds import FeedRecord, FeedRegistry
from signaldesk.pipeline.intake_report import FeedProblem, Handoff, ScanStats
from signaldesk.pipeline.ledger import Ledger, LedgerEntry, item_identity
from signaldesk.pipeline.ledger_clippings import resolve_clipping
from signaldesk.sources.clipper import scan_clippings
from signaldesk.sources.errors import FetchError
from signaldesk.sources.fulltext import fetch_article, merge_article
from signaldesk.sources.http import HostLimiter
from signaldesk.sources.newsletter import fetch_imap, read_mail_sources
from signaldesk.sources.rss import PollResult, is_teaser, poll_feed
from signaldesk.sources.tool_output import scan_drop_folder
from signaldesk.sources.tracking import strip_tracking_params

__all__ = ["ScanContext", "Work", "normalise"]

logger = logging.getLogger(__name__)

_BLANK_RUNS = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t\u00a0]+")


@dataclass(frozen=True, slots=True)
class Work:
    """One item travelling through the stages, with the status it has in the ledger."""

    id: str
    item: Item
    status: str


@dataclass(slots=True)
class ScanContext:
    """Everything the workers of one scan share (built once by ``run_scan``)."""

    workspace: Workspace
    ledger: Ledger
    registry: FeedRegistry
    client: httpx.AsyncClient | None
    limiter: HostLimiter
    stats: ScanStats
    now: Callable[[], datetime]
    force: bool
    handoff: Handoff | None
    on_progress: Callable[[ScanStats], None] | None
    full_text_by_feed: dict[str, bool]
    # Shared by every fetch worker: bounds the feed parses running in threads at once.
    parse_limiter: anyio.CapacityLimiter | None = None

    def progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.stats)

    def wants_full_text(self, feed_url: str) -> bool:
        """``[rss] full_text`` and the feed's own opt-out (unknown feeds follow the setting)."""
        return self.workspace.config.rss.full_text and self.full_text_by_feed.get(feed_url, True)


def _backoff(ctx: ScanContext, attempt: int) -> float:
    base: float = ctx.workspace.config.pipeline.retry_backoff * 2.0 ** (attempt - 1)
    return base * (0.5 + random.random() / 2)  # jitter keeps retries from marching in step


def _is_transient(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or bool(getattr(exc, "transient", False))


# -- discover ---------------------------------------------------------------------


async def discover_local(
    ctx: ScanContext, kinds: Sequence[SourceKind], send: ObjectSendStream[Work]
) -> None:
    """Read the drop folders of ``kinds`` (and the IMAP mailbox when configured);
    record new items as ``fetched`` and pass them on.

    Unreadable files are parked by location with their reason (once; a later scan
    that still fails does not count them again). Mail that is readable but not a
    newsletter is skipped without a trace, as the adapter decides.
    """
    config = ctx.workspace.config
    vault = ctx.workspace.vault
    for kind in kinds:
        found: list[tuple[str, Item | None, str | None]]
        if kind == "clipper":
            found = await _read_clippings(ctx)
            source_id = config.clipper.folder
        elif kind == "newsletter":
            found = await anyio.to_thread.run_sync(
                lambda: [
                    (r.location, r.item, r.error)
                    for r in read_mail_sources(config.newsletter, vault)
                    if r.item is not None or r.error is not None
                ]
            )
            source_id = config.newsletter.drop_folder
            if config.newsletter.imap_host:
                found += await _imap(ctx)
        elif kind == "tool_output":
            found = await anyio.to_thread.run_sync(_read_drop_folder, ctx)
            source_id = config.tool_output.drop_folder
        else:
            continue
        await _record_local(ctx, kind, source_id, found, send)


async def _read_clippings(ctx: ScanContext) -> list[tuple[str, Item | None, str | None]]:
    """The clipper folder's files, each item carrying the guid that makes it the right
    ledger item: a file at a path whose earlier clipping triage moved away is a new
    clipping, an edit of one still in place is not (:mod:`pipeline.ledger_clippings`)."""
    config = ctx.workspace.config
    results = await anyio.to_thread.run_sync(
        lambda: list(scan_clippings(ctx.workspace.vault, config.clipper))
    )
    claims = await ctx.ledger.clipping_claims()
    return [
        (r.path, resolve_clipping(r.item, r.fingerprint, claims) if r.item else None, r.error)
        for r in results
    ]


def _read_drop_folder(ctx: ScanContext) -> list[tuple[str, Item | None, str | None]]:
    settings = ctx.workspace.config.tool_output
    folder = ctx.workspace.resolve(settings.drop_folder)
    return [
        (r.path, r.item, r.error) for r in scan_drop_folder(folder, max_bytes=settings.max_bytes)
    ]


async def _imap(ctx: ScanContext) -> list[tuple[str, Item | None, str | None]]:
    settings = ctx.workspace.config.newsletter
    seen = await ctx.ledger.known_guids("newsletter")
    try:
        with anyio.fail_after(settings.imap_timeout * 10):
            items = await fetch_imap(settings, seen=seen)
    except (TimeoutError, SignaldeskError) as exc:
        logger.warning("IMAP mailbox not read: %s", exc, exc_info=True)
        ctx.stats.tally("newsletter").errors += 1
        return []
    return [(item.guid or "", item, None) for item in items]


async def _record_local(
    ctx: ScanContext,
    kind: SourceKind,
    source_id: str,
    found: list[tuple[str, Item | None, str | None]],
    send: ObjectSendStream[Work],
) -> None:
    tally = ctx.stats.tally(kind)
    items: list[Item] = []
    # A file that failed before and reads now is no longer a parked problem.
    await ctx.ledger.clear_parked_locations(
        kind, source_id, [loc for loc, item, _ in found if item is not None]
    )
    for location, item, error in found:
        ctx.stats.items_seen += 1
        if item is None:
            _, new = await ctx.ledger.park_location(
                kind, source_id, location, error or "unreadable", now=ctx.now()
            )
            if new:
                tally.parked += 1
            continue
        items.append(item)
    new_ids = await ctx.ledger.record(items, status="fetched", now=ctx.now())
    by_id = {i: None for i in new_ids}
    for item in items:
        item_id = item_identity(item)
        if item_id in by_id:
            by_id.pop(item_id)
            await send.send(Work(item_id, item, "fetched"))
    ctx.progress()


async def discover_feeds(ctx: ScanContext, send: ObjectSendStream[FeedRecord]) -> None:
    """Send every due (or, with ``force``, every enabled) feed to the fetch stage."""
    if ctx.force:
        records = [r for r in await ctx.registry.records() if not r.disabled]
    else:
        records = await ctx.registry.due(ctx.now())
    ctx.stats.feeds_due = len(records)
    ctx.progress()
    for record in records:
        await send.send(record)


async def resume(
    ctx: ScanContext, entries: Sequence[LedgerEntry], send: ObjectSendStream[Work]
) -> None:
    """Put the items a previous run left mid-stage back on the line."""
    for entry in entries:
        await send.send(Work(entry.id, entry.item, entry.status))


# -- fetch (feeds) ----------------------------------------------------------------


async def fetch_worker(
    ctx: ScanContext, receive: ObjectReceiveStream[FeedRecord], send: ObjectSendStream[Work]
) -> None:
    """Poll feeds; store each poll's new state and its new items in one transaction."""
    async with receive, send:
        async for record in receive:
            await _poll_one(ctx, record, send)


async def _poll_one(ctx: ScanContext, record: FeedRecord, send: ObjectSendStream[Work]) -> None:
    assert ctx.client is not None
    config = ctx.workspace.config
    tally = ctx.stats.tally("rss")
    try:
        with anyio.fail_after(config.pipeline.stage_timeout):
            result: PollResult = await poll_feed(
                ctx.client,
                record.state,
                http=config.http,
                rss=config.rss,
                now=ctx.now(),
                limiter=ctx.limiter,
                force=ctx.force,
                parse_limiter=ctx.parse_limiter,
            )
    except (TimeoutError, SignaldeskError) as exc:
        # poll_feed reports its own failures in the result; reaching here means the
        # stage deadline hit or an adapter bug. The feed keeps its old state and is
        # due again next scan.
        logger.warning("feed %s not polled: %s", record.url, exc, exc_info=True)
        ctx.stats.feeds_polled += 1
        ctx.stats.feeds_failed += 1
        tally.errors += 1
        ctx.stats.feed_problems.append(
            FeedProblem(
                record.url, record.state.title, "error", str(exc), record.state.error_count, None
            )
        )
        ctx.progress()
        return
    async with ctx.ledger.transaction() as conn:
        await ctx.registry.save_state(conn, record.url, result.state)
        new_ids = await ctx.ledger.insert_items(
            conn, result.items, status="discovered", now=ctx.now()
        )
    ctx.stats.feeds_polled += 1
    ctx.stats.items_seen += len(result.items)
    if result.outcome == "not_modified":
        ctx.stats.feeds_not_modified += 1
    if result.outcome in {"error", "gone", "disabled"} or result.state.disabled_reason:
        ctx.stats.feeds_failed += 1
        tally.errors += 1
        ctx.stats.feed_problems.append(
            FeedProblem(
                result.state.url,
                result.state.title,
                result.outcome,
                result.error or result.state.last_error,
                result.state.error_count,
                result.state.disabled_reason,
            )
        )
    for warning in result.warnings:
        logger.info("feed %s: %s", result.state.url, warning)
    ctx.full_text_by_feed.setdefault(result.state.url, record.state.full_text)
    ctx.progress()
    if new_ids:
        wanted = set(new_ids)
        for item in result.items:
            item_id = item_identity(item)
            if item_id in wanted:
                wanted.discard(item_id)
                await send.send(Work(item_id, item, "discovered"))


# -- extract ----------------------------------------------------------------------


async def extract_worker(
    ctx: ScanContext, receive: ObjectReceiveStream[Work], send: ObjectSendStream[Work]
) -> None:
    """Fetch full text for teaser feed entries; everything else passes straight on."""
    async with receive, send:
        async for work in receive:
            result = await _extract_one(ctx, work)
            if result is not None:
                await send.send(result)


async def _extract_one(ctx: ScanContext, work: Work) -> Work | None:
    item = work.item
    if (
        work.status != "discovered"
        or item.source_kind != "rss"
        or not item.url
        or not ctx.wants_full_text(item.source_id)
        or not is_teaser(item)
    ):
        return work
    assert ctx.client is not None
    config = ctx.workspace.config
    tries = config.pipeline.retry_attempts
    for attempt in range(1, tries + 1):
        try:
            with anyio.fail_after(config.pipeline.stage_timeout):
                article = await fetch_article(
                    ctx.client, item.url, http=config.http, limiter=ctx.limiter
                )
        except (TimeoutError, FetchError) as exc:
            reason = f"full text from {item.url}: {exc}"
            if _is_transient(exc) and attempt < tries:
                delay = _backoff(ctx, attempt)
                logger.info("retrying in %.1f s: %s", delay, reason, exc_info=True)
                await anyio.sleep(delay)
                continue
            if _is_transient(exc):
                attempts = await ctx.ledger.record_failure(work.id, reason, now=ctx.now())
                logger.warning(
                    "transient failure (%d/%d): %s",
                    attempts,
                    config.pipeline.max_attempts,
                    reason,
                    exc_info=True,
                )
                if attempts < config.pipeline.max_attempts:
                    # Left in flight: the next scan tries again.
                    ctx.stats.tally("rss").errors += 1
                    ctx.progress()
                    return None
                reason = f"gave up after {attempts} attempts: {reason}"
            return await _fall_back(ctx, work, reason)
        extracted = merge_article(item, article) if article is not None else None
        if extracted is None:
            return await _fall_back(
                ctx, work, f"no article text longer than the feed's at {item.url}"
            )
        await ctx.ledger.advance(work.id, "extracted", item=extracted, now=ctx.now())
        return Work(work.id, extracted, "extracted")
    raise AssertionError("unreachable: the last attempt returns")


async def _fall_back(ctx: ScanContext, work: Work, reason: str) -> Work | None:
    """Keep the feed's own content; park the item when the feed gave none."""
    item = work.item
    if not (item.text.strip() or (item.summary or "").strip()):
        await ctx.ledger.park(
            work.id, f"{reason}; the feed has no content to fall back to", now=ctx.now()
        )
        ctx.stats.tally(item.source_kind).parked += 1
        ctx.progress()
        return None
    logger.info("keeping the feed's content: %s", reason)
    kept = dataclasses.replace(item, extra={**item.extra, "full_text": f"failed: {reason}"})
    await ctx.ledger.advance(work.id, "extracted", item=kept, now=ctx.now())
    return Work(work.id, kept, "extracted")


# -- normalise + dedupe -------------------------------------------------------------


def normalise(item: Item) -> Item:
    """Tidy an item for storage and comparison: trimmed title, tracking-free URL,
    collapsed blank lines, a title even when the source had none."""
    text = _BLANK_RUNS.sub("\n\n", item.text.replace("\r\n", "\n")).strip()
    summary = item.summary.strip() if item.summary else None
    if not text and summary:
        text = summary
    title = _SPACES.sub(" ", item.title).strip()
    if not title:
        first = next((line.strip("# ").strip() for line in text.splitlines() if line.strip()), "")
        title = first[:120] or (item.url or "untitled")
    url = strip_tracking_params(item.url.strip()) if item.url else None
    tags = tuple(dict.fromkeys(t.strip() for t in item.tags if t and t.strip()))
    return dataclasses.replace(
        item, title=title, text=text, summary=summary or None, url=url, tags=tags
    )


async def settle_worker(ctx: ScanContext, receive: MemoryObjectReceiveStream[Work]) -> None:
    """The one dedupe worker (serial, so two copies arriving at once cannot both
    be new). It takes whatever is waiting, up to ``[pipeline] queue_size`` items,
    and settles it in one ledger transaction; then hands each new item to
    ``ctx.handoff``."""
    limit = ctx.workspace.config.pipeline.queue_size
    async with receive:
        async for first in receive:
            batch = [first]
            while len(batch) < limit:
                try:
                    batch.append(receive.receive_nowait())
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
            await _settle_batch(ctx, batch)


async def _settle_batch(ctx: ScanContext, batch: Sequence[Work]) -> None:
    ready: list[tuple[str, Item]] = []
    for work in batch:
        item = normalise(work.item)
        if not item.text and not item.url:
            await ctx.ledger.park(work.id, "empty item: no text and no link", now=ctx.now())
            ctx.stats.tally(item.source_kind).parked += 1
            continue
        ready.append((work.id, item))
    verdicts = await ctx.ledger.settle_many(ready, now=ctx.now())
    fresh: list[str] = []
    for (item_id, item), verdict in zip(ready, verdicts, strict=True):
        tally = ctx.stats.tally(item.source_kind)
        if verdict.status == "duplicate":
            tally.duplicate += 1
        else:
            tally.new += 1
            fresh.append(item_id)
    ctx.stats.new_ids += fresh
    ctx.progress()
    if ctx.handoff is None:
        return
    for item_id in fresh:
        try:
            with anyio.fail_after(ctx.workspace.config.pipeline.stage_timeout):
                await ctx.handoff(item_id)
        except TimeoutError:
            # The item is safely `pending` in the ledger; triage picks it up from there.
            logger.warning("hand-off of %s timed out; it stays pending", item_id, exc_info=True)
