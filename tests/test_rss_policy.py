"""The polling policy (sources.feed_policy) and teaser detection, with a fixed clock."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from signaldesk.items import Item
from signaldesk.sources.feed_policy import (
    FeedState,
    adaptive_interval,
    backoff_delay,
    record_failure,
    record_redirect,
    record_success,
    server_floor,
)
from signaldesk.sources.rss import is_teaser
from signaldesk.sources.settings import RssSettings

RSS = RssSettings()
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class _FixedRandom(random.Random):
    """random() always returns the same value: jitter becomes exact."""

    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


def test_backoff_doubles_and_caps() -> None:
    no_jitter = _FixedRandom(0.0)
    delays = [backoff_delay(n, rss=RSS, rng=no_jitter) for n in range(1, 10)]
    assert delays[:4] == [900, 1800, 3600, 7200]
    assert max(delays) == RSS.backoff_max == delays[-1]
    assert backoff_delay(10_000, rss=RSS, rng=no_jitter) == RSS.backoff_max  # no overflow


def test_backoff_jitter_only_shortens_within_bounds() -> None:
    full = _FixedRandom(0.999999)
    assert backoff_delay(1, rss=RSS, rng=full) == pytest.approx(
        900 * (1 - RSS.backoff_jitter), rel=1e-5
    )
    seeded = random.Random(42)
    values = {backoff_delay(3, rss=RSS, rng=seeded) for _ in range(50)}
    assert len(values) > 40  # spread out
    assert all(3600 * (1 - RSS.backoff_jitter) <= v <= 3600 for v in values)


def test_failure_sequence_and_disable_after_thirty_days() -> None:
    rng = _FixedRandom(0.0)
    state = FeedState(url="http://e/feed")
    state = record_failure(state, now=NOW, rss=RSS, message="HTTP 500", rng=rng, status=500)
    assert state.error_count == 1 and state.first_error_at == NOW
    assert state.next_check_at == NOW + timedelta(seconds=900)
    assert state.last_error == "HTTP 500" and state.last_status == 500
    later = NOW + timedelta(days=10)
    state = record_failure(state, now=later, rss=RSS, message="timed out", rng=rng)
    assert state.error_count == 2 and state.first_error_at == NOW  # kept from the first
    assert state.disabled_reason is None
    end = NOW + timedelta(days=RSS.disable_after_days)
    state = record_failure(state, now=end, rss=RSS, message="HTTP 503", rng=rng)
    assert state.disabled_reason is not None
    assert state.disabled_reason.startswith("failing since 2026-03-01")
    assert "HTTP 503" in state.disabled_reason
    assert state.next_check_at is None
    assert not state.is_due(end + timedelta(days=100))


def test_retry_after_wins_over_shorter_backoff_and_is_capped() -> None:
    rng = _FixedRandom(0.0)
    state = FeedState(url="http://e/feed")
    after = record_failure(state, now=NOW, rss=RSS, message="429", rng=rng, retry_after=7200)
    assert after.next_check_at == NOW + timedelta(hours=2)
    huge = record_failure(state, now=NOW, rss=RSS, message="429", rng=rng, retry_after=10**9)
    assert huge.next_check_at == NOW + timedelta(seconds=RSS.max_server_delay)


def test_success_clears_errors() -> None:
    failing = FeedState(
        url="http://e/feed", error_count=3, first_error_at=NOW, last_error="HTTP 500"
    )
    ok = record_success(
        failing,
        now=NOW,
        status=200,
        interval=3600,
        floor=7200,
        etag='"x"',
        last_modified=None,
        title="T",
    )
    assert (ok.error_count, ok.first_error_at, ok.last_error) == (0, None, None)
    assert ok.next_check_at == NOW + timedelta(hours=2)  # the floor wins
    assert ok.interval_seconds == 3600 and ok.etag == '"x"' and ok.title == "T"


def test_adaptive_interval_median_and_clamps() -> None:
    def dates(*hours: float) -> list[datetime | None]:
        return [NOW - timedelta(hours=h) for h in hours]

    assert adaptive_interval(dates(0, 2, 4, 6, 30), rss=RSS) == 7200  # median, not mean
    assert adaptive_interval(dates(0, 0.01, 0.02), rss=RSS) == RSS.min_interval
    assert adaptive_interval(dates(0, 100, 200), rss=RSS) == RSS.max_interval
    assert adaptive_interval([NOW, NOW, None], rss=RSS, previous=5000) == 5000  # one distinct date
    assert adaptive_interval([], rss=RSS) == RSS.default_interval
    # Only the newest interval_sample entries count.
    recent_fast = dates(*[i * 1.0 for i in range(RSS.interval_sample)], 500, 1000, 1500)
    assert adaptive_interval(recent_fast, rss=RSS) == 3600


def test_server_floor() -> None:
    assert server_floor(rss=RSS) == 0
    assert server_floor(rss=RSS, ttl_seconds=600, max_age=1200, retry_after=60) == 1200
    assert server_floor(rss=RSS, ttl_seconds=10**9) == RSS.max_server_delay


def test_redirect_counting() -> None:
    state = FeedState(url="http://a/feed")
    state, note = record_redirect(state, "http://b/feed", rss=RSS)
    assert (state.redirect_to, state.redirect_hits) == ("http://b/feed", 1) and note
    state, _ = record_redirect(state, "http://c/feed", rss=RSS)  # a different target restarts
    assert (state.redirect_to, state.redirect_hits) == ("http://c/feed", 1)
    for _ in range(RSS.redirect_threshold - 1):
        state, note = record_redirect(state, "http://c/feed", rss=RSS)
    assert state.url == "http://c/feed" and state.redirect_hits == 0
    assert note and "moved permanently" in note
    unchanged, note = record_redirect(state, None, rss=RSS)
    assert unchanged is state and note is None


def _item(text: str, url: str | None = "http://e/post") -> Item:
    return Item(source_kind="rss", source_id="http://e/feed", title="t", text=text, url=url)


def test_is_teaser() -> None:
    long_body = " ".join(["word"] * 400)
    assert is_teaser(_item("Short intro only."))
    assert is_teaser(_item(""))
    assert not is_teaser(_item("Short", url=None))  # nothing to fetch
    assert not is_teaser(_item(long_body))
    assert is_teaser(_item(long_body + " […]"))
    assert is_teaser(_item(long_body + "\n\n[Continue reading...](http://e/post)"))
    assert is_teaser(
        _item(
            long_body
            + " [&#8230;]\n\nThe post [X](http://e/x) appeared first on [Blog](http://e).".replace(
                "&#8230;", "…"
            )
        )
    )
    # A full article that happens to end with WordPress's footer is not a teaser.
    assert not is_teaser(
        _item(long_body + "\n\nThe post [X](http://e/x) appeared first on [Blog](http://e).")
    )
    # A very long body ending in "..." is a whole article, not an excerpt.
    assert not is_teaser(_item(" ".join(["word"] * 2000) + "..."))
    assert is_teaser(_item(long_body), min_words=500)
