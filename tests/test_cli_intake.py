"""`signaldesk scan`, `items` and `capture` through the real CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pipeline.cli import cli
from pipeline.errors import IntakeError
from tests.feedserver import FeedServer
from tests.intake_data import article_text, clipping_note, serve_feeds

SETTLED = {"pending", "filed", "rejected"}


@pytest.fixture
def server() -> Iterator[FeedServer]:
    with FeedServer() as s:
        yield s


def _run(vault: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args], input=input)


def _ok(vault: Path, *args: str, input: str | None = None) -> Result:
    result = _run(vault, *args, input=input)
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_scan_json_then_items(vault: Path, server: FeedServer) -> None:
    feeds = serve_feeds(server, 2, 3)
    for url in feeds.urls:
        _ok(vault, "feeds", "add", url)
    server.route("/broken.xml", [])  # unrouted paths answer 404
    _ok(vault, "feeds", "add", server.url("/broken.xml"))
    clipping_note(
        vault / "Clippings",
        "clip.md",
        title="A clip",
        source="https://example.com/x",
        body=article_text(9),
    )

    summary = json.loads(_ok(vault, "scan", "--json").stdout)
    assert summary["sources"]["rss"]["new"] == 6
    assert summary["sources"]["clipper"]["new"] == 1
    assert summary["feeds"]["polled"] == 3 and summary["feeds"]["failed"] == 1
    assert [p["url"] for p in summary["feed_problems"]] == [server.url("/broken.xml")]
    assert len(summary["new_ids"]) == 7

    # `scan` hands new items to triage, which may already have filed or rejected them.
    listed = json.loads(_ok(vault, "items", "--json", "--source", "rss").stdout)
    assert {i["guid"] for i in listed} == set(feeds.guids)
    assert {i["status"] for i in listed} <= SETTLED
    assert len(json.loads(_ok(vault, "items", "--json", "--limit", "2").stdout)) == 2
    table = _ok(vault, "items").stdout
    assert "7 item(s)" in table


def test_scan_shows_a_summary_table(vault: Path, server: FeedServer) -> None:
    feeds = serve_feeds(server, 1, 2)
    _ok(vault, "feeds", "add", feeds.urls[0])
    out = _ok(vault, "scan", "--source", "rss").stdout
    assert "Scan finished" in out and "total" in out and "1 polled" in out


def test_capture_argument_and_stdin(vault: Path) -> None:
    result = json.loads(
        _ok(
            vault,
            "capture",
            article_text(5),
            "--title",
            "Agent transcript",
            "--tags",
            "ai, notes",
            "--source",
            "https://example.com/chat?utm_source=x",
            "--json",
        ).stdout
    )
    assert result["new"] == 1
    assert Path(result["path"]).is_file()
    assert Path(result["path"]).parent == vault / "00-inbox" / "tool-output"
    [item] = json.loads(_ok(vault, "items", "--json", "--source", "tool_output").stdout)
    assert item["status"] in SETTLED
    assert (item["title"], item["url"]) == ("Agent transcript", "https://example.com/chat")

    piped = _ok(
        vault, "capture", "-", input="Some text piped in from a script.\nSecond line.\n"
    ).stdout
    assert "1 new" in piped
    # The same text again is the same drop identity: already in the ledger, nothing new.
    same_again = json.loads(_ok(vault, "capture", "--json", input=article_text(5)).stdout)
    assert (same_again["new"], same_again["duplicate"]) == (0, 0)
    assert "already in the ledger" in _ok(vault, "capture", input=article_text(5)).stdout

    empty = _run(vault, "capture", "   ")
    assert isinstance(empty.exception, IntakeError)
