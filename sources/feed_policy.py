"""How often to poll a feed, and what one poll's outcome does to its state.

Pure functions of ``(state, facts, now, settings)`` with the jitter source injected,
so that the whole policy is unit-testable with a fixed clock:

- adaptive interval: the median gap between the newest entries, clamped to
  ``[min_interval, max_interval]``;
- never sooner than the server asks (``<ttl>``, ``Cache-Control: max-age``,
  ``Retry-After``), up to ``max_server_delay``;
- errors: exponential backoff with jitter, capped; a feed failing without a break for
  ``disable_after_days`` is disabled *with a reason*, never dropped silently;
- permanent redirects: the stored URL moves only after ``redirect_threshold``
  consecutive polls were sent to the same target.
"""

from __future__ import annotations

import itertools
import random
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from signaldesk.sources.settings import RssSettings

__all__ = [
    "FeedState",
    "adaptive_interval",
    "backoff_delay",
    "record_failure",
    "record_gone",
    "record_redirect",
    "record_success",
    "server_floor",
]


@dataclass(frozen=True, slots=True)
class FeedState:
    """Everything remembered about one subscription between polls (persisted by the caller).

    :param url: the current URL (changed after repeated permanent redirects).
    :param etag: sent back exactly as received (weak ``W/`` prefix and quotes included).
    :param last_modified: sent back exactly as received.
    :param interval_seconds: the adaptive polling interval.
    :param disabled_reason: set => the feed is never polled again until re-enabled.
    :param full_text: per-feed opt-out of full-text fetching.
    :param ttl_seconds: the feed's last ``<ttl>``, kept so a 304 still honours it.
    """

    url: str
    title: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    next_check_at: datetime | None = None
    interval_seconds: float = 3600.0
    error_count: int = 0
    first_error_at: datetime | None = None
    last_error: str | None = None
    last_status: int | None = None
    last_success_at: datetime | None = None
    redirect_to: str | None = None
    redirect_hits: int = 0
    disabled_reason: str | None = None
    full_text: bool = True
    ttl_seconds: float | None = None

    def is_due(self, now: datetime) -> bool:
        """Whether a poll at ``now`` is allowed (enabled, and its next check has come)."""
        return self.disabled_reason is None and (
            self.next_check_at is None or now >= self.next_check_at
        )


def adaptive_interval(
    published: Iterable[datetime | None], *, rss: RssSettings, previous: float | None = None
) -> float:
    """Poll about as often as the feed posts: the median gap between its newest entries.

    Entries without a date and repeated timestamps are ignored; with fewer than two
    distinct dates the ``previous`` interval (or ``rss.default_interval``) stands.
    """
    dates = sorted({d for d in published if d is not None}, reverse=True)[: rss.interval_sample]
    if len(dates) < 2:
        interval = previous if previous is not None else rss.default_interval
    else:
        gaps = [(a - b).total_seconds() for a, b in itertools.pairwise(dates)]
        interval = statistics.median(gaps)
    return min(rss.max_interval, max(rss.min_interval, interval))


def server_floor(
    *,
    rss: RssSettings,
    ttl_seconds: float | None = None,
    max_age: float | None = None,
    retry_after: float | None = None,
) -> float:
    """The soonest the server allows the next request, in seconds (0 when it says nothing)."""
    asked = max((v for v in (ttl_seconds, max_age, retry_after) if v is not None), default=0.0)
    return min(asked, rss.max_server_delay)


def backoff_delay(error_count: int, *, rss: RssSettings, rng: random.Random) -> float:
    """Wait after the ``error_count``-th consecutive failure: base x factor^(n-1), capped,
    minus a random fraction (up to ``backoff_jitter``) so failing feeds spread out."""
    exponent = max(0, error_count - 1)
    # Cap the exponent before the power so a feed failing for years cannot overflow.
    raw = rss.backoff_base * rss.backoff_factor ** min(exponent, 64)
    capped = min(rss.backoff_max, raw)
    return capped * (1.0 - rss.backoff_jitter * rng.random())


def record_success(
    state: FeedState,
    *,
    now: datetime,
    status: int,
    interval: float,
    floor: float,
    etag: str | None,
    last_modified: str | None,
    title: str | None = None,
    ttl_seconds: float | None = None,
) -> FeedState:
    """State after a 2xx or 304: errors cleared, next check after ``max(interval, floor)``."""
    return replace(
        state,
        title=title or state.title,
        etag=etag,
        last_modified=last_modified,
        next_check_at=now + timedelta(seconds=max(interval, floor)),
        interval_seconds=interval,
        error_count=0,
        first_error_at=None,
        last_error=None,
        last_status=status,
        last_success_at=now,
        ttl_seconds=ttl_seconds,
    )


def record_failure(
    state: FeedState,
    *,
    now: datetime,
    rss: RssSettings,
    message: str,
    rng: random.Random,
    status: int | None = None,
    retry_after: float | None = None,
) -> FeedState:
    """State after a failed poll: backoff (never sooner than ``Retry-After``), and the
    feed disabled with a reason once it has failed without a break for too long."""
    count = state.error_count + 1
    first = state.first_error_at or now
    delay = max(
        backoff_delay(count, rss=rss, rng=rng),
        server_floor(rss=rss, retry_after=retry_after),
    )
    disabled = state.disabled_reason
    if disabled is None and now - first >= timedelta(days=rss.disable_after_days):
        disabled = f"failing since {first:%Y-%m-%d %H:%M} UTC ({count} errors; last: {message})"
    return replace(
        state,
        next_check_at=None if disabled else now + timedelta(seconds=delay),
        error_count=count,
        first_error_at=first,
        last_error=message,
        last_status=status,
        disabled_reason=disabled,
    )


def record_gone(state: FeedState, *, now: datetime, status: int = 410) -> FeedState:
    """State after 410 Gone: disabled for good, with the reason."""
    return replace(
        state,
        next_check_at=None,
        last_status=status,
        last_error=f"gone ({status})",
        first_error_at=state.first_error_at or now,
        error_count=state.error_count + 1,
        disabled_reason=f"gone ({status})",
    )


def record_redirect(
    state: FeedState, target: str | None, *, rss: RssSettings
) -> tuple[FeedState, str | None]:
    """Count a permanent redirect (or its absence) and move the URL after enough in a row.

    :param target: where this poll's permanent redirects led, ``None`` when it had none
        (a poll without one breaks the streak: temporary redirects never move the URL).
    :returns: the new state and a human note of what happened, if anything did.
    """
    if target is None or target == state.url:
        if state.redirect_to is None and state.redirect_hits == 0:
            return state, None
        return replace(state, redirect_to=None, redirect_hits=0), None
    hits = state.redirect_hits + 1 if state.redirect_to == target else 1
    if hits >= rss.redirect_threshold:
        note = f"feed moved permanently: {state.url} -> {target} (after {hits} redirects)"
        return replace(state, url=target, redirect_to=None, redirect_hits=0), note
    note = f"permanently redirected to {target} ({hits}/{rss.redirect_threshold})"
    return replace(state, redirect_to=target, redirect_hits=hits), note
