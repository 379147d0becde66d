"""The extract stage: the article page of a teaser feed entry, and its later re-fetch.

An entry whose feed gave only a teaser gets its page fetched (:mod:`sources.fulltext`)
and the article in its place. When the page cannot be had, the entry goes on at once
with the feed's own text, marked ``Item.teaser``, so triage is never held up; the
page is tried again in later scans (``[pipeline] max_attempts`` tries, backing off as a
failing feed does) and, when it arrives, stored and handed to triage again through
the dedupe worker's hand-off (:attr:`pipeline.intake.stages.Work.rescore`).

Only transient answers of a host that did answer (5xx, 429, a dropped connection)
are retried within a scan; a host that did not answer is skipped by the scan's
:class:`sources.http.HostBreaker`.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream

from signaldesk.faults import is_machine_fault
from signaldesk.items import Item
from signaldesk.pipeline.intake.stages import SETTLED, ScanContext, Work, backoff, park_broken
from signaldesk.pipeline.ledger.records import iso_utc
from signaldesk.sources.errors import FetchError
from signaldesk.sources.fulltext import Article, fetch_article, merge_article
from signaldesk.sources.http import host_of
from signaldesk.sources.rss import is_teaser

__all__ = ["discover_refetch", "extract_worker"]

logger = logging.getLogger(__name__)

# Teasers whose page is tried again per scan, at most (the rest wait for the next one).
_REFETCH_PER_SCAN = 500


async def discover_refetch(ctx: ScanContext, send: ObjectSendStream[Work]) -> None:
    """Send the settled teasers whose article page is due another try to the extract stage."""
    config = ctx.workspace.config
    if not config.rss.full_text:
        return
    entries = await ctx.ledger.teasers_due(
        now=ctx.now(), max_attempts=config.pipeline.max_attempts, limit=_REFETCH_PER_SCAN
    )
    for entry in entries:
        if ctx.wants_full_text(entry.item.source_id):
            await send.send(Work(entry.id, entry.item, entry.status))


async def extract_worker(
    ctx: ScanContext, receive: ObjectReceiveStream[Work], send: ObjectSendStream[Work]
) -> None:
    """Fetch full text for teaser feed entries; everything else passes straight on."""
    async with receive, send:
        async for work in receive:
            try:
                result = await _extract_one(ctx, work)
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:  # one item that breaks a stage is parked, not the scan
                if is_machine_fault(exc):
                    raise
                await park_broken(ctx, work, "extract", exc)
                result = None
            if result is not None:
                await send.send(result)


def _wants_page(ctx: ScanContext, item: Item) -> bool:
    return bool(
        item.source_kind == "rss"
        and item.url
        and item.url.lower().startswith(("http://", "https://"))
        and ctx.wants_full_text(item.source_id)
        and is_teaser(item, min_words=ctx.workspace.config.rss.teaser_min_words)
    )


async def _extract_one(ctx: ScanContext, work: Work) -> Work | None:
    item = work.item
    if work.status in SETTLED:
        return await _refetch(ctx, work)
    if work.status != "discovered" or not _wants_page(ctx, item):
        return work
    article, failure = await _fetch_page(ctx, item)
    if failure is not None:
        return await _fall_back(ctx, work, failure)
    merged = merge_article(item, article) if article is not None else None
    extracted = merged or dataclasses.replace(
        item, teaser=False, extra={**item.extra, "full_text": "no longer than the feed's text"}
    )
    await ctx.ledger.advance(work.id, "extracted", item=extracted, now=ctx.now())
    return Work(work.id, extracted, "extracted")


async def _fetch_page(ctx: ScanContext, item: Item) -> tuple[Article | None, FetchError | None]:
    """The entry's article (or ``None``: no article in the page), or why it could not be had.

    Retried within the scan only when the host answered and may do better soon (5xx,
    429, a dropped connection); a host that did not answer trips the breaker instead.
    """
    assert ctx.client is not None and item.url is not None
    config = ctx.workspace.config
    tries = config.pipeline.retry_attempts
    for attempt in range(1, tries + 1):
        try:
            with anyio.fail_after(config.pipeline.stage_timeout):
                article = await fetch_article(
                    ctx.client, item.url, http=config.http, limiter=ctx.limiter, breaker=ctx.breaker
                )
            return article, None
        except TimeoutError:
            error = FetchError(
                "the extract stage timed out", transient=True, url=item.url, cause="timed out"
            )
        except FetchError as exc:
            error = exc
        retry = error.transient and not error.unreachable and not error.skipped
        if retry and error.cause != "client busy" and attempt < tries:
            delay = backoff(ctx, attempt)
            logger.info("retrying %s in %.1f s: %s", item.url, delay, error.message)
            await anyio.sleep(delay)
            continue
        return None, error
    raise AssertionError("unreachable: the last attempt returns")


def _retry_delay(ctx: ScanContext, attempts: int) -> timedelta:
    """How long a page that failed ``attempts`` times waits before the next try
    (the feed backoff settings of ``[rss]``)."""
    rss = ctx.workspace.config.rss
    seconds = min(rss.backoff_max, rss.backoff_base * rss.backoff_factor ** (attempts - 1))
    return timedelta(seconds=seconds)


def _teaser_extra(ctx: ScanContext, item: Item, error: FetchError) -> dict[str, Any]:
    """``item.extra`` recording a failed page fetch, and when to try again (if ever)."""
    attempts = int(item.extra.get("full_text_attempts") or 0) + 1
    extra = {
        **item.extra,
        "full_text": f"failed: {error.message}",
        "full_text_cause": error.cause,
        "full_text_attempts": attempts,
    }
    extra.pop("full_text_after", None)
    if error.transient and attempts < ctx.workspace.config.pipeline.max_attempts:
        extra["full_text_after"] = iso_utc(ctx.now() + _retry_delay(ctx, attempts))
    return extra


def _note_page_failure(ctx: ScanContext, item: Item, error: FetchError) -> None:
    ctx.stats.problem(
        "article page", host_of(item.url), error.cause, item.url or "", skipped=error.skipped
    )
    logger.info("keeping the feed's text for %s: %s", item.url, error.message)


async def _fall_back(ctx: ScanContext, work: Work, error: FetchError) -> Work:
    """Go on with the feed's own content (a title and a link, at least), marked as a
    teaser; the page is tried again in a later scan when the failure may pass."""
    item = work.item
    _note_page_failure(ctx, item, error)
    kept = dataclasses.replace(item, teaser=True, extra=_teaser_extra(ctx, item, error))
    await ctx.ledger.advance(work.id, "extracted", item=kept, now=ctx.now())
    ctx.stats.tally(item.source_kind).teasers += 1
    return Work(work.id, kept, "extracted")


async def _refetch(ctx: ScanContext, work: Work) -> Work | None:
    """Try a settled teaser's page again; when it arrives, store it and pass the item on
    for triage to score again (its status stays as triage left it)."""
    item = work.item
    article, failure = await _fetch_page(ctx, item)
    status: Any = work.status
    if failure is not None:
        _note_page_failure(ctx, item, failure)
        retried = dataclasses.replace(item, extra=_teaser_extra(ctx, item, failure))
        await ctx.ledger.replace_payload(work.id, retried, status=status, now=ctx.now())
        return None
    merged = merge_article(item, article) if article is not None else None
    updated = merged or dataclasses.replace(
        item, teaser=False, extra={**item.extra, "full_text": "no longer than the feed's text"}
    )
    updated = dataclasses.replace(
        updated, extra={k: v for k, v in updated.extra.items() if k != "full_text_after"}
    )
    if not await ctx.ledger.replace_payload(work.id, updated, status=status, now=ctx.now()):
        return None  # triage moved it meanwhile; the next scan looks again
    ctx.stats.tally(item.source_kind).refetched += 1
    ctx.progress()
    return Work(work.id, updated, work.status, rescore=True)
