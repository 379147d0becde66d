"""Text from feeds, files and people prints as it is: rich reads ``[...]`` as markup, so
an unescaped "Paper title [pdf]" loses its last word and "[/r/python]" crashes a table."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner, Result
from rich.console import Console

from signaldesk.pipeline.cli import cli
from signaldesk.pipeline.cli._demo_view import DemoView
from signaldesk.pipeline.config import resolve_workspace
from signaldesk.pipeline.intake.feeds import FeedRegistry
from signaldesk.pipeline.ledger.store import open_ledger
from signaldesk.pipeline.service.job_state import JobState, ServeState, save_state, state_path
from signaldesk.pipeline.triage.run import triage as run_triage
from signaldesk.pipeline.vault_setup import init_vault
from tests.feedserver import FeedServer, Reply
from tests.intake_data import Entry, article_html, rss_document
from tests.triage_data import ADVISORY, CONFIG_TOML, HOWTO, THIN, advisory_item, pend, workspace

# A Hacker News title, a subreddit in brackets (a closing tag rich cannot match), and a
# title that is itself markup.
PDF, SUBREDDIT, BOLD = "Paper title [pdf]", "Best of [/r/python] this week", "[bold]not bold[/bold]"
HOSTILE = (PDF, SUBREDDIT, BOLD)
_WIDE = {"COLUMNS": "250"}  # nothing wraps, so each value is one run of text


def _run(vault: Path, *args: str) -> Result:
    return CliRunner(env=_WIDE).invoke(cli, ["--vault", str(vault), *args])


def _ok(vault: Path, *args: str) -> str:
    result = _run(vault, *args)
    assert result.exit_code == 0, (result.output, result.exception)
    assert "Traceback" not in result.output
    return result.stdout


@dataclass(frozen=True)
class HostileVault:
    """A vault whose feeds, items, notes, errors and jobs all carry bracketed text."""

    path: Path
    notes: tuple[str, ...]  # note paths triage wrote
    failing_url: str


def _serve_hostile(server: FeedServer) -> str:
    """A real feed titled with brackets, whose entries' titles are too; its URL."""
    entries = [
        Entry(
            guid=f"urn:markup:{n}",
            title=title,
            link=server.url(f"/articles/{n}"),
            description=text,
            published=datetime(2026, 11, 20, tzinfo=UTC) + timedelta(hours=n),
        )
        for n, (title, text) in enumerate(
            zip(HOSTILE, (ADVISORY.format(n=4), HOWTO, THIN), strict=True)
        )
    ]
    server.route("/feed.xml", Reply(body=rss_document(SUBREDDIT, server.url("/"), entries)))
    for n, entry in enumerate(entries):
        page = article_html(entry.title, entry.description)
        server.route(f"/articles/{n}", Reply(body=page, content_type="text/html"))
    return server.url("/feed.xml")


def _hostile_vault(parent: Path) -> Path:
    vault = parent / "vault"
    init_vault(vault)
    (vault / "signaldesk.toml").write_text(CONFIG_TOML, encoding="utf-8")
    return vault


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileVault]:
    """Set up without printing through rich, so each test below fails for its own verb."""
    vault = _hostile_vault(tmp_path_factory.mktemp("markup"))
    with FeedServer() as server:
        url, failing = _serve_hostile(server), server.url("/gone.xml")

        async def subscribe() -> None:
            async with open_ledger(resolve_workspace(vault)) as ledger:
                await FeedRegistry(ledger).add(url)
                await FeedRegistry(ledger).add(failing, title=BOLD)

        anyio.run(subscribe)
        _ok(vault, "scan", "--json")
    items = json.loads(_ok(vault, "items", "--json"))
    assert {i["title"] for i in items} == set(HOSTILE)
    notes = tuple(i["note_path"] for i in items if i["note_path"])
    assert notes and len(notes) < len(items), items  # some filed, some not

    async def fail_loudly() -> None:
        async with open_ledger(resolve_workspace(vault)) as ledger:
            registry = FeedRegistry(ledger)
            record = await registry.get(failing)
            assert record is not None
            state = replace(record.state, last_error=f"HTTP 404 for {SUBREDDIT}")
            async with ledger.transaction() as conn:
                await registry.save_state(conn, record.url, state)

    anyio.run(fail_loudly)
    now = datetime.now(UTC)
    state = ServeState(pid=None, started_at=now, stopped_at=now)
    state.jobs["feeds"] = JobState("feeds", last_started=now, outcome="error", error=PDF)
    state.jobs["triage"] = JobState("triage", last_started=now, outcome="ok", summary=SUBREDDIT)
    save_state(state_path(vault), state)
    yield HostileVault(vault, notes, failing)


def test_feeds_add_and_scan_print_bracketed_titles(tmp_path: Path) -> None:
    vault = _hostile_vault(tmp_path)
    with FeedServer() as server:
        url = _serve_hostile(server)
        added = _ok(vault, "feeds", "add", url)
        assert f"subscribed to {url} ({SUBREDDIT}, 3 entries now)" in added
        failing = server.url("/gone.xml")
        _ok(vault, "feeds", "add", failing, "--no-check", "--title", BOLD)
        scanned = _ok(vault, "scan")
    for title in HOSTILE:
        assert title in scanned  # the triage table `scan` prints
    assert scanned.count(BOLD) == 2  # the item's row, and the failing feed's


Expect = Callable[[HostileVault], list[str]]

# Each verb, and the literal text it must show.
VERBS: dict[str, tuple[tuple[str, ...], Expect]] = {
    "items": (("items",), lambda h: [*HOSTILE, *h.notes]),
    "feeds list": (("feeds", "list"), lambda h: [SUBREDDIT, BOLD, f"HTTP 404 for {SUBREDDIT}"]),
    "triage": (("triage", "--rescore", "--dry-run"), lambda h: [*HOSTILE, *h.notes]),
    "status": (
        ("status",),
        lambda h: [PDF, SUBREDDIT, BOLD, f"HTTP 404 for {SUBREDDIT}"],
    ),
}


