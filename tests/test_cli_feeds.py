"""`signaldesk feeds …` through the real CLI and a real ledger file."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from click.testing import CliRunner, Result

from signaldesk.pipeline.cli import cli
from signaldesk.pipeline.config import resolve_workspace
from signaldesk.pipeline.errors import FeedRegistryError
from signaldesk.pipeline.intake.feeds import FeedRegistry
from signaldesk.pipeline.ledger.store import open_ledger

OPML = b"""<?xml version="1.0" encoding="UTF-8"?>
<opml version="2.0"><head><title>subs</title></head><body>
<outline text="Tech" title="Tech">
  <outline type="rss" text="Example" title="Example" xmlUrl="https://example.com/feed.xml" htmlUrl="https://example.com/"/>
  <outline type="rss" text="Other" xmlUrl="https://other.example.org/atom"/>
</outline>
<outline type="rss" text="Bad" xmlUrl="ftp://nope.example/feed"/>
</body></opml>"""


def _run(vault: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(
        cli, ["--vault", str(vault), *args], input=input, catch_exceptions=True
    )


def _ok(vault: Path, *args: str) -> Result:
    result = _run(vault, *args)
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_adding_a_sites_page_subscribes_to_the_feed_it_links_to(vault: Path) -> None:
    from datetime import datetime

    from tests.feedserver import FeedServer, Reply
    from tests.intake_data import Entry, rss_document

    def page(head: str) -> Reply:
        body = f"<html><head>{head}</head><body>A blog</body></html>".encode()
        return Reply(body=body, content_type="text/html; charset=utf-8")

    with FeedServer() as server:
        one = Entry("urn:x:1", "First post", server.url("/p/1"), "Hello.", datetime(2026, 1, 2))
        server.route("/feed.xml", Reply(body=rss_document("The blog", server.url("/"), [one])))
        # WordPress puts a JSON alternate that is no feed on every page, before the feed.
        wordpress = (
            '<link rel="alternate" type="application/json" href="/wp-json/wp/v2/pages/2">'
            '<base href="/blog/"><link rel="alternate" type="application/rss+xml" '
            'title="The blog &raquo; Feed" href="../feed.xml">'
        )
        server.route("/blog/", page(wordpress))
        server.route("/gone", page('<link rel="alternate" type="application/atom+xml" href="x">'))
        added = _ok(vault, "feeds", "add", server.url("/blog/")).stdout
        assert added.startswith(f"subscribed to {server.url('/feed.xml')}, found on ")
        assert "(The blog, 1 entry now)" in added
        failed = _run(vault, "feeds", "add", server.url("/gone"))
        assert isinstance(failed.exception, FeedRegistryError)
        assert "feed links cannot be read either: " + server.url("/x") in str(failed.exception)
    [feed] = json.loads(_ok(vault, "feeds", "list", "--json").stdout)
    assert (feed["url"], feed["title"]) == (server.url("/feed.xml"), "The blog")


def test_feed_links_are_read_from_the_head_resolved_and_only_feeds() -> None:
    from signaldesk.sources.feed_discovery import feed_links

    html = (
        b'<html><head><link rel="stylesheet" href="/a.css">'
        b'<link rel="alternate" type="application/atom+xml" href="https://x.example/atom">'
        b'<link rel="alternate" type="application/feed+json" href="feed.json">'
        b'<link rel="alternate" type="application/json" title="JSON Feed" href="/j.json">'
        b'<link rel="alternate" hreflang="de" href="/de/">'
        b'<link rel="alternate" type="application/rss+xml" href="javascript:alert(1)">'
        b'<link rel="alternate" type="application/atom+xml" href="https://x.example/atom">'
        b"</head><body><p>unclosed <b>markup"
    )
    assert feed_links(html, "https://x.example/posts/") == [
        "https://x.example/atom",
        "https://x.example/posts/feed.json",
        "https://x.example/j.json",
    ]
    assert feed_links(b"\xff\xfe<<<not html", "https://x.example/") == []


def test_add_list_remove(vault: Path) -> None:
    _ok(
        vault,
        "feeds",
        "add",
        "https://example.com/feed.xml",
        "--title",
        "Ex",
        "--prior",
        "0.7",
        "--no-full-text",
        "--no-check",
    )
    listed = json.loads(_ok(vault, "feeds", "list", "--json").stdout)
    assert [(f["url"], f["title"], f["prior"], f["full_text"]) for f in listed] == [
        ("https://example.com/feed.xml", "Ex", 0.7, False)
    ]
    table = _ok(vault, "feeds", "list").stdout
    assert "1 feed(s)" in table and "new" in table

    again = _run(vault, "feeds", "add", "https://example.com/feed.xml", "--no-check")
    assert isinstance(again.exception, FeedRegistryError) and "already subscribed" in str(
        again.exception
    )
    bad = _run(vault, "feeds", "add", "example.com/feed")
    assert isinstance(bad.exception, FeedRegistryError)
    prior = _run(vault, "feeds", "add", "https://x.example/f", "--prior", "2")
    assert prior.exit_code == 2  # click rejects it before anything is written

    _ok(vault, "feeds", "remove", "https://example.com/feed.xml")
    assert json.loads(_ok(vault, "feeds", "list", "--json").stdout) == []
    missing = _run(vault, "feeds", "remove", "https://example.com/feed.xml")
    assert isinstance(missing.exception, FeedRegistryError)


def test_import_and_export_opml(vault: Path, tmp_path: Path) -> None:
    source = tmp_path / "subs.opml"
    source.write_bytes(OPML)
    report = json.loads(_ok(vault, "feeds", "import", str(source), "--json").stdout)
    assert report["added"] == ["https://example.com/feed.xml", "https://other.example.org/atom"]
    assert report["invalid"] == ["ftp://nope.example/feed"]
    again = json.loads(_ok(vault, "feeds", "import", str(source), "--json").stdout)
    assert again["added"] == [] and len(again["already_present"]) == 2

    exported = _ok(vault, "feeds", "export").stdout
    assert "https://example.com/feed.xml" in exported and "<opml" in exported
    target = tmp_path / "out" / "feeds.opml"
    _ok(vault, "feeds", "export", str(target))
    assert b"https://other.example.org/atom" in target.read_bytes()
    listed = json.loads(_ok(vault, "feeds", "list", "--json").stdout)
    assert {f["category"] for f in listed} == {"Tech"}


def test_enable_a_disabled_feed(vault: Path) -> None:
    _ok(vault, "feeds", "add", "https://example.com/feed.xml", "--no-check")
    workspace = resolve_workspace(vault)

    async def disable() -> None:
        async with open_ledger(workspace) as ledger:
            registry = FeedRegistry(ledger)
            record = await registry.get("https://example.com/feed.xml")
            assert record is not None
            state = dataclasses.replace(
                record.state, disabled_reason="failing for 14 days", error_count=30
            )
            async with ledger.transaction() as conn:
                await registry.save_state(conn, record.url, state)

    anyio.run(disable)
    [feed] = json.loads(_ok(vault, "feeds", "list", "--json").stdout)
    assert feed["disabled_reason"] == "failing for 14 days"
    assert "disabled" in _ok(vault, "feeds", "list").stdout
    _ok(vault, "feeds", "enable", "https://example.com/feed.xml")
    [feed] = json.loads(_ok(vault, "feeds", "list", "--json").stdout)
    assert feed["disabled_reason"] is None and feed["error_count"] == 0
    unknown = _run(vault, "feeds", "enable", "https://nope.example/")
    assert isinstance(unknown.exception, FeedRegistryError)


def test_add_checks_the_feed_once(vault: Path) -> None:
    import socket

    from tests.feedserver import FeedServer, Reply
    from tests.intake_data import rss_document

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}/feed.xml"  # nothing listens
    with FeedServer() as server:
        server.route("/feed.xml", Reply(body=rss_document("Real feed", server.url("/"), [])))
        server.route(
            "/page",
            Reply(body=b"<html><body><h1>A blog</h1></body></html>", content_type="text/html"),
        )
        for url, reason in (
            (server.url("/missing.xml"), "HTTP 404"),
            (server.url("/page"), "a web page that links to no RSS, Atom or JSON feed"),
            (dead, "refused"),
        ):
            result = _run(vault, "feeds", "add", url)
            assert isinstance(result.exception, FeedRegistryError), url
            assert reason in str(result.exception) and "--no-check" in str(result.exception)
        assert json.loads(_ok(vault, "feeds", "list", "--json").stdout) == []
        added = _ok(vault, "feeds", "add", server.url("/feed.xml")).stdout
        assert "subscribed to" in added and "Real feed" in added
        _ok(vault, "feeds", "add", dead, "--no-check")
    listed = {
        f["url"]: f["title"] for f in json.loads(_ok(vault, "feeds", "list", "--json").stdout)
    }
    assert listed == {server.url("/feed.xml"): "Real feed", dead: None}


def test_a_refused_feed_says_whether_it_was_unreachable_or_unreadable(
    vault: Path, shared_data: Path
) -> None:
    # Trigger: "not subscribed: U is not a readable feed (not a readable feed: U
    # (SAXParseException: ...))" named the URL twice, and a 404 or a timeout was called
    # "not a readable feed" too, though nothing had been read.
    from tests.feedserver import FeedServer, Reply

    junk = (shared_data / "feeds/rss-parser_tests/input/unrecognized.rss").read_bytes()
    with FeedServer() as server:
        server.route("/junk.rss", Reply(body=junk))
        junk_url, missing = server.url("/junk.rss"), server.url("/missing.xml")
        refusals = [_run(vault, "feeds", "add", u).exception for u in (junk_url, missing)]
    assert all(isinstance(e, FeedRegistryError) for e in refusals)
    unreadable, unreachable = (e.message for e in refusals if isinstance(e, FeedRegistryError))
    assert unreadable.startswith(f"not subscribed: {junk_url} is not a readable feed (")
    assert unreadable.count(junk_url) == 1 and "SAXParseException" in unreadable
    assert unreachable == f"not subscribed: {missing} could not be fetched (HTTP 404)"


def test_feeds_list_says_a_feed_whose_time_has_come_is_polled_at_the_next_scan(
    vault: Path,
) -> None:
    _ok(vault, "feeds", "add", "https://example.com/feed.xml", "--no-check")
    workspace = resolve_workspace(vault)

    async def due_yesterday() -> str:
        async with open_ledger(workspace) as ledger:
            registry = FeedRegistry(ledger)
            record = await registry.get("https://example.com/feed.xml")
            assert record is not None
            yesterday = datetime.now(UTC) - timedelta(days=1)
            state = dataclasses.replace(record.state, next_check_at=yesterday)
            async with ledger.transaction() as conn:
                await registry.save_state(conn, record.url, state)
        return yesterday.astimezone().strftime("%Y-%m-%d %H:%M")

    gone_by = anyio.run(due_yesterday)
    table = _ok(vault, "feeds", "list").stdout
    assert "next scan" in table and gone_by not in table
