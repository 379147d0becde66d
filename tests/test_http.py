"""signaldesk.sources.http against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
import time
from datetime import UTC, datetime

import anyio
import pytest

from signaldesk.sources.errors import FetchError, ResponseTooLarge, TooManyRedirects
from signaldesk.sources.http import (
    FetchResponse,
    HostLimiter,
    build_client,
    fetch,
    is_transient_status,
    parse_max_age,
    parse_retry_after,
)
from signaldesk.sources.settings import HttpSettings
from tests.feedserver import FeedServer, RecordedRequest, Reply, feed_server

__all__ = ["feed_server"]

pytestmark = pytest.mark.anyio

FAST = HttpSettings(total_timeout=1.5, connect_timeout=1.0, max_bytes=100_000)


async def test_plain_get_sends_honest_user_agent(feed_server: FeedServer) -> None:
    feed_server.route("/a", Reply(body=b"hello", headers={"X-Thing": "1"}))
    async with build_client(FAST) as client:
        response = await fetch(client, feed_server.url("/a"), settings=FAST)
    assert response.status == 200
    assert response.body == b"hello"
    assert response.headers["x-thing"] == "1"  # case-insensitive
    assert response.redirects == ()
    sent = feed_server.requests_for("/a")[0].headers
    assert sent["user-agent"] == FAST.user_agent
    assert "gzip" in sent["accept-encoding"]


async def test_gzip_body_is_decoded(feed_server: FeedServer) -> None:
    payload = b"<rss>" + b"x" * 5000 + b"</rss>"
    feed_server.route("/gz", Reply(body=payload, gzip=True))
    async with build_client(FAST) as client:
        response = await fetch(client, feed_server.url("/gz"), settings=FAST)
    assert response.body == payload


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body=b"x" * 200_000),  # declared Content-Length over the cap
        Reply(body=b"x" * 200_000, declare_length=False),  # chunked, no length
        Reply(endless=True),  # never ends
        Reply(body=b"a" * 5_000_000, gzip=True),  # small on the wire, huge decoded
    ],
    ids=["declared", "chunked", "endless", "gzip-bomb"],
)
async def test_body_over_the_cap_is_refused(feed_server: FeedServer, reply: Reply) -> None:
    feed_server.route("/big", reply)
    async with build_client(FAST) as client:
        with pytest.raises(ResponseTooLarge) as info:
            await fetch(client, feed_server.url("/big"), settings=FAST)
    assert info.value.transient is False


async def test_slow_drip_hits_the_total_deadline(feed_server: FeedServer) -> None:
    # One byte every 0.2 s: each read is quick enough for a read timeout, so only the
    # overall deadline can stop it.
    feed_server.route("/drip", Reply(body=b"x" * 1000, drip_interval=0.2))
    settings = HttpSettings(total_timeout=1.0, connect_timeout=1.0)
    started = time.monotonic()
    async with build_client(settings) as client:
        with pytest.raises(FetchError) as info:
            await fetch(client, feed_server.url("/drip"), settings=settings)
    assert info.value.transient is True
    assert time.monotonic() - started < 3.0


async def test_server_that_never_answers_times_out(feed_server: FeedServer) -> None:
    feed_server.route("/slow", Reply(body=b"late", delay=30))
    settings = HttpSettings(total_timeout=0.5, connect_timeout=0.5)
    async with build_client(settings) as client:
        with pytest.raises(FetchError) as info:
            await fetch(client, feed_server.url("/slow"), settings=settings)
    assert info.value.transient is True


async def test_redirects_are_followed_and_recorded(feed_server: FeedServer) -> None:
    feed_server.route("/old", Reply.redirect(301, "/middle"))
    feed_server.route("/middle", Reply.redirect(302, feed_server.url("/new")))
    feed_server.route("/new", Reply(body=b"here"))
    async with build_client(FAST) as client:
        response = await fetch(client, feed_server.url("/old"), settings=FAST)
    assert response.url == feed_server.url("/new")
    assert response.body == b"here"
    assert response.redirects == (
        (301, feed_server.url("/middle")),
        (302, feed_server.url("/new")),
    )
    # Only the permanent start of the chain says where the resource lives now.
    assert response.permanent_target == feed_server.url("/middle")


async def test_redirect_loop_is_an_error(feed_server: FeedServer) -> None:
    feed_server.route("/a", Reply.redirect(301, "/b"))
    feed_server.route("/b", Reply.redirect(302, "/a"))
    async with build_client(FAST) as client:
        with pytest.raises(TooManyRedirects, match="loop"):
            await fetch(client, feed_server.url("/a"), settings=FAST)


async def test_too_many_redirects(feed_server: FeedServer) -> None:
    for i in range(10):
        feed_server.route(f"/r{i}", Reply.redirect(302, f"/r{i + 1}"))
    async with build_client(FAST) as client:
        with pytest.raises(TooManyRedirects):
            await fetch(client, feed_server.url("/r0"), settings=FAST, max_redirects=3)
    assert len(feed_server.requests) == 4


async def test_connection_refused_is_transient() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago and is closed now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with build_client(FAST) as client:
        with pytest.raises(FetchError) as info:
            await fetch(client, f"http://127.0.0.1:{port}/", settings=FAST)
    assert info.value.transient is True


async def test_bad_url_is_permanent() -> None:
    async with build_client(FAST) as client:
        with pytest.raises(FetchError) as info:
            await fetch(client, "ftp://127.0.0.1/feed", settings=FAST)
    assert info.value.transient is False


async def test_error_statuses_are_returned_not_raised(feed_server: FeedServer) -> None:
    feed_server.route("/e", Reply(status=503, body=b"busy", headers={"Retry-After": "120"}))
    async with build_client(FAST) as client:
        response = await fetch(client, feed_server.url("/e"), settings=FAST)
    assert isinstance(response, FetchResponse)
    assert response.status == 503
    assert response.headers["retry-after"] == "120"


async def test_host_limiter_caps_concurrency_per_host(feed_server: FeedServer) -> None:
    lock = threading.Lock()
    active = peak = 0
    release = threading.Event()

    def slow(request: RecordedRequest) -> Reply:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        release.wait(0.15)  # server-side work; the test waits on the client, not on this
        with lock:
            active -= 1
        return Reply(body=b"ok")

    feed_server.route("/p", slow)
    limiter = HostLimiter(2)
    async with build_client(FAST) as client:

        async def one() -> None:
            await fetch(client, feed_server.url("/p"), settings=FAST, limiter=limiter)

        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(one)
    assert len(feed_server.requests_for("/p")) == 6
    assert peak == 2


def test_retry_after_parsing() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert parse_retry_after("120", now) == 120.0
    assert parse_retry_after("Thu, 01 Jan 2026 13:00:00 GMT", now) == 3600.0
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now) == 0.0  # in the past
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None


def test_max_age_and_status_helpers() -> None:
    assert parse_max_age("public, max-age=600") == 600.0
    assert parse_max_age("no-cache") is None
    assert parse_max_age('max-age="30", s-maxage=90') == 90.0
    assert is_transient_status(503) and is_transient_status(429)
    assert not is_transient_status(404) and not is_transient_status(400)


def test_the_host_breaker_skips_a_host_that_does_not_answer() -> None:
    from signaldesk.sources.errors import FetchError
    from signaldesk.sources.http import HostBreaker

    breaker = HostBreaker()
    slow = "https://slow.example/a"
    breaker.trip(slow, FetchError("timed out", transient=True, cause="timed out"))
    breaker.check(slow)  # one slow answer from a busy host is not enough
    breaker.trip(slow, FetchError("timed out", transient=True, cause="timed out"))
    with pytest.raises(FetchError) as info:
        breaker.check("https://slow.example/b")
    assert info.value.skipped and info.value.cause == "timed out"
    breaker.trip(
        "https://gone.example/x", FetchError("no", transient=True, cause="connection refused")
    )
    with pytest.raises(FetchError):
        breaker.check("https://gone.example/y")
    breaker.trip("https://up.example/x", FetchError("404", transient=False, status=404))
    breaker.check("https://up.example/y")  # it answered: a 404 says nothing of the host
    breaker.check("https://slow.example:8443/a")  # another port is another host
    assert breaker.open_hosts == {"slow.example": "timed out", "gone.example": "connection refused"}