@pytest.mark.parametrize("verb", list(VERBS))
def test_verbs_print_bracketed_text_literally(hostile: HostileVault, verb: str) -> None:
    args, expect = VERBS[verb]
    out = _ok(hostile.path, *args)
    for text in expect(hostile):
        assert text in out, (text, out)


def test_a_correction_prints_the_title(hostile: HostileVault) -> None:
    items = json.loads(_ok(hostile.path, "items", "--json"))
    rejected = next(i for i in items if i["status"] == "rejected")
    try:
        accepted = _ok(hostile.path, "triage", "accept", rejected["id"])
        assert rejected["title"] in accepted
        listed = _ok(hostile.path, "triage", "corrections")
        assert rejected["title"] in listed
    finally:
        _ok(hostile.path, "triage", "corrections", "--reset")


def test_feeds_export_names_the_file_it_wrote(hostile: HostileVault, tmp_path: Path) -> None:
    target = tmp_path / "[backup] feeds.opml"
    assert f"wrote {target}" in _ok(hostile.path, "feeds", "export", str(target))
    assert SUBREDDIT in target.read_text(encoding="utf-8")


def test_score_prints_the_title_and_reasons(tmp_path: Path, vault: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text(f"---\ntitle: '{SUBREDDIT}'\n---\n{ADVISORY.format(n=3)}", encoding="utf-8")
    for args in (("score", str(note)), ("score", str(note), "--explain")):
        assert SUBREDDIT in _ok(vault, *args)


def test_init_names_the_config_sections(tmp_path: Path) -> None:
    folder = tmp_path / "[work] notes"
    folder.mkdir()
    (folder / "idea.md").write_text("# An idea\n", encoding="utf-8")
    out = CliRunner(env=_WIDE).invoke(cli, ["init", str(folder)])
    assert out.exit_code == 0, out.output
    # A paragraph wraps at the terminal's width; its words are what count.
    said = " ".join(out.stdout.split())
    sections = "([vault] inbox_folder, [triage] signals_folder, [report] path, [captains_log] path)"
    assert sections in said
    assert f"Vault ready at {folder}" in said
    again = CliRunner(env=_WIDE).invoke(cli, ["init", str(folder), "--inbox", "[in]"])
    assert again.exit_code == 0, again.output
    said = " ".join(again.stdout.split())
    assert "edit its [vault], [triage], [report] and [captains_log] settings" in said


@pytest.fixture
def odd_vault(tmp_path: Path) -> Path:
    """A vault in a folder a person may well name so."""
    path = tmp_path / "my [notes]"
    init_vault(path)
    return path


def test_a_bracketed_vault_path_prints_whole(odd_vault: Path) -> None:
    assert f"state file: {state_path(odd_vault)}" in _ok(odd_vault, "status")
    assert str(odd_vault) in _ok(odd_vault, "doctor")
    _ok(odd_vault, "index")
    assert str(odd_vault) in _ok(odd_vault, "index", "--status")
    empty = _ok(odd_vault, "search", BOLD)
    assert f"No results for {BOLD}." in empty and f"The index of {odd_vault} holds" in empty


def test_search_shows_bracketed_queries_folders_and_sources(odd_vault: Path) -> None:
    folder = odd_vault / "[archive]"
    folder.mkdir()
    (folder / "python.md").write_text(
        f"# {SUBREDDIT}\n\n## [docs] fix typo\n\n{HOWTO}", encoding="utf-8"
    )
    _ok(odd_vault, "index")
    assert "1  [archive]/" in _ok(odd_vault, "index", "--status")
    for args in (("search", SUBREDDIT), ("search", SUBREDDIT, "--explain")):
        out = _ok(odd_vault, *args)
        assert f"Results for “{SUBREDDIT}”" in out and "[archive]/python.md" in out


def test_the_demo_view_prints_titles_and_section_names(vault: Path) -> None:
    """The demo's triage step, shown from a real triage run."""
    (vault / "signaldesk.toml").write_text(CONFIG_TOML, encoding="utf-8")
    ws = workspace(vault)
    anyio.run(pend, ws, [replace(advisory_item(5), title=PDF)])
    report = anyio.run(lambda: run_triage(ws))
    console = Console(record=True, width=250)
    view = DemoView(console)
    view._show_triage(report)
    view._show_triage(None)
    shown = console.export_text()
    assert PDF in shown and report.decisions[0].note_path in shown
    assert "([triage] after_scan = false)" in shown


def test_a_command_in_an_error_hint_or_in_inits_next_step_is_never_cut_into_lines(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "a rather long folder name for my notes" / "vault"
    narrow = {"COLUMNS": "40"}
    out = CliRunner(env=narrow).invoke(cli, ["init", str(folder)])
    assert out.exit_code == 0, out.output
    [line] = [line for line in out.stdout.splitlines() if line.startswith("Next: ")]
    assert shlex.split(line.removeprefix("Next: ")) == [
        "signaldesk",
        "--vault",
        str(folder),
        "index",
    ]
    # An error's hint with a command in it, printed to a narrow terminal.
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "signaldesk",
            "--vault",
            str(tmp_path / "nowhere" / "at all"),
            "status",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "40"},
        check=False,
    )
    assert bad.returncode == 1
    [hint] = [line for line in bad.stderr.splitlines() if line.startswith("hint:")]
    command = hint.split("`")[1]  # as a shell takes it: the folder's space is quoted
    assert shlex.split(command) == ["signaldesk", "init", str(tmp_path / "nowhere" / "at all")]
