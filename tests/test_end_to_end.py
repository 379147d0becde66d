"""Feeds on 127.0.0.1 and a Clippings folder in, searchable signal notes out: `signaldesk scan`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result

from signaldesk.frontmatter import parse_note
from signaldesk.pipeline.cli import cli
from signaldesk.pipeline.config import Config
from signaldesk.retrieval.retriever import Retriever
from signaldesk.vault import DOMAINS
from tests.conftest import REPO_ROOT
from tests.feedserver import FeedServer, RecordedRequest, Reply
from tests.index_helpers import real_embedder
from tests.intake_data import Entry, article_html, rss_document
from tests.triage_data import ADVISORY, CONFIG_TOML, HOWTO, THIN, clipping, file_list, snapshot

_EPOCH = datetime(2026, 11, 20, tzinfo=UTC)


@pytest.fixture
def server() -> Iterator[FeedServer]:
    with FeedServer() as s:
        yield s


def _serve_feed(server: FeedServer) -> str:
    """A feed with two substantial entries and one piece of clickbait, with ETag support."""
    entries = [
        Entry(
            guid="urn:e2e:advisory",
            title="OpenSSH 7.9p2 fixes CVE-2026-7234",
            link=server.url("/openssh-7.9p2"),
            description=ADVISORY.format(n=7),
            published=_EPOCH,
        ),
        Entry(
            guid="urn:e2e:howto",
            title="How to profile a slow Python service with py-spy",
            link=server.url("/py-spy-howto"),
            description=HOWTO,
            published=_EPOCH + timedelta(hours=1),
        ),
        Entry(
            guid="urn:e2e:thin",
            title="You won't believe these photos",
            link=server.url("/photos"),
            description=THIN,
            published=_EPOCH + timedelta(hours=2),
        ),
    ]
    body = rss_document("E2E feed", server.url("/"), entries)
    for entry in entries:  # the article pages, for entries intake sees as teasers
        page = article_html(entry.title, entry.description)
        server.route(
            entry.link.removeprefix(server.base_url), Reply(body=page, content_type="text/html")
        )

    def handler(request: RecordedRequest) -> Reply:
        if request.headers.get("if-none-match") == '"v1"':
            return Reply(status=304, headers={"ETag": '"v1"'}, content_type=None)
        return Reply(body=body, headers={"ETag": '"v1"'}, content_type="application/rss+xml")

    server.route("/feed.xml", handler)
    return server.url("/feed.xml")


@pytest.fixture
def vault(vault: Path) -> Path:
    """The empty vault with the tests' threshold in its config file."""
    (vault / "signaldesk.toml").write_text(CONFIG_TOML, encoding="utf-8")
    return vault


