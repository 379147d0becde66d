"""Feed polling: one conditional GET per due feed, turned into items and a new state.

:func:`poll_feed` never raises for anything a server or a feed can do: every outcome
(new items, 304, error, 410, disabled, not due yet) comes back as a :class:`PollResult`
holding the state to persist. Parsing lives in :mod:`sources.feed_parse`, the polling
policy (intervals, backoff, redirects) in :mod:`sources.feed_policy`.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import anyio
import anyio.to_thread
import httpx

from signaldesk.items import Item
from signaldesk.sources.errors import FeedParseError, FetchError
from signaldesk.sources.feed_parse import ParsedFeed, parse_feed
from signaldesk.sources.feed_policy import (
    FeedState,
    adaptive_interval,
    record_failure,
    record_gone,
    record_redirect,
    record_success,
    server_floor,
)
from signaldesk.sources.http import (
    FetchResponse,
    HostBreaker,
    HostLimiter,
    fetch,
    is_transient_status,
    parse_max_age,
    parse_retry_after,
)
from signaldesk.sources.settings import HttpSettings, RssSettings

__all__ = [
    "FEED_ACCEPT",
    "FeedState",
    "ParsedFeed",
    "PollOutcome",
    "PollResult",
    "feed_parse_limiter",
    "is_teaser",
    "parse_feed",
    "poll_feed",
]

logger = logging.getLogger(__name__)

PollOutcome = Literal["updated", "not_modified", "error", "gone", "disabled", "not_due"]

FEED_ACCEPT = (
    "application/rss+xml, application/atom+xml, application/rdf+xml, application/feed+json, "
    "application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, */*;q=0.5"
)


@dataclass(frozen=True, slots=True)
class PollResult:
    """The outcome of one poll.

    :param state: the new state to persist (always, whatever the outcome).
    :param items: the feed's entries (all of them: deduplication is the caller's job).
    :param warnings: things worth reporting that did not fail the poll (a malformed feed
        that still yielded entries, a permanent redirect, a moved feed).
    :param error: what went wrong, for ``error`` and ``gone``.
    :param transient: whether that error may pass by itself.
    :param cause: a short label of the error for grouping ("timed out", "HTTP 404",
        "not a feed", ...).
    """

    state: FeedState
    items: tuple[Item, ...]
    outcome: PollOutcome
    warnings: tuple[str, ...] = ()
    error: str | None = None
    transient: bool = False
    cause: str | None = None


async def poll_feed(
    client: httpx.AsyncClient,
    state: FeedState,
    *,
    http: HttpSettings,
    rss: RssSettings,
    now: datetime,
    limiter: HostLimiter | None = None,
    force: bool = False,
    rng: random.Random | None = None,
    parse_limiter: anyio.CapacityLimiter | None = None,
    breaker: HostBreaker | None = None,
) -> PollResult:
    """Poll one feed if it is due (or ``force``), with a conditional GET.

    The body is parsed in a worker thread (feedparser takes 0.15-0.4 s for a
    50-entry feed, long enough to stall every other task on the event loop).

    :param now: the current time (timezone-aware); all scheduling is relative to it.
    :param force: poll even if the next check has not come yet (a disabled feed
        stays disabled: re-enable it by clearing ``disabled_reason``).
    :param rng: the jitter source for backoff (inject a seeded one in tests).
    :param parse_limiter: bounds the parses running at once across every poll that
        shares it (a scan makes one with :func:`feed_parse_limiter`); ``None`` uses
        anyio's default thread limiter.
    :param breaker: the run's per-host breaker (a host that did not answer is skipped).
    """
    if state.disabled_reason is not None:
        return PollResult(state=state, items=(), outcome="disabled", error=state.disabled_reason)
    if not force and not state.is_due(now):
        return PollResult(state=state, items=(), outcome="not_due")
    rng = rng or random.Random()
    headers = {"Accept": FEED_ACCEPT}
    # Validators go back byte for byte: a weak ETag keeps its W/ and its quotes.
    if state.etag:
        headers["If-None-Match"] = state.etag
    if state.last_modified:
        headers["If-Modified-Since"] = state.last_modified
    try:
        response = await fetch(
            client,
            state.url,
            settings=http,
            limiter=limiter,
            headers=headers,
            max_redirects=http.max_redirects,
            breaker=breaker,
        )
    except FetchError as exc:
        logger.info("feed %s failed: %s", state.url, exc.message)
        logger.debug("feed %s failed", state.url, exc_info=True)
        return _failed(state, now=now, rss=rss, rng=rng, message=exc.message, exc=exc)
    parsed: ParsedFeed | FeedParseError | None = None
    if 200 <= response.status < 300:
        parsed = await _parse_in_thread(response, source_id=state.url, limiter=parse_limiter)
    return _handle_response(state, response, parsed, now=now, rss=rss, rng=rng)


def feed_parse_limiter() -> anyio.CapacityLimiter:
    """A limiter for the feed parses of one scan: one thread per CPU this process may use.

    Why not more: feedparser is pure Python and holds the GIL, so parse threads beyond
    the cores only queue behind each other (and behind the event loop) while each one
    holds a whole feed document in memory.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return anyio.CapacityLimiter(max(1, cpus))


