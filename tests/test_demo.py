"""`signaldesk demo`: the README's first command, end to end, offline, and twice."""

from __future__ import annotations

import hashlib
import os
import shlex
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import anyio
import httpx
import pytest

from signaldesk.frontmatter import parse_note
from signaldesk.pipeline.demo.server import DemoServer, render_template
from signaldesk.pipeline.demo.tour import DEMO_QUERY, DemoStep, run_demo


def _snapshot(vault: Path) -> dict[str, str]:
    """Every file a person sees (the state folder aside), by content hash."""
    return {
        p.relative_to(vault).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(vault.rglob("*"))
        if p.is_file() and ".signaldesk" not in p.relative_to(vault).parts
    }


def test_templates_fill_the_base_url_and_relative_dates() -> None:
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    text = render_template("{{BASE}}/x {{DAY:-1}} {{ISO:0}} {{DATE:0}}", base="http://h:1", now=now)
    assert text == (
        "http://h:1/x 2026-11-29 2026-11-30T11:00:00+00:00 Mon, 30 Nov 2026 11:00:00 +0000"
    )


def test_demo_server_serves_the_sample_site_and_nothing_else() -> None:
    with DemoServer() as server, httpx.Client(trust_env=False) as client:
        feed = client.get(server.base_url + "/feeds/advisories.xml")
        assert feed.status_code == 200 and "rss" in feed.headers["content-type"]
        assert server.base_url + "/articles/" in feed.text and "{{" not in feed.text
        assert client.get(server.base_url + "/feeds/retired.xml").status_code == 410
        assert client.get(server.base_url + "/../README.md").status_code == 404
        assert client.get(server.base_url + "/feeds/missing.xml").status_code == 404