def _ok(vault: Path, *args: str) -> Result:
    result = CliRunner().invoke(cli, ["--vault", str(vault), *args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def _check_note(vault: Path, rel: str) -> dict[str, Any]:
    """The note is in 05-signals/<domain>/ and its frontmatter parses and agrees."""
    parts = rel.split("/")
    assert parts[0] == "05-signals" and parts[1] in DOMAINS and len(parts) == 3, rel
    parsed = parse_note((vault / rel).read_text(encoding="utf-8"))
    assert parsed.error is None
    meta = parsed.frontmatter
    assert meta["type"] == "signal" and meta["domain"] == parts[1]
    assert meta["status"] == "active" and len(meta["signaldesk_id"]) == 64
    for name in ("relevance", "actionability", "depth", "authority", "composite"):
        assert 0.0 <= meta[name] <= 1.0 and isinstance(meta.get(f"{name}_reason", ""), str)
    assert meta["composite"] > meta["threshold"]
    return meta


async def _search(vault: Path, query: str) -> list[str]:
    config = Config()  # index and search settings: the defaults
    retriever = await Retriever.open(vault, config.index, config.search, real_embedder())
    async with retriever:
        return [r.path for r in await retriever.search(query, limit=5)]


def test_scan_files_notes_that_search_finds_at_once(vault: Path, server: FeedServer) -> None:
    feed = _serve_feed(server)
    _ok(vault, "feeds", "add", feed)
    clip = clipping(
        vault,
        "Sampling profilers.md",
        title="Sampling profilers in production",
        body=HOWTO.replace("py-spy", "austin"),
        source="https://example.net/austin",
    )
    clip_bytes = clip.read_bytes()
    meh = clipping(vault, "meh.md", title="Meh", body=THIN + "\n", source="https://buzz.example/x")
    meh_bytes = meh.read_bytes()

    out = json.loads(_ok(vault, "scan", "--json").stdout)
    assert out["sources"]["rss"]["new"] == 3 and out["sources"]["clipper"]["new"] == 2
    report = out["triage"]
    assert report["filed"] == 3 and report["rejected"] == 2, report["decisions"]
    assert report["inbox_waiting"] == ["Clippings/meh.md"]
    # The three filed notes, and the clipping that stays in the inbox (a note too).
    assert report["indexed"]["added"] == 4 and report["index_error"] is None

    filed = {d["title"]: d["note_path"] for d in report["decisions"] if d["decision"] == "filed"}
    assert set(filed) == {
        "OpenSSH 7.9p2 fixes CVE-2026-7234",
        "How to profile a slow Python service with py-spy",
        "Sampling profilers in production",
    }
    for title, rel in filed.items():
        meta = _check_note(vault, rel)
        assert meta["title"] == title
        assert rel in anyio.run(_search, vault, title), title
    assert filed["OpenSSH 7.9p2 fixes CVE-2026-7234"].startswith("05-signals/security/")

    # The clipping was moved, body untouched; the weak one stayed exactly as it was.
    moved = vault / filed["Sampling profilers in production"]
    assert moved.name == "Sampling profilers.md" and not clip.exists()
    assert moved.read_bytes().endswith(clip_bytes.split(b"\n---\n", 1)[1])
    assert meh.read_bytes() == meh_bytes

    # The CLI search finds a filed note right away too.
    found = json.loads(_ok(vault, "search", "OpenSSH 7.9p2 fixes CVE-2026-7234", "--json").stdout)
    assert found["results"][0]["path"] == filed["OpenSSH 7.9p2 fixes CVE-2026-7234"]

    # A second scan (feed polled again) writes nothing new.
    before = {k: v for k, v in snapshot(vault).items() if not k.startswith(".signaldesk")}
    again = json.loads(_ok(vault, "scan", "--json", "--force").stdout)
    assert again["totals"]["new"] == 0 and again["triage"]["decisions"] == []
    after = {k: v for k, v in snapshot(vault).items() if not k.startswith(".signaldesk")}
    assert after == before


def test_scan_table_shows_the_triage(vault: Path, server: FeedServer) -> None:
    # Batches of one: every item is scored and filed from inside the scan's hand-off.
    with (vault / "signaldesk.toml").open("a", encoding="utf-8") as handle:
        handle.write("[triage]\nbatch_size = 1\n")
    _ok(vault, "feeds", "add", _serve_feed(server))
    result = CliRunner().invoke(cli, ["--vault", str(vault), "scan"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Scan finished" in out and "Triage: 2 filed, 1 below threshold" in out
    assert "05-signals/security/" in out


def test_scan_can_leave_triage_for_later(vault: Path, server: FeedServer) -> None:
    with (vault / "signaldesk.toml").open("a", encoding="utf-8") as handle:
        handle.write("[triage]\nafter_scan = false\n")
    _ok(vault, "feeds", "add", _serve_feed(server))
    out = json.loads(_ok(vault, "scan", "--json").stdout)
    assert out["triage"] is None and out["totals"]["new"] == 3
    assert not [p for p in file_list(vault) if p.startswith("05-signals/")]
    assert {i["status"] for i in json.loads(_ok(vault, "items", "--json").stdout)} == {"pending"}
    report = json.loads(_ok(vault, "triage", "--json").stdout)
    assert report["filed"] == 2 and report["rejected"] == 1


@pytest.mark.slow
def test_scan_in_a_real_subprocess(vault: Path, server: FeedServer) -> None:
    _ok(vault, "feeds", "add", _serve_feed(server))
    env = {**os.environ, "SIGNALDESK_VAULT": str(vault), "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "signaldesk", "scan", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)["triage"]
    notes = [d["note_path"] for d in report["decisions"] if d["decision"] == "filed"]
    assert len(notes) == 2
    for rel in notes:
        _check_note(vault, rel)
    title = "How to profile a slow Python service with py-spy"
    assert any(n.startswith("05-signals/") for n in anyio.run(_search, vault, title))