async def _parse_in_thread(
    response: FetchResponse, *, source_id: str, limiter: anyio.CapacityLimiter | None
) -> ParsedFeed | FeedParseError:
    """Parse the body off the event loop; a parse error comes back as a value.

    The thread is not abandoned on cancellation: a parse is bounded by
    ``[http] max_bytes``, and an abandoned thread would keep using a core the
    limiter believes is free.
    """
    job = functools.partial(
        parse_feed,
        response.body,
        url=response.url,
        content_type=response.content_type,
        source_id=source_id,
    )
    try:
        return await anyio.to_thread.run_sync(job, limiter=limiter)
    except FeedParseError as exc:
        return exc


def _handle_response(
    state: FeedState,
    response: FetchResponse,
    parsed: ParsedFeed | FeedParseError | None,
    *,
    now: datetime,
    rss: RssSettings,
    rng: random.Random,
) -> PollResult:
    """Turn a response (and, for a 2xx, its parsed body or parse error) into a result."""
    status = response.status
    if status == 410:
        new = record_gone(state, now=now)
        logger.warning("feed %s is gone (410); it will not be polled again", state.url)
        return PollResult(
            state=new, items=(), outcome="gone", error="gone (410)", cause="gone (410)"
        )
    if status != 304 and not 200 <= status < 300:
        retry_after = parse_retry_after(response.headers.get("retry-after"), now)
        message = f"HTTP {status}" + (f" at {response.url}" if response.url != state.url else "")
        return _failed(
            state,
            now=now,
            rss=rss,
            rng=rng,
            message=message,
            status=status,
            retry_after=retry_after,
            transient=is_transient_status(status),
        )

    if isinstance(parsed, FeedParseError):
        return _failed(
            state,
            now=now,
            rss=rss,
            rng=rng,
            message=parsed.message,
            status=status,
            cause="not a feed",
        )
    assert parsed is not None or status == 304, "poll_feed parses every 2xx body"

    warnings: list[str] = []
    state, note = record_redirect(state, response.permanent_target, rss=rss)
    if note:
        warnings.append(note)
        logger.info("feed %s: %s", response.url, note)

    max_age = parse_max_age(response.headers.get("cache-control"))
    retry_after = parse_retry_after(response.headers.get("retry-after"), now)
    if parsed is None:  # 304 Not Modified: nothing new, validators and rhythm stand
        ttl = state.ttl_seconds
        interval = state.interval_seconds
        etag = response.headers.get("etag") or state.etag
        last_modified = response.headers.get("last-modified") or state.last_modified
    else:
        ttl = parsed.ttl_seconds
        # Until a first success the stored interval is only the dataclass default; the
        # configured default_interval applies to a feed whose rhythm is still unknown.
        previous = state.interval_seconds if state.last_success_at else None
        interval = adaptive_interval(
            (item.published for item in parsed.items), rss=rss, previous=previous
        )
        etag = response.headers.get("etag")
        last_modified = response.headers.get("last-modified")
        if parsed.warning:
            warnings.append(f"malformed feed, entries kept: {parsed.warning}")
    floor = server_floor(rss=rss, ttl_seconds=ttl, max_age=max_age, retry_after=retry_after)
    new = record_success(
        state,
        now=now,
        status=status,
        interval=interval,
        floor=floor,
        etag=etag,
        last_modified=last_modified,
        title=parsed.title if parsed else None,
        ttl_seconds=ttl,
    )
    if parsed is None:
        return PollResult(state=new, items=(), outcome="not_modified", warnings=tuple(warnings))
    return PollResult(state=new, items=parsed.items, outcome="updated", warnings=tuple(warnings))


def _failed(
    state: FeedState,
    *,
    now: datetime,
    rss: RssSettings,
    rng: random.Random,
    message: str,
    exc: FetchError | None = None,
    status: int | None = None,
    retry_after: float | None = None,
    transient: bool = False,
    cause: str | None = None,
) -> PollResult:
    if exc is not None:
        status, retry_after, transient = exc.status, exc.retry_after, exc.transient
        cause = exc.cause
    cause = cause or (f"HTTP {status}" if status else "failed")
    new = record_failure(
        state, now=now, rss=rss, message=message, rng=rng, status=status, retry_after=retry_after
    )
    outcome: PollOutcome = "error"
    if new.disabled_reason and not state.disabled_reason:
        logger.warning("feed %s disabled: %s", state.url, new.disabled_reason)
        outcome = "disabled"
    return PollResult(
        state=new, items=(), outcome=outcome, error=message, transient=transient, cause=cause
    )


_TEASER_TAIL = re.compile(
    r"(…|\.\.\.|\[…\]|\[\.\.\.\]|read more|continue reading|read the full|full story|"
    r"keep reading)\W*$",
    re.IGNORECASE,
)
_APPEARED_FIRST = re.compile(r"^the post .* appeared first on", re.IGNORECASE)
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def is_teaser(item: Item, *, min_words: int = 150) -> bool:
    """Whether the feed gave only a teaser, so fetching the page is worth it.

    True when the item links somewhere and its body is short (under ``min_words``
    words), or not long and ending the way excerpts end ("…", "[...]", "Continue
    reading", "Read more"). The "The post ... appeared first on ..." line WordPress
    adds to every entry says nothing either way: the check looks at the lines above it.
    """
    if not item.url:
        return False
    plain = _MD_LINK.sub(r"\1", item.text)
    words = len(re.findall(r"\w+", plain))
    if words < min_words:
        return True
    if words >= 4 * min_words:
        return False
    lines = [line.strip() for line in plain.strip().splitlines() if line.strip()]
    lines = [line for line in lines if not _APPEARED_FIRST.search(line)]
    return any(_TEASER_TAIL.search(line) for line in lines[-2:])
