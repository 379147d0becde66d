"""The intake stages: discover -> fetch -> extract -> normalise + dedupe.

Each stage is a set of workers reading one bounded memory object stream and
writing the next, so a slow stage holds the ones before it back (memory stays
flat however many feeds there are). :func:`pipeline.intake.run.run_scan` wires them
up; this module holds what each stage does to one unit of work (the extract stage,
article pages for teaser entries, is :mod:`pipeline.intake.full_text`).

Error policy: a feed or page that fails is one grouped line in the scan's
``problems`` (by what, host and cause), never a traceback at the default log level
(tracebacks go to debug, ``-vv``). Only transient answers of a host that did answer
(5xx, 429, a dropped connection) are retried within a scan, with exponential backoff
and jitter; a host that refused, timed out or is unknown is skipped for the rest of
the scan (:class:`sources.http.HostBreaker`). An entry whose article page cannot be
fetched goes on with the feed's own text, marked ``teaser``, and its page is tried
again in later scans; when it arrives, the entry is handed to triage again. Anything
else that goes wrong with one item or one source parks that item (or counts an error
for that source) and the scan goes on.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio
import httpx
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from anyio.streams.memory import MemoryObjectReceiveStream

from signaldesk.errors import SignaldeskError
from signaldesk.faults import is_machine_fault
from signaldesk.items import Item, SourceKind
from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.intake.feeds import FeedRecord, FeedRegistry
from signaldesk.pipeline.intake.summary import FeedProblem, Handoff, ScanStats
from signaldesk.pipeline.ledger.base import ItemLedger
from signaldesk.pipeline.ledger.clippings import resolve_clipping
from signaldesk.pipeline.ledger.store import LedgerEntry, item_identity
from signaldesk.sources.clipper import scan_clippings
from signaldesk.sources.http import HostBreaker, HostLimiter, host_of
from signaldesk.sources.newsletter import fetch_imap, read_mail_sources
from signaldesk.sources.rss import PollResult, poll_feed
from signaldesk.sources.tool_output import scan_drop_folder
from signaldesk.sources.tracking import strip_tracking_params

__all__ = [
    "SETTLED",
    "ScanContext",
    "Work",
    "backoff",
    "normalise",
    "park_broken",
    "safe_item",
]

logger = logging.getLogger(__name__)

_BLANK_RUNS = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t\u00a0]+")
# Statuses of settled items: an entry in one of them met in the extract stage is the
# re-fetch of a teaser's article page.
SETTLED = frozenset({"pending", "filed", "rejected"})
# What a local source's unit is called in the scan's problem lines.
_WHAT = {"clipper": "clipping", "newsletter": "mail", "tool_output": "tool output", "rss": "feed"}


@dataclass(frozen=True, slots=True)
class Work:
    """One item travelling through the stages, with the status it has in the ledger.

    ``rescore``: a settled teaser whose page arrived in this scan; it skips dedupe and
    goes straight to the hand-off, so triage scores it again.
    """

    id: str
    item: Item
    status: str
    rescore: bool = False


@dataclass(slots=True)
class ScanContext:
    """Everything the workers of one scan share (built once by ``run_scan``)."""

    workspace: Workspace
    ledger: ItemLedger
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
    # Hosts that did not answer in this scan are not asked again (feeds and pages).
    breaker: HostBreaker = dataclasses.field(default_factory=HostBreaker)

    def progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.stats)

    def wants_full_text(self, feed_url: str) -> bool:
        """``[rss] full_text`` and the feed's own opt-out (unknown feeds follow the setting)."""
        return self.workspace.config.rss.full_text and self.full_text_by_feed.get(feed_url, True)


def backoff(ctx: ScanContext, attempt: int) -> float:
    base: float = ctx.workspace.config.pipeline.retry_backoff * 2.0 ** (attempt - 1)
    return base * (0.5 + random.random() / 2)  # jitter keeps retries from marching in step


def _debug_traceback(message: str, *args: object) -> None:
    """The traceback of the exception being handled, for ``-vv`` only."""
    logger.debug(message, *args, exc_info=True)


def _clean(text: str) -> str:
    # Lone surrogates (undecodable bytes an adapter let through) cannot be stored.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _clean_value(value: Any) -> Any:
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, list | tuple):
        return type(value)(_clean_value(v) for v in value)
    if isinstance(value, dict):
        return {_clean(str(k)): _clean_value(v) for k, v in value.items()}
    return value


def safe_item(item: Item) -> Item:
    """``item`` with every text field storable as UTF-8 (one bad byte must not stop a scan)."""
    changes = {
        f.name: _clean_value(getattr(item, f.name))
        for f in dataclasses.fields(item)
        if isinstance(getattr(item, f.name), str | tuple | dict)
    }
    return dataclasses.replace(item, **changes)


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
    for kind in kinds:
        try:
            await _discover_kind(ctx, kind, send)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:  # one broken source must not stop the others
            if is_machine_fault(exc):
                raise  # a full disk, say: the other sources would fail the same way
            logger.warning("%s not read: %r", kind, exc)
            _debug_traceback("%s not read", kind)
            ctx.stats.tally(kind).errors += 1
            ctx.stats.problem(kind.replace("_", " "), "drop folder", type(exc).__name__, str(exc))


