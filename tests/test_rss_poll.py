"""poll_feed against a real HTTP server on 127.0.0.1: validators, redirects, errors, caps."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import anyio
import httpx
import pytest

import signaldesk.sources.rss as rss_module
from signaldesk.sources.http import build_client
from signaldesk.sources.rss import FeedState, ParsedFeed, PollResult, poll_feed
from signaldesk.sources.settings import HttpSettings, RssSettings
from tests.feedserver import FeedServer, RecordedRequest, Reply, feed_server

__all__ = ["feed_server"]

pytestmark = pytest.mark.anyio

HTTP = HttpSettings(total_timeout=2.0, connect_timeout=1.0, max_bytes=200_000)
RSS = RssSettings()
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def rss(
    *, title: str = "Test Feed", entries: int = 3, gap_hours: float = 2.0, ttl: int | None = None
) -> bytes:
    items = "".join(
        f"<item><title>Entry {i}</title><link>http://example.com/{i}</link>"
        f'<guid isPermaLink="false">id-{i}</guid>'
        f"<pubDate>{format_datetime(NOW - timedelta(hours=gap_hours * i), usegmt=True)}</pubDate>"
        f"<description>Body {i}</description></item>"
        for i in range(entries)
    )
    ttl_tag = f"<ttl>{ttl}</ttl>" if ttl else ""
    return (
        f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>{title}</title>'
        f"<link>http://example.com/</link>{ttl_tag}{items}</channel></rss>"
    ).encode()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with build_client(HTTP) as c:
        yield c


async def poll(
    client: httpx.AsyncClient, state: FeedState, *, now: datetime = NOW, force: bool = True
) -> PollResult:
    return await poll_feed(
        client, state, http=HTTP, rss=RSS, now=now, force=force, rng=random.Random(7)
    )


async def test_etag_and_last_modified_round_trip_to_304(
    feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    etag = 'W/"abc-123"'
    last_modified = "Sun, 01 Mar 2026 11:00:00 GMT"

    def conditional(request: RecordedRequest) -> Reply:
        if request.headers.get("if-none-match") == etag:
            return Reply(status=304, headers={"ETag": etag}, content_type=None)
        return Reply(body=rss(), headers={"ETag": etag, "Last-Modified": last_modified})

    feed_server.route("/feed", conditional)
    state = FeedState(url=feed_server.url("/feed"))
    first = await poll(client, state)
    assert first.outcome == "updated"
    assert [i.guid for i in first.items] == ["id-0", "id-1", "id-2"]
    assert first.state.etag == etag and first.state.last_modified == last_modified
    assert first.state.title == "Test Feed"
    assert first.items[0].source_id == state.url and first.items[0].site_name == "Test Feed"

    second = await poll(client, first.state, now=NOW + timedelta(hours=3))
    assert second.outcome == "not_modified"
    assert second.items == ()
    sent = feed_server.requests_for("/feed")[-1].headers
    assert sent["if-none-match"] == etag  # weak prefix and quotes kept
    assert sent["if-modified-since"] == last_modified
    assert second.state.etag == etag
    assert second.state.last_success_at == NOW + timedelta(hours=3)
    assert second.state.error_count == 0
    # The first poll sent no validators.
    assert "if-none-match" not in feed_server.requests_for("/feed")[0].headers


async def test_adaptive_interval_and_ttl(
    feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    feed_server.route("/every2h", Reply(body=rss(entries=6, gap_hours=2)))
    result = await poll(client, FeedState(url=feed_server.url("/every2h")))
    assert result.state.interval_seconds == 7200
    assert result.state.next_check_at == NOW + timedelta(hours=2)

    feed_server.route("/ttl", Reply(body=rss(entries=6, gap_hours=2, ttl=240)))
    result = await poll(client, FeedState(url=feed_server.url("/ttl")))
    assert result.state.next_check_at == NOW + timedelta(hours=4)  # never sooner than <ttl>
    assert result.state.ttl_seconds == 240 * 60

    feed_server.route(
        "/cc", Reply(body=rss(entries=6, gap_hours=0.1), headers={"Cache-Control": "max-age=5400"})
    )
    result = await poll(client, FeedState(url=feed_server.url("/cc")))
    assert result.state.interval_seconds == RSS.min_interval  # 6 min gaps, clamped to 15
    assert result.state.next_check_at == NOW + timedelta(seconds=5400)


async def test_not_due_and_disabled_feeds_are_not_requested(
    feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    feed_server.route("/f", Reply(body=rss()))
    url = feed_server.url("/f")
    later = FeedState(url=url, next_check_at=NOW + timedelta(minutes=5))
    assert (await poll(client, later, force=False)).outcome == "not_due"
    disabled = FeedState(url=url, disabled_reason="gone (410)")
    result = await poll(client, disabled)
    assert result.outcome == "disabled" and result.state == disabled
    assert feed_server.requests_for("/f") == []
    assert (await poll(client, later, force=True)).outcome == "updated"


@pytest.mark.parametrize("status", [301, 308])
async def test_permanent_redirect_moves_url_after_threshold(
    feed_server: FeedServer, client: httpx.AsyncClient, status: int
) -> None:
    feed_server.route("/old", Reply.redirect(status, "/new"))
    feed_server.route("/new", Reply(body=rss()))
    old, new = feed_server.url("/old"), feed_server.url("/new")
    state = FeedState(url=old)
    for hit in range(1, RSS.redirect_threshold):
        result = await poll(client, state)
        assert result.outcome == "updated" and len(result.items) == 3  # items still processed
        assert result.state.url == old
        assert (result.state.redirect_to, result.state.redirect_hits) == (new, hit)
        state = result.state
    result = await poll(client, state)
    assert result.state.url == new
    assert result.state.redirect_to is None and result.state.redirect_hits == 0
    assert any("moved permanently" in w for w in result.warnings)


@pytest.mark.parametrize("status", [302, 307])
async def test_temporary_redirect_never_moves_url(
    feed_server: FeedServer, client: httpx.AsyncClient, status: int
) -> None:
    feed_server.route("/old", Reply.redirect(status, "/new"))
    feed_server.route("/new", Reply(body=rss()))
    state = FeedState(url=feed_server.url("/old"))
    for _ in range(RSS.redirect_threshold + 2):
        result = await poll(client, state)
        assert result.outcome == "updated" and result.items
        state = result.state
    assert state.url == feed_server.url("/old")
    assert state.redirect_hits == 0


async def test_interrupted_redirect_streak_starts_over(
    feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    feed_server.route(
        "/old",
        [
            Reply.redirect(301, "/new"),
            Reply.redirect(301, "/new"),
            Reply(body=rss()),  # a poll without the redirect breaks the streak
            Reply.redirect(301, "/new"),
        ],
    )
    feed_server.route("/new", Reply(body=rss()))
    state = FeedState(url=feed_server.url("/old"))
    hits = []
    for _ in range(4):
        state = (await poll(client, state)).state
        hits.append(state.redirect_hits)
    assert hits == [1, 2, 0, 1]
    assert state.url == feed_server.url("/old")


async def test_gone_disables_the_feed(feed_server: FeedServer, client: httpx.AsyncClient) -> None:
    feed_server.route("/gone", Reply(status=410, body=b"gone", content_type="text/plain"))
    result = await poll(client, FeedState(url=feed_server.url("/gone")))
    assert result.outcome == "gone"
    assert result.state.disabled_reason == "gone (410)"
    assert result.state.next_check_at is None
    again = await poll(client, result.state)
    assert again.outcome == "disabled"
    assert len(feed_server.requests_for("/gone")) == 1


@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize("form", ["seconds", "http-date"])
async def test_retry_after_is_honoured(
    feed_server: FeedServer, client: httpx.AsyncClient, status: int, form: str
) -> None:
    wait = timedelta(hours=5)
    value = (
        str(int(wait.total_seconds()))
        if form == "seconds"
        else format_datetime(NOW + wait, usegmt=True)
    )
    feed_server.route("/busy", Reply(status=status, headers={"Retry-After": value}))
    result = await poll(client, FeedState(url=feed_server.url("/busy")))
    assert result.outcome == "error" and result.transient
    assert result.state.next_check_at == NOW + wait  # longer than the first backoff (15 min)
    assert result.state.error_count == 1 and result.state.first_error_at == NOW
    assert result.state.last_status == status


async def test_slow_server_is_a_transient_error_with_backoff(
    feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    feed_server.route("/slow", Reply(body=rss(), drip_interval=0.3, drip_size=64))
    result = await poll(client, FeedState(url=feed_server.url("/slow")))
    assert result.outcome == "error" and result.transient
    assert "timed out" in (result.error or "")
    assert result.state.error_count == 1
    delay = (result.state.next_check_at or NOW) - NOW
    assert timedelta(seconds=RSS.backoff_base * (1 - RSS.backoff_jitter)) <= delay
    assert delay <= timedelta(seconds=RSS.backoff_base)


async def test_oversized_and_endless_bodies_fail_permanently(
    feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    feed_server.route(
        "/big", Reply(body=b"<rss>" + b" " * 300_000 + b"</rss>", declare_length=False)
    )
    feed_server.route("/endless", Reply(endless=True))
    for path in ("/big", "/endless"):
        result = await poll(client, FeedState(url=feed_server.url(path)))
        assert result.outcome == "error" and not result.transient
        assert "cap" in (result.error or "")


async def test_gzip_feed(feed_server: FeedServer, client: httpx.AsyncClient) -> None:
    feed_server.route("/gz", Reply(body=rss(entries=5), gzip=True))
    result = await poll(client, FeedState(url=feed_server.url("/gz")))
    assert result.outcome == "updated" and len(result.items) == 5
    assert "gzip" in feed_server.requests_for("/gz")[0].headers["accept-encoding"]


async def test_header_charset_beats_xml_declaration(
    feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    body = (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Caf\u00e9</title>'
        "<item><title>Cr\u00e8me</title><link>http://e/1</link></item></channel></rss>"
    ).encode("latin-1")
    feed_server.route(
        "/latin", Reply(body=body, content_type="application/rss+xml; charset=ISO-8859-1")
    )
    result = await poll(client, FeedState(url=feed_server.url("/latin")))
    assert result.outcome == "updated" and result.warnings == ()
    assert result.state.title == "Caf\u00e9"
    assert result.items[0].title == "Cr\u00e8me"


async def test_redirect_loop_is_an_error(
    feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    feed_server.route("/a", Reply.redirect(301, "/b"))
    feed_server.route("/b", Reply.redirect(301, "/a"))
    result = await poll(client, FeedState(url=feed_server.url("/a")))
    assert result.outcome == "error" and not result.transient
    assert "loop" in (result.error or "")
    assert result.state.url == feed_server.url("/a")


async def test_bozo_feed_with_entries_is_a_warning(
    feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    broken = b'<rss version="2.0"><channel><title>B</title><item><title>A & B</title><link>http://e/1</link></item>'
    feed_server.route("/bozo", Reply(body=broken))
    result = await poll(client, FeedState(url=feed_server.url("/bozo")))
    assert result.outcome == "updated" and len(result.items) == 1
    assert any("malformed" in w for w in result.warnings)


async def test_not_a_feed_is_an_error(feed_server: FeedServer, client: httpx.AsyncClient) -> None:
    feed_server.route(
        "/page", Reply(body=b"<html><body>Hi</body></html>", content_type="text/html")
    )
    result = await poll(client, FeedState(url=feed_server.url("/page")))
    assert result.outcome == "error" and not result.transient
    assert result.state.last_status == 200


async def test_not_found_backs_off_then_recovers(
    feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    feed_server.route("/flaky", [Reply(status=404), Reply(status=500), Reply(body=rss())])
    state = FeedState(url=feed_server.url("/flaky"))
    first = await poll(client, state)
    assert first.outcome == "error" and not first.transient and first.error == "HTTP 404"
    second = await poll(client, first.state, now=NOW + timedelta(hours=1))
    assert second.outcome == "error" and second.transient
    assert second.state.error_count == 2 and second.state.first_error_at == NOW
    third = await poll(client, second.state, now=NOW + timedelta(hours=2))
    assert third.outcome == "updated"
    assert third.state.error_count == 0 and third.state.first_error_at is None
    assert third.state.last_error is None


async def test_feed_failing_for_thirty_days_is_disabled_with_reason(
    feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    feed_server.route("/dead", Reply(status=500))
    state = FeedState(
        url=feed_server.url("/dead"),
        error_count=40,
        first_error_at=NOW - timedelta(days=RSS.disable_after_days),
    )
    result = await poll(client, state)
    assert result.outcome == "disabled"
    assert result.state.disabled_reason and result.state.disabled_reason.startswith("failing since")
    assert result.state.next_check_at is None


async def test_json_feed_over_http(feed_server: FeedServer, client: httpx.AsyncClient) -> None:
    doc = {
        "version": "https://jsonfeed.org/version/1",
        "title": "J",
        "items": [{"id": "x", "url": "http://e/x", "content_text": "hello"}],
    }
    feed_server.route(
        "/feed.json",
        Reply(body=json.dumps(doc).encode(), content_type="application/feed+json"),
    )
    result = await poll(client, FeedState(url=feed_server.url("/feed.json")))
    assert result.outcome == "updated"
    assert result.items[0].guid == "x" and result.items[0].text == "hello"


async def test_unknown_rhythm_uses_configured_default_interval(
    feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    feed_server.route("/one", Reply(body=rss(entries=1)))
    settings = RssSettings(default_interval=5400)
    result = await poll_feed(
        client, FeedState(url=feed_server.url("/one")), http=HTTP, rss=settings, now=NOW
    )
    assert result.state.interval_seconds == 5400
    assert result.state.next_check_at == NOW + timedelta(seconds=5400)
    # Once the feed has been read, its own interval carries over.
    again = await poll_feed(client, result.state, http=HTTP, rss=RSS, now=NOW, force=True)
    assert again.state.interval_seconds == 5400


async def test_feeds_are_parsed_in_worker_threads_under_the_limiter(
    feed_server: FeedServer, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    feed_server.route("/feed", Reply(body=rss(entries=3)))
    feed_server.route("/broken", Reply(body=b"\x00\x01 not a feed at all \xff"))
    threads: list[int] = []
    real_parse = rss_module.parse_feed

    def recording_parse(*args: Any, **kwargs: Any) -> ParsedFeed:
        threads.append(threading.get_ident())
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(rss_module, "parse_feed", recording_parse)
    limiter = anyio.CapacityLimiter(1)
    holder = object()
    await limiter.acquire_on_behalf_of(holder)
    results: dict[str, PollResult] = {}

    async def run(path: str) -> None:
        results[path] = await poll_feed(
            client,
            FeedState(url=feed_server.url(path)),
            http=HTTP,
            rss=RSS,
            now=NOW,
            parse_limiter=limiter,
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "/feed")
        tg.start_soon(run, "/broken")
        with anyio.fail_after(10):
            while limiter.statistics().tasks_waiting < 2:  # both fetched, both wait to parse
                await anyio.sleep(0.01)
        # The event loop is free meanwhile (this test runs on it): no parse has started.
        assert threads == [] and results == {}
        limiter.release_on_behalf_of(holder)
    assert results["/feed"].outcome == "updated" and len(results["/feed"].items) == 3
    # A parse error in the thread still comes back as a result, not an exception.
    assert results["/broken"].outcome == "error" and results["/broken"].error
    assert len(threads) == 2 and threading.get_ident() not in threads
