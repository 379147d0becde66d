"""The staged intake pipeline against a real HTTP server on 127.0.0.1 and real files."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from signaldesk.items import Item
from signaldesk.pipeline.config import Config, Workspace
from signaldesk.pipeline.intake.feeds import FeedRegistry
from signaldesk.pipeline.intake.run import run_scan, scan
from signaldesk.pipeline.intake.summary import ScanStats, problem_lines
from signaldesk.pipeline.ledger.store import item_identity, open_ledger, utcnow
from signaldesk.sources.http import build_client
from tests.feedserver import FeedServer, Reply
from tests.intake_data import (
    Entry,
    article_html,
    article_text,
    clipping_note,
    newsletter_eml,
    rss_document,
    serve_feeds,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[FeedServer]:
    with FeedServer() as s:
        yield s


# The ledger every test of this module runs on: each test runs once per backend.
_LEDGER: dict[str, dict[str, Any]] = {}


@pytest.fixture(autouse=True, params=["sqlite", "postgres"])
def ledger_backend(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.param == "postgres":
        settings = request.getfixturevalue("postgres")
        _LEDGER.update(pipeline={"ledger_backend": "postgres"}, postgres={"dsn": settings.dsn})
    yield
    _LEDGER.clear()


def _workspace(vault: Path, **sections: dict[str, Any]) -> Workspace:
    data: dict[str, dict[str, Any]] = {
        "http": {"per_host": 8, "total_timeout": 10.0, "connect_timeout": 5.0},
        "pipeline": {"retry_backoff": 0.01, "feed_concurrency": 4, "extract_concurrency": 4},
    }
    for name, values in _LEDGER.items():
        data.setdefault(name, {}).update(values)
    for name, values in sections.items():
        data.setdefault(name, {}).update(values)
    return Workspace(vault=vault, config=Config.model_validate(data), config_path=None)


async def _subscribe(ws: Workspace, *urls: str, **kw: Any) -> None:
    async with open_ledger(ws) as ledger:
        registry = FeedRegistry(ledger)
        for url in urls:
            await registry.add(url, **kw)


async def _scan(ws: Workspace, **kw: Any) -> ScanStats:
    async with open_ledger(ws) as ledger, build_client(ws.config.http) as client:
        return await run_scan(ws, ledger, client, **kw)


async def _entries(ws: Workspace, **kw: Any) -> list[Any]:
    async with open_ledger(ws) as ledger:
        return await ledger.entries(**kw)


async def test_scan_then_unchanged_rescan_gets_304s_and_adds_nothing(
    vault: Path, server: FeedServer
) -> None:
    ws = _workspace(vault)
    feeds = serve_feeds(server, 3, 5)
    await _subscribe(ws, *feeds.urls)
    handed: list[str] = []

    async def handoff(item_id: str) -> None:
        handed.append(item_id)

    seen: list[int] = []
    first = await _scan(ws, handoff=handoff, on_progress=lambda s: seen.append(s.feeds_polled))
    assert seen and seen[-1] == 3 and seen == sorted(seen)
    assert first.tally("rss").new == 15
    assert first.feeds_polled == 3 and first.feeds_failed == 0
    assert sorted(handed) == sorted(first.new_ids)
    pending = await _entries(ws, status="pending")
    assert {e.item.guid for e in pending} == set(feeds.guids)

    later = utcnow() + timedelta(days=3)  # every feed is due again
    second = await _scan(ws, now=lambda: later)
    assert second.feeds_polled == 3
    assert second.feeds_not_modified == 3
    assert second.totals.new == second.totals.duplicate == 0
    for url in feeds.urls:
        path = url.removeprefix(server.base_url)
        last = server.requests_for(path)[-1]
        assert (
            last.headers["if-none-match"] == f'"feed-{path.split("/")[-1].removesuffix(".xml")}-v1"'
        )
    assert len(await _entries(ws)) == 15


async def test_nothing_due_polls_nothing(vault: Path, server: FeedServer) -> None:
    ws = _workspace(vault)
    feeds = serve_feeds(server, 1, 2)
    await _subscribe(ws, *feeds.urls)
    await _scan(ws)
    before = len(server.requests)
    stats = await _scan(ws)
    assert stats.feeds_due == 0 and len(server.requests) == before


async def test_ill_formed_feeds_never_crash_the_scan(
    vault: Path, server: FeedServer, shared_data: Path
) -> None:
    ws = _workspace(vault)
    good = serve_feeds(server, 1, 3)
    illformed = sorted((shared_data / "feeds" / "feedparser_tests" / "illformed").rglob("*.xml"))
    assert illformed
    routes = {
        "/garbage.xml": Reply(body=b"\x00\x01\x02 not a feed at all \xff\xfe"),
        "/html.xml": Reply(
            body=b"<html><body><p>Hello</p></body></html>", content_type="text/html"
        ),
        "/truncated.xml": Reply(body=rss_document("T", "http://x/", [])[:60]),
        "/error.xml": Reply(status=500, body=b"boom"),
        "/missing.xml": Reply(status=404, body=b"no"),
        "/empty.xml": Reply(body=b""),
    }
    for index, sample in enumerate(illformed):
        routes[f"/illformed/{index}.xml"] = Reply(body=sample.read_bytes())
    for route, reply in routes.items():
        server.route(route, reply)
    await _subscribe(ws, *good.urls, *(server.url(p) for p in routes))
    stats = await _scan(ws)
    assert stats.feeds_polled == len(routes) + 1
    failing = {p.url.removeprefix(server.base_url) for p in stats.feed_problems}
    assert {"/garbage.xml", "/error.xml", "/missing.xml"} <= failing
    assert all(p.error for p in stats.feed_problems)
    pending = await _entries(ws, status="pending")
    assert set(good.guids) <= {e.item.guid for e in pending}
    # Some ill-formed feeds (bozo) still yield their entries: a warning, not a failure.
    assert len(pending) > len(good.guids)


async def test_feed_clipping_and_newsletter_of_one_article_are_one_item(
    vault: Path, server: FeedServer
) -> None:
    ws = _workspace(vault)
    body = article_text(42)
    article_url = server.url("/posts/structured-concurrency")
    server.route(
        "/posts/structured-concurrency",
        Reply(body=article_html("SC", body), content_type="text/html"),
    )
    entry = Entry(
        guid="urn:test:sc",
        title="Notes on structured concurrency",
        link=article_url,
        description=body.split("\n\n")[0][:150] + " …",  # a teaser: the page is fetched
        published=utcnow(),
    )
    server.route("/feed.xml", Reply(body=rss_document("Blog", server.url("/"), [entry])))
    await _subscribe(ws, server.url("/feed.xml"))
    clipping_note(
        vault / "Clippings",
        "Notes on structured concurrency.md",
        title="Notes on structured concurrency",
        source=article_url + "?utm_source=twitter&utm_medium=social",
        body=body,
    )
    newsletter_eml(
        vault / "00-inbox" / "newsletters",
        "digest.eml",
        subject="This week: structured concurrency",
        view_online=article_url.replace("127.0.0.1", "127.0.0.1") + "?utm_campaign=weekly#top",
        body="Hello readers!\n\n" + body,
    )
    stats = await _scan(ws)
    assert stats.totals.new == 1, stats.tallies
    assert stats.totals.duplicate == 2
    [original] = await _entries(ws, status="pending")
    async with open_ledger(ws) as ledger:
        copies = await ledger.duplicates_of(original.id)
    assert {original.item.source_kind, *(c.item.source_kind for c in copies)} == {
        "rss",
        "clipper",
        "newsletter",
    }


async def test_transient_error_retried_permanent_error_kept_as_teaser(
    vault: Path, server: FeedServer
) -> None:
    ws = _workspace(vault)
    body = article_text(7)
    server.route(
        "/a/flaky",
        [
            Reply(status=503, body=b"busy"),
            Reply(body=article_html("Flaky", body), content_type="text/html"),
        ],
    )
    server.route("/a/gone", Reply(status=404, body=b"no such page", content_type="text/plain"))
    entries = [
        Entry("urn:t:flaky", "Flaky page", server.url("/a/flaky"), "Short teaser …", utcnow()),
        Entry("urn:t:gone", "Gone page", server.url("/a/gone"), "", utcnow()),
    ]
    server.route("/feed.xml", Reply(body=rss_document("B", server.url("/"), entries)))
    await _subscribe(ws, server.url("/feed.xml"))
    stats = await _scan(ws)
    assert len(server.requests_for("/a/flaky")) == 2
    pending = {e.item.guid: e for e in await _entries(ws, status="pending")}
    flaky, gone = pending["urn:t:flaky"], pending["urn:t:gone"]
    assert not flaky.item.teaser
    assert flaky.item.extra["full_text"] == "fetched"
    assert body.split("\n\n")[-1][:80] in flaky.item.text
    # A 404 is not retried, and the entry goes on with what the feed had (its title).
    assert len(server.requests_for("/a/gone")) == 1
    assert gone.item.teaser
    assert gone.item.extra["full_text_cause"] == "HTTP 404"
    assert "full_text_after" not in gone.item.extra  # never tried again
    assert stats.tally("rss").parked == 0 and stats.tally("rss").teasers == 1


async def test_an_unfetchable_page_never_holds_its_entry_back(
    vault: Path, server: FeedServer
) -> None:
    ws = _workspace(vault, pipeline={"retry_attempts": 2, "max_attempts": 3})
    server.route("/a/down", Reply(status=503, body=b"down"))
    entries = [Entry("urn:t:down", "Down page", server.url("/a/down"), "Teaser only …", utcnow())]
    server.route("/feed.xml", Reply(body=rss_document("B", server.url("/"), entries)))
    await _subscribe(ws, server.url("/feed.xml"))
    handed: list[str] = []

    async def handoff(item_id: str) -> None:
        handed.append(item_id)

    start = utcnow()
    stats = await _scan(ws, handoff=handoff, now=lambda: start)
    # Tried twice in the scan (503 may pass), then on at once with the feed's text.
    assert len(server.requests_for("/a/down")) == 2
    assert stats.totals.new == 1 and stats.tally("rss").teasers == 1 and handed
    [kept] = await _entries(ws, status="pending")
    assert kept.item.teaser and kept.item.text.startswith("Teaser only")
    assert kept.item.extra["full_text_cause"] == "HTTP 503"
    assert [g.cause for g in stats.problems.values()] == ["HTTP 503"]
    # Not due again within the backoff: the next scan leaves the page alone.
    await _scan(ws, now=lambda: start + timedelta(minutes=5))
    assert len(server.requests_for("/a/down")) == 2
    # Later the page is up: it is fetched, stored, and handed to triage again.
    body = article_text(21)
    server.route("/a/down", Reply(body=article_html("Down page", body), content_type="text/html"))
    handed.clear()
    later = await _scan(ws, handoff=handoff, now=lambda: start + timedelta(minutes=16))
    assert later.tally("rss").refetched == 1 and handed == [kept.id]
    [fetched] = await _entries(ws, status="pending")
    assert not fetched.item.teaser and fetched.item.extra["full_text"] == "fetched"
    assert body.split("\n\n")[-1][:80] in fetched.item.text
    # Nothing is due any more.
    await _scan(ws, now=lambda: start + timedelta(days=2))
    assert len(server.requests_for("/a/down")) == 3


async def test_a_page_that_never_comes_is_tried_max_attempts_times(
    vault: Path, server: FeedServer
) -> None:
    ws = _workspace(vault, pipeline={"retry_attempts": 1, "max_attempts": 3})
    server.route("/a/down", Reply(status=503, body=b"down"))
    entries = [Entry("urn:t:down", "Down page", server.url("/a/down"), "Teaser only …", utcnow())]
    server.route("/feed.xml", Reply(body=rss_document("B", server.url("/"), entries)))
    await _subscribe(ws, server.url("/feed.xml"))
    start = utcnow()
    for day in range(6):
        await _scan(ws, now=lambda day=day: start + timedelta(days=day))
    assert len(server.requests_for("/a/down")) == 3
    [kept] = await _entries(ws, status="pending")
    assert kept.item.teaser and kept.item.extra["full_text_attempts"] == 3
    assert "full_text_after" not in kept.item.extra


async def test_a_silent_host_costs_one_timeout_per_scan_not_one_per_page(
    vault: Path, server: FeedServer
) -> None:
    ws = _workspace(
        vault,
        http={"per_host": 2, "page_first_byte_timeout": 0.3},
        pipeline={"extract_concurrency": 4},
    )
    server.route("/a/silent", Reply(delay=60, body=b"never sent"))  # accepts, never answers
    entries = [
        Entry(f"urn:s:{i}", f"Silent {i}", server.url(f"/a/silent?n={i}"), "A teaser …", utcnow())
        for i in range(10)
    ]
    server.route("/feed.xml", Reply(body=rss_document("S", server.url("/"), entries)))
    await _subscribe(ws, server.url("/feed.xml"))
    stats = await _scan(ws)
    # Two timeouts close the host for the scan: its two slots' requests (and at most one
    # that took a slot freed in between) were sent, the other pages were not.
    sent = len(server.requests_for("/a/silent"))
    assert 2 <= sent <= 3
    [group] = stats.problems.values()
    assert (group.what, group.cause, group.count, group.skipped) == (
        "article page",
        "timed out",
        10,
        10 - sent,
    )
    # One line for the ten, naming the first page so the person can look at one.
    assert problem_lines(stats.problems.values()) == [
        f"article page: timed out at {group.host} (10 pages, {10 - sent} of them not tried); "
        f"e.g. {group.example}"
    ]
    assert "/a/silent?n=" in group.example
    pending = await _entries(ws, status="pending")
    assert len(pending) == 10 and all(e.item.teaser for e in pending)
    # The breaker lasts one scan: the next (when the pages are due) asks the host again.
    await _scan(ws, now=lambda: utcnow() + timedelta(hours=1))
    assert 4 <= len(server.requests_for("/a/silent")) <= 2 * sent


async def test_per_feed_full_text_opt_out(vault: Path, server: FeedServer) -> None:
    ws = _workspace(vault)
    feeds = serve_feeds(server, 1, 4, teaser_every=1)
    await _subscribe(ws, *feeds.urls, full_text=False)
    await _scan(ws)
    assert all(not server.requests_for(p) for p in feeds.article_paths)
    assert len(await _entries(ws, status="pending")) == 4


async def test_items_left_mid_stage_are_resumed(vault: Path) -> None:
    ws = _workspace(vault)
    stranded = [
        Item(
            source_kind="tool_output",
            source_id="drop",
            title=f"t{i}",
            text=article_text(i),
            guid=f"tool:{i}",
        )
        for i in range(3)
    ]
    async with open_ledger(ws) as ledger:
        await ledger.record(stranded[:2], status="fetched")
        [third] = await ledger.record(stranded[2:], status="fetched")
        await ledger.advance(third, "extracted")
    stats = await scan(ws, sources=["tool_output"])
    assert stats.resumed == 3 and stats.totals.new == 3
    pending = await _entries(ws, status="pending")
    assert {e.id for e in pending} == {item_identity(i) for i in stranded}


async def test_unreadable_drop_files_are_parked_once(vault: Path) -> None:
    ws = _workspace(vault)
    drop = vault / "00-inbox" / "tool-output"
    drop.mkdir(parents=True, exist_ok=True)
    (drop / "binary.md").write_bytes(b"\x00\x01\x02\x03" * 100)
    (drop / "fine.md").write_text("# Fine\n\n" + article_text(3), encoding="utf-8")
    first = await scan(ws, sources=["tool_output"])
    assert (first.tally("tool_output").new, first.tally("tool_output").parked) == (1, 1)
    second = await scan(ws, sources=["tool_output"])
    assert second.totals.new == second.totals.parked == 0
    [parked] = await _entries(ws, status="parked")
    assert parked.last_error and "binary" in parked.last_error
    # Fixed on disk: the parked row goes, the file becomes an item.
    (drop / "binary.md").write_text("# Repaired\n\n" + article_text(4), encoding="utf-8")
    third = await scan(ws, sources=["tool_output"])
    assert third.totals.new == 1
    assert await _entries(ws, status="parked") == []


async def test_a_clipping_read_again_or_edited_before_triage_stays_one_item(vault: Path) -> None:
    ws = _workspace(vault)
    clip = clipping_note(
        vault / "Clippings",
        "Same name.md",
        title="A clipped page",
        source="https://example.com/page",
        body=article_text(11),
    )
    first = await scan(ws, sources=["clipper"])
    again = await scan(ws, sources=["clipper"])
    assert (first.totals.new, again.totals.new, again.totals.duplicate) == (1, 0, 0)
    # The person fixes the clipping where it is before any triage ran.
    clip.write_text(clip.read_text(encoding="utf-8") + "\nMy own remark.\n", encoding="utf-8")
    edited = await scan(ws, sources=["clipper"])
    assert edited.totals.new == edited.totals.duplicate == 0
    [entry] = await _entries(ws)
    assert entry.status == "pending" and entry.item.guid == "clipper:Clippings/Same name.md"


async def test_feed_parses_share_the_scans_limiter(vault: Path, server: FeedServer) -> None:
    ws = _workspace(vault)
    feeds = serve_feeds(server, 3, 4)
    await _subscribe(ws, *feeds.urls)
    limiter = anyio.CapacityLimiter(1)
    holder = object()
    await limiter.acquire_on_behalf_of(holder)
    seen: list[int] = []
    done: list[ScanStats] = []

    async def run() -> None:
        done.append(
            await _scan(ws, parse_limiter=limiter, on_progress=lambda s: seen.append(s.items_seen))
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(20):
            while limiter.statistics().tasks_waiting < 3:  # every feed fetched, none parsed
                await anyio.sleep(0.01)
        assert not done and all(n == 0 for n in seen)
        limiter.release_on_behalf_of(holder)
    [stats] = done
    assert stats.tally("rss").new == 12 and stats.feeds_failed == 0