async def _discover_kind(ctx: ScanContext, kind: SourceKind, send: ObjectSendStream[Work]) -> None:
    config = ctx.workspace.config
    found: list[tuple[str, Item | None, str | None]]
    if kind == "clipper":
        found = await _read_clippings(ctx)
        source_id = config.clipper.folder
    elif kind == "newsletter":
        found = await anyio.to_thread.run_sync(_read_mail, ctx)
        source_id = config.newsletter.drop_folder
        if config.newsletter.imap_host:
            found += await _imap(ctx)
    elif kind == "tool_output":
        found = await anyio.to_thread.run_sync(_read_drop_folder, ctx)
        source_id = config.tool_output.drop_folder
    else:
        return
    await _record_local(ctx, kind, source_id, found, send)


def _read_mail(ctx: ScanContext) -> list[tuple[str, Item | None, str | None]]:
    """The drop folder's mail: newsletters, unreadable files, and the messages skipped
    (no newsletter headers, bounces), which are recorded once so a person hears why."""
    settings = ctx.workspace.config.newsletter
    found: list[tuple[str, Item | None, str | None]] = []
    for r in read_mail_sources(settings, ctx.workspace.vault):
        if r.item is not None or r.error is not None:
            found.append((r.location, r.item, r.error))
        elif r.skipped:
            how = "" if settings.accept_all else "; set [newsletter] accept_all = true to take it"
            if r.skipped.startswith("no newsletter headers"):
                found.append((r.location, None, f"skipped: {r.skipped}{how}"))
            else:
                found.append((r.location, None, f"skipped: {r.skipped}"))
    return found


async def _read_clippings(ctx: ScanContext) -> list[tuple[str, Item | None, str | None]]:
    """The clipper folder's files, each item carrying the guid that makes it the right
    ledger item: a file at a path whose earlier clipping triage moved away is a new
    clipping, an edit of one still in place is not (:mod:`pipeline.ledger.clippings`)."""
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
        logger.warning("IMAP mailbox not read: %s", exc)
        _debug_traceback("IMAP mailbox not read")
        ctx.stats.tally("newsletter").errors += 1
        ctx.stats.problem("mailbox", settings.imap_host, "not read", str(exc))
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
            reason = _clean(error or "unreadable")
            _, new = await ctx.ledger.park_location(
                kind, source_id, _clean(location), reason, now=ctx.now()
            )
            if new:  # told once: a later scan that finds it again stays quiet
                tally.parked += 1
                cause = reason.split(";")[0].strip()[:80]
                ctx.stats.problem(_WHAT[kind], source_id, cause, _clean(location))
            continue
        items.append(safe_item(item))
    new_ids = await ctx.ledger.record(items, status="fetched", now=ctx.now())
    by_id = {i: None for i in new_ids}
    for item in items:
        item_id = item_identity(item)
        if item_id in by_id:
            by_id.pop(item_id)
            await send.send(Work(item_id, item, "fetched"))
    ctx.progress()


