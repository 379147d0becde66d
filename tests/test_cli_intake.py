"""`signaldesk scan`, `items` and `capture` through the real CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from signaldesk.pipeline.cli import cli
from signaldesk.pipeline.errors import IntakeError
from tests.feedserver import FeedServer
from tests.intake_data import article_text, clipping_note, newsletter_eml, serve_feeds
from tests.triage_data import ADVISORY, CONFIG_TOML

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
    _ok(vault, "feeds", "add", server.url("/broken.xml"), "--no-check")
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
    assert "7 item(s)" in table and "--limit" not in table
    # A cut list says so (7 items, 7 shown: not cut; 5 shown: cut).
    assert "7 item(s)" in _ok(vault, "items", "--limit", "7").stdout
    assert "the newest 5 item(s); --limit for more" in _ok(vault, "items", "--limit", "5").stdout


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


def test_capture_files_and_indexes_a_note_worth_keeping(vault: Path) -> None:
    (vault / "signaldesk.toml").write_text(CONFIG_TOML, encoding="utf-8")
    out = json.loads(
        _ok(
            vault,
            "capture",
            ADVISORY.format(n=9),
            "--title",
            "OpenSSH 9.9p2 fixes CVE-2026-9234",
            "--source",
            "https://www.openssh.com/txt/release-9.9p2",
            "--json",
        ).stdout
    )
    report = out["triage"]
    assert report["filed"] == 1 and report["indexed"]["added"] == 1, report
    [decision] = report["decisions"]
    assert decision["item_id"] == out["new_ids"][0] and decision["outcome"] == "created"
    note = decision["note_path"]
    assert note.startswith("05-signals/security/") and (vault / note).is_file()
    [item] = json.loads(_ok(vault, "items", "--json", "--source", "tool_output").stdout)
    assert (item["status"], item["note_path"]) == ("filed", note)
    # Searchable the moment `capture` returned.
    found = json.loads(_ok(vault, "search", "OpenSSH 9.9p2 CVE-2026-9234", "--json").stdout)
    assert found["results"][0]["path"] == note

    # Weak text is triaged too, and shown: below the threshold, nothing filed; the
    # captured file itself is searchable at once all the same.
    shown = _ok(vault, "capture", "Click here. You won't believe number seven!").stdout
    assert "1 new" in shown and "Triage: 0 filed, 1 below threshold" in shown
    assert len([p for p in (vault / "05-signals").rglob("*.md")]) == 1
    found = json.loads(_ok(vault, "search", "believe number seven", "--json").stdout)
    assert found["results"][0]["path"].startswith("00-inbox/tool-output/")
    # `items` shows the rejected one's score and what held it back.
    [rejected] = json.loads(_ok(vault, "items", "--status", "rejected", "--json").stdout)
    assert rejected["reason"].startswith(f"{rejected['score']:.3f} ≤ 0.40")
    assert "weakest: " in rejected["reason"]
    assert f"{rejected['score']:.2f}" in _ok(vault, "items", "--status", "rejected").stdout


def test_capture_leaves_triage_for_later_when_scan_does(vault: Path) -> None:
    (vault / "signaldesk.toml").write_text(
        CONFIG_TOML + "[triage]\nafter_scan = false\n", encoding="utf-8"
    )
    out = json.loads(_ok(vault, "capture", ADVISORY.format(n=9), "--json").stdout)
    assert out["new"] == 1 and out["triage"] is None
    [item] = json.loads(_ok(vault, "items", "--json").stdout)
    assert item["status"] == "pending"
    assert not list((vault / "05-signals").rglob("*.md"))


def test_triage_reads_the_mail_waiting_in_the_drop_folder(vault: Path) -> None:
    drop = vault / "00-inbox" / "newsletters"
    newsletter_eml(
        drop,
        "digest.eml",
        subject="A digest",
        view_online="https://n.example/1",
        body=article_text(31),
    )
    plain = EmailMessage()
    plain["From"] = "friend@example.org"
    plain["Subject"] = "Lunch?"
    plain["Message-ID"] = "<lunch@example.org>"
    plain.set_content("Are you free on Friday?")
    (drop / "personal.eml").write_bytes(bytes(plain))
    report = json.loads(_ok(vault, "triage", "--json").stdout)
    assert [d["source_kind"] for d in report["decisions"]] == ["newsletter"]
    # The mail without list headers is not taken, and the ledger says why, once.
    [parked] = json.loads(_ok(vault, "items", "--status", "parked", "--json").stdout)
    assert "no newsletter headers" in parked["last_error"]
    assert "accept_all" in parked["last_error"]
    out = _ok(vault, "scan", "--source", "newsletter").stdout
    assert "no newsletter headers" not in out  # told once, not at every scan


def test_items_shows_a_duplicate_by_its_originals_note(vault: Path) -> None:
    (vault / "signaldesk.toml").write_text(CONFIG_TOML, encoding="utf-8")
    for name in ("first.md", "again.md"):  # the same page clipped twice
        clipping_note(
            vault / "Clippings",
            name,
            title="Hardening OpenSSH",
            source="https://example.com/ssh",
            body=ADVISORY,
        )
        _ok(vault, "scan")
    [original] = json.loads(_ok(vault, "items", "--json", "--status", "filed").stdout)
    [dupe] = json.loads(_ok(vault, "items", "--json", "--status", "duplicate").stdout)
    assert dupe["duplicate_of"] == original["id"]
    wide = CliRunner().invoke(
        cli, ["--vault", str(vault), "items", "--status", "duplicate"], env={"COLUMNS": "250"}
    )
    assert original["note_path"]
    assert f"duplicate of {original['id'][:10]}: {original['note_path']}" in wide.stdout


def test_a_drop_whose_name_is_not_utf8_is_skipped_with_one_line_and_the_rest_taken_in(
    vault: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A clipping or tool output named in Latin-1 was taken in under a name with "?" in
    # it, which is no file: it could never be moved out of the inbox or found again.
    import os

    clipping_note(
        vault / "Clippings", "fine.md", title="Fine", source="https://e.org/f", body=ADVISORY
    )
    folder = os.fsencode(vault / "Clippings")
    with open(os.path.join(folder, b"caf\xe9.md"), "wb") as bad:
        bad.write(b"---\ntitle: Cafe\nsource: https://e.org/c\n---\n\nwords\n")
    summary = json.loads(_ok(vault, "scan", "--json").stdout)
    assert summary["sources"]["clipper"]["new"] == 1
    [item] = json.loads(_ok(vault, "items", "--json", "--source", "clipper").stdout)
    assert item["title"] == "Fine"
    said = [r.getMessage() for r in caplog.records if "not valid UTF-8" in r.getMessage()]
    assert said == [
        f"{vault}/Clippings/caf\ufffd.md: its name is not valid UTF-8: rename it; skipped"
    ]


def test_a_clipping_left_in_the_inbox_is_searchable_after_the_scan(vault: Path) -> None:
    (vault / "signaldesk.toml").write_text(CONFIG_TOML, encoding="utf-8")
    clipping_note(
        vault / "Clippings",
        "thin.md",
        title="Zanzibar spice notes",
        source="https://e.org/z",
        body="Cloves and nutmeg from the zanzibarian market, a short note.",
    )
    _ok(vault, "scan")
    [item] = json.loads(_ok(vault, "items", "--json").stdout)
    assert item["status"] == "rejected"
    found = json.loads(_ok(vault, "search", "zanzibarian", "--mode", "bm25", "--json").stdout)
    assert [r["path"] for r in found["results"]] == ["Clippings/thin.md"]


def test_items_on_a_new_vault_says_how_items_come_in(vault: Path) -> None:
    out = _ok(vault, "items").stdout
    # An empty table said neither that nothing came in yet nor what to do about it.
    assert "nothing has come in yet" in out and "┏" not in out
    flat = " ".join(out.split())
    assert f"signaldesk --vault {vault} feeds add URL" in flat
    assert f"signaldesk --vault {vault} scan" in flat and "Clippings/" in flat
    assert json.loads(_ok(vault, "items", "--json").stdout) == []
    out = " ".join(_ok(vault, "items", "--status", "rejected", "--source", "rss").stdout.split())
    assert "no items match --status rejected --source rss" in out