async def _demo_process(target: Path, *, columns: int) -> subprocess.CompletedProcess[str]:
    """``signaldesk demo TARGET`` in a new process, on a terminal ``columns`` wide."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNALDESK_")}
    completed = await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            [sys.executable, "-m", "signaldesk", "demo", str(target)],
            env={**env, "COLUMNS": str(columns)},
            capture_output=True,
            text=True,
            timeout=110,
        )
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed


@pytest.mark.slow
@pytest.mark.anyio
async def test_demo_runs_end_to_end_offline_and_again_changes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "demo-vault"
    completed = await _demo_process(target, columns=120)
    out = completed.stdout
    for heading in ("Demo vault", "Scan", "Triage", "Triage report", "Captain's log", "Index"):
        assert heading in out
    assert "where to look" in out
    # Each suggested command is one line however narrow the terminal, and pastes into a
    # shell as it reads, for a folder with a space and brackets too.
    odd = tmp_path / "my [notes]"
    narrow = await _demo_process(odd, columns=50)
    # The folder's name is printed as it is, not read as markup (wrapped at 50 columns).
    assert "vault:" + "".join(str(odd).split()) in "".join(narrow.stdout.split())
    suggested = [shlex.split(line) for line in narrow.stdout.splitlines() if "--vault" in line]
    assert [words[:3] for words in suggested] == [["signaldesk", "--vault", str(odd)]] * 4
    assert [words[3:] for words in suggested][:3] == [["search", DEMO_QUERY], ["items"], ["status"]]

    filed = sorted((target / "05-signals").rglob("*.md"))
    assert len(filed) >= 2, out
    for note in filed:
        meta = parse_note(note.read_text()).frontmatter
        assert meta["type"] == "signal" and 0.0 <= float(meta["composite"]) <= 1.0
    reports = list((target / "06-daily").glob("*-triage.md"))
    logs = list((target / "06-daily").glob("*-captains-log.md"))
    assert len(reports) == 1 and len(logs) == 1
    report = reports[0].read_text()
    assert "```mermaid" in report and "Retired Feed" in report and "## Duplicates merged" in report
    assert "demo-repo" in logs[0].read_text()
    assert (target / "03-resources" / "sqlite-notes.md").is_file()

    # Again on the same folder: nothing a person sees changes, nothing new is found.
    before = _snapshot(target)
    steps: list[DemoStep] = []
    result = await run_demo(target, on_step=steps.append)
    assert _snapshot(target) == before
    assert result.scan is not None and result.scan.totals.new == 0
    assert result.report is not None and result.report.outcome == "unchanged"
    assert [s.key for s in steps] == [
        "vault",
        "feeds",
        "scan",
        "triage",
        "report",
        "log",
        "index",
        "search",
    ]
    assert result.query == DEMO_QUERY
    assert result.results and any("sqlite" in r.path for r in result.results[:3])


@pytest.mark.anyio
async def test_a_demo_whose_feeds_all_fail_does_not_say_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    from signaldesk.pipeline.cli._demo_view import DemoView

    # Every request, to 127.0.0.1 too, goes to a proxy that is not there.
    monkeypatch.setenv("NO_PROXY", "")
    monkeypatch.setenv("no_proxy", "")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = await run_demo(tmp_path / "d", port=port)
    assert not result.ok
    assert "none of the 4 sample feeds could be read" in result.problems[0]
    console = Console(record=True, width=200)
    DemoView(console).finish(result)
    shown = console.export_text()
    assert "Finished with problems" in shown and "Done in" not in shown


def test_the_demo_repositorys_commits_of_today_are_in_a_log_written_just_after_midnight(
    tmp_path: Path,
) -> None:
    # At 00:05 "an hour ago" is yesterday: the demo's log came out with no commits.
    from signaldesk.pipeline.demo.tour import _make_repo
    from signaldesk.pipeline.reports.captains_log import gather
    from signaldesk.pipeline.settings import CaptainsLogSettings

    now = datetime(2026, 12, 2, 0, 5, tzinfo=UTC)  # a Wednesday
    repo = tmp_path / "repo"
    _make_repo(repo, now)
    settings = CaptainsLogSettings(repos=[str(repo)], covers="same_day")
    log = gather(tmp_path, settings, now.date(), tz=UTC)
    [commits] = log.commits.values()
    assert len(commits) == 2, commits
    assert all(now.replace(hour=0, minute=0) <= c.date <= now for c in commits)


@pytest.mark.anyio
async def test_a_second_demo_names_the_disabled_feeds_reason_once(tmp_path: Path) -> None:
    from rich.console import Console

    from signaldesk.pipeline.cli._demo_view import DemoView

    # One free port for both runs: the second polls the feeds the first subscribed to,
    # whatever else on this machine holds the demo's usual port.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    shown: list[str] = []
    for _ in range(2):
        console = Console(record=True, width=200)
        view = DemoView(console)
        view.finish(await run_demo(tmp_path / "d", on_step=view.step, port=port))
        shown.append(console.export_text())
    # Everything of the first run's vault is new; nothing of the second's is.
    assert "27 folders/files created, 0 kept;" in shown[0]
    assert "0 folders/files created, 27 kept;" in shown[1]
    # The first run sees the 410; the second skips the feed it disabled, and says why.
    assert "Retired Feed: gone (410)\n" in shown[0]
    assert "Retired Feed: disabled (gone (410))\n" in shown[1]
    assert "(gone (410)) (gone (410))" not in shown[1] and "(410) (gone" not in shown[1]


@pytest.mark.anyio
@pytest.mark.parametrize("note", ["Start here.md", "03-resources/sqlite.md"])
async def test_the_demo_refuses_a_vault_that_holds_notes_and_writes_nothing(
    tmp_path: Path, note: str
) -> None:
    from signaldesk.pipeline.demo.tour import DemoError

    vault = tmp_path / "vault"
    (vault / note).parent.mkdir(parents=True, exist_ok=True)
    (vault / note).write_text("# my note\n", encoding="utf-8")
    before = _snapshot(vault)
    with pytest.raises(DemoError) as refused:
        await run_demo(vault)
    assert "already holds notes" in refused.value.message
    assert refused.value.hint and "signaldesk init" in refused.value.hint
    assert _snapshot(vault) == before and not (vault / ".signaldesk").exists()