async def discover_feeds(ctx: ScanContext, send: ObjectSendStream[FeedRecord]) -> None:
    """Send every due (or, with ``force``, every enabled) feed to the fetch stage.

    On a shared ledger the feeds are claimed a chunk at a time as the fetch stage takes
    them (the stream ahead of it holds ``[pipeline] queue_size``), so workers scanning at
    once share the round; a feed another worker claimed, or polled meanwhile, is left
    out. A last pass takes the due feeds of a worker that died during this scan.
    """
    if ctx.force:
        records = [r for r in await ctx.registry.records() if not r.disabled]
    else:
        records = await ctx.registry.due(ctx.now())
    if not ctx.ledger.shared:
        ctx.stats.feeds_due = len(records)
        ctx.progress()
        for record in records:
            await send.send(record)
        return
    sent: set[str] = set()
    step = max(1, ctx.workspace.config.pipeline.feed_concurrency)
    while records:
        for start in range(0, len(records), step):
            chunk = records[start : start + step]
            due = None if ctx.force else ctx.now()
            mine = await ctx.ledger.claim_feeds([r.url for r in chunk], due=due)
            for record in chunk:
                if record.url in mine:
                    sent.add(record.url)
                    ctx.stats.feeds_due += 1
                    ctx.progress()
                    await send.send(record)
        if ctx.force:
            return
        # Due feeds this worker has not polled: those a worker that died meanwhile had
        # claimed are free now (a live worker's stay with it).
        records = [r for r in await ctx.registry.due(ctx.now()) if r.url not in sent]
        free = await ctx.ledger.claim_feeds([r.url for r in records], due=ctx.now())
        records = [r for r in records if r.url in free]


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
            try:
                await _poll_one(ctx, record, send)
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:  # a bug or a hostile feed: this feed fails, not the scan
                if is_machine_fault(exc):
                    raise
                logger.warning("feed %s not taken in: %r", record.url, exc)
                _debug_traceback("feed %s not taken in", record.url)
                ctx.stats.feeds_failed += 1
                ctx.stats.tally("rss").errors += 1
                ctx.stats.problem("feed", host_of(record.url), type(exc).__name__, record.url)
                ctx.progress()


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
                breaker=ctx.breaker,
            )
    except (TimeoutError, SignaldeskError) as exc:
        # poll_feed reports its own failures in the result; reaching here means the
        # stage deadline hit or an adapter bug. The feed keeps its old state and is
        # due again next scan.
        logger.warning("feed %s not polled: %s", record.url, exc or "stage timeout")
        _debug_traceback("feed %s not polled", record.url)
        ctx.stats.feeds_polled += 1
        ctx.stats.feeds_failed += 1
        tally.errors += 1
        ctx.stats.problem("feed", host_of(record.url), "not polled", record.url)
        ctx.stats.feed_problems.append(
            FeedProblem(
                record.url, record.state.title, "error", str(exc), record.state.error_count, None
            )
        )
        ctx.progress()
        return
    items = [safe_item(item) for item in result.items]
    async with ctx.ledger.write() as tx:
        await ctx.registry.save_state(tx, record.url, result.state)
        new_ids = await ctx.ledger.insert_items(tx, items, status="discovered", now=ctx.now())
    ctx.stats.feeds_polled += 1
    ctx.stats.items_seen += len(result.items)
    if result.outcome == "not_modified":
        ctx.stats.feeds_not_modified += 1
    if result.outcome in {"error", "gone", "disabled"} or result.state.disabled_reason:
        ctx.stats.feeds_failed += 1
        tally.errors += 1
        ctx.stats.problem("feed", host_of(record.url), result.cause or result.outcome, record.url)
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
        for item in items:
            item_id = item_identity(item)
            if item_id in wanted:
                wanted.discard(item_id)
                await send.send(Work(item_id, item, "discovered"))


async def park_broken(ctx: ScanContext, work: Work, stage: str, exc: Exception) -> None:
    """Park an item a stage could not handle (a settled one is left as it is)."""
    reason = f"intake could not {stage} this item: {type(exc).__name__}: {exc}"
    logger.warning("%s parked: %s", work.item.url or work.id[:10], reason)
    _debug_traceback("item %s parked", work.id[:10])
    ctx.stats.problem("item", host_of(work.item.url), f"{stage} failed", work.item.url or work.id)
    if work.status not in SETTLED:
        await ctx.ledger.park(work.id, _clean(reason), now=ctx.now())
        ctx.stats.tally(work.item.source_kind).parked += 1
    ctx.progress()


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
    rescore: list[str] = []
    for work in batch:
        if work.rescore:
            rescore.append(work.id)
            continue
        try:
            item = normalise(work.item)
        except Exception as exc:  # a hostile item: parked, the batch goes on
            if is_machine_fault(exc):
                raise
            await park_broken(ctx, work, "normalise", exc)
            continue
        if not item.text and not item.url:
            await ctx.ledger.park(work.id, "empty item: no text and no link", now=ctx.now())
            ctx.stats.tally(item.source_kind).parked += 1
            # Counted as parked, so said too (a mail with headers and no body was silent).
            where = item.extra.get("location") or item.extra.get("drop_file") or item.title
            ctx.stats.problem(
                _WHAT.get(item.source_kind, "item"),
                item.source_id,
                "empty: no text and no link",
                str(where),
            )
            continue
        ready.append((work.id, item))
    try:
        verdicts = await ctx.ledger.settle_many(ready, now=ctx.now())
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:
        if is_machine_fault(exc):
            raise
        # One item broke the batch's transaction: settle them one by one, parking it.
        _debug_traceback("a dedupe batch failed; settling its items one by one")
        verdicts = []
        kept: list[tuple[str, Item]] = []
        for item_id, item in ready:
            try:
                verdicts.append(await ctx.ledger.settle(item_id, item, now=ctx.now()))
                kept.append((item_id, item))
            except Exception as exc:
                if is_machine_fault(exc):
                    raise
                await park_broken(ctx, Work(item_id, item, "extracted"), "dedupe", exc)
        ready = kept
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
    for item_id in [*fresh, *rescore]:
        try:
            with anyio.fail_after(ctx.workspace.config.pipeline.stage_timeout):
                await ctx.handoff(item_id)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            if is_machine_fault(exc):
                raise
            # The item is safely in the ledger (pending, or as triage left it); a later
            # triage run picks it up. One item must not stop the scan's others.
            logger.warning("hand-off of %s failed; it waits for triage: %r", item_id[:10], exc)
            _debug_traceback("hand-off of %s failed", item_id[:10])
            ctx.stats.problem("triage", "hand-off", type(exc).__name__, item_id)
