"""`signaldesk status`, `report`, `log` and `serve` through the real CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner, Result

from signaldesk.items import Item
from signaldesk.pipeline.cli import cli
from signaldesk.pipeline.config import render_default_config, resolve_workspace
from signaldesk.pipeline.intake.feeds import FeedRegistry
from signaldesk.pipeline.ledger.store import open_ledger
from signaldesk.pipeline.service.job_state import (
    JobState,
    ServeLock,
    ServeState,
    ServiceRunningError,
    save_state,
    state_path,
)


def _run(vault: Path, *args: str) -> Result:
    # Wide enough that rich does not wrap table cells mid-phrase.
    return CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["--vault", str(vault), *args])


def _ok(vault: Path, *args: str) -> Result:
    result = _run(vault, *args)
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def _utc_config(vault: Path) -> None:
    (vault / "signaldesk.toml").write_text(render_default_config({"schedule": {"timezone": "UTC"}}))


def test_status_before_serve_ever_ran(vault: Path) -> None:
    out = _ok(vault, "status").output
    assert "serve is not running" in out and "never started" in out
    # The commands name the vault: a bare `signaldesk serve` would find none.
    assert f"never started for this vault: `signaldesk --vault {vault} serve`" in out
    assert f"index: none yet (`signaldesk --vault {vault} index`)" in out
    data = json.loads(_ok(vault, "status", "--json").stdout)
    assert data["running"] is False and data["jobs"] == []
    assert data["index"]["exists"] is False
    # status never creates the ledger.
    assert not (vault / ".signaldesk" / "ledger.db").exists()


def test_status_shows_jobs_feeds_and_whether_serve_runs(vault: Path) -> None:
    now = datetime(2026, 11, 30, 7, 0, tzinfo=UTC)
    state = ServeState(pid=4242, started_at=now, ready=True)
    state.jobs["feeds"] = JobState(
        "feeds", last_started=now, outcome="error", error="HTTP client exploded", runs=3, failures=1
    )
    save_state(state_path(vault), state)

    async def add_feeds() -> None:
        async with open_ledger(resolve_workspace(vault)) as ledger:
            await FeedRegistry(ledger).add("https://feeds.example/a.xml", title="A feed")

    anyio.run(add_feeds)
    with ServeLock(vault).held():
        out = _ok(vault, "status").output
        data = json.loads(_ok(vault, "status", "--json").stdout)
    assert "serve is running" in out and "HTTP client exploded" in out
    assert "feeds: 1 subscribed, 0 in backoff, 0 disabled" in out
    assert data["running"] is True and data["pid"] == 4242
    assert data["jobs"][0]["name"] == "feeds" and data["jobs"][0]["failures"] == 1
    assert data["feeds"]["total"] == 1
    assert "serve is not running" in _ok(vault, "status").output


def test_serve_refuses_a_second_instance(vault: Path) -> None:
    with ServeLock(vault).held():
        result = _run(vault, "serve")
    assert result.exit_code != 0
    assert isinstance(result.exception, ServiceRunningError)


def test_report_for_a_date_as_json(vault: Path) -> None:
    _utc_config(vault)
    arrived = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)

    async def fill() -> None:
        async with open_ledger(resolve_workspace(vault)) as ledger:
            item = Item(source_kind="rss", source_id="https://f.example/x", title="Hello", text="t")
            [item_id] = await ledger.record([item], now=arrived)
            await ledger.settle(item_id, item)

    anyio.run(fill)
    data = json.loads(_ok(vault, "report", "--date", "2026-11-27", "--json").stdout)
    assert [i["title"] for i in data["items"]] == ["Hello"]
    assert data["path"].endswith("06-daily/2026-11-27-triage.md")
    assert not (vault / "06-daily" / "2026-11-27-triage.md").exists()  # --json writes nothing
    out = _ok(vault, "report", "--date", "2026-11-27").output
    assert "06-daily/2026-11-27-triage.md: written" in out and "1 arrived" in out
    assert "0 duplicates" in out and "0 feeds need attention" in out
    other = json.loads(_ok(vault, "report", "--date", "2026-11-28", "--json").stdout)
    assert other["items"] == []


def test_report_rejects_a_bad_date(vault: Path) -> None:
    result = _run(vault, "report", "--date", "yesterday")
    assert result.exit_code == 2 and "not a date" in result.output
    # It names the option, as click does for its own types ("Invalid value:" named none).
    assert "Invalid value for --date: 'yesterday' is not a date" in result.output


@pytest.mark.parametrize("verb", ["report", "log"])
def test_no_note_is_written_for_a_day_to_come(vault: Path, verb: str) -> None:
    result = _run(vault, verb, "--date", "2999-01-01")
    assert result.exit_code == 2 and "has not happened yet" in result.output
    assert json.loads(_ok(vault, verb, "--date", "2999-01-01", "--json").stdout)["path"]
    assert not list((vault / "06-daily").glob("2999-*"))


def test_log_verb_writes_the_captains_log(vault: Path) -> None:
    _utc_config(vault)
    data = json.loads(_ok(vault, "log", "--date", "2026-11-27", "--json").stdout)
    assert data["path"].endswith("06-daily/2026-11-27-captains-log.md")
    assert data["period"]["start"].startswith("2026-11-27")  # a log covers its own day
    assert not (vault / "06-daily" / "2026-11-27-captains-log.md").exists()
    out = _ok(vault, "log", "--date", "2026-11-27").output
    assert "06-daily/2026-11-27-captains-log.md: written" in out
    assert "0 commits in 0 repositories, 0 decisions, 0 open loops, 0 signals" in out


@pytest.mark.parametrize(("verb", "title"), [("report", "Triage"), ("log", "Captain's log")])
def test_a_note_report_or_log_writes_is_searchable_at_once(
    vault: Path, verb: str, title: str
) -> None:
    _utc_config(vault)
    _ok(vault, "index")
    out = _ok(vault, verb, "--date", "2026-11-27").output
    assert "not indexed" not in out
    found = json.loads(_ok(vault, "search", title, "--json", "--mode", "bm25").stdout)
    assert any(r["path"].startswith("06-daily/2026-11-27-") for r in found["results"])
    assert "not indexed yet" not in _ok(vault, "doctor").output


def test_report_builds_no_index_of_its_own(vault: Path) -> None:
    _utc_config(vault)
    _ok(vault, "report", "--date", "2026-11-27")
    assert json.loads(_ok(vault, "status", "--json").stdout)["index"]["exists"] is False


@pytest.mark.parametrize("verb", ["serve", "status", "report", "log", "demo"])
def test_every_verb_has_help(verb: str) -> None:
    result = CliRunner().invoke(cli, [verb, "--help"])
    assert result.exit_code == 0 and "Usage" in result.output


def test_status_shows_times_in_the_configured_zone(vault: Path) -> None:
    # [schedule] timezone is the zone of report_time and log_time: a server (or a
    # container) on UTC must show the next report at the 07:00 the person configured.
    (vault / "signaldesk.toml").write_text(
        render_default_config({"schedule": {"timezone": "Pacific/Auckland"}})
    )
    started = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)  # 07:00 on the 30th in Auckland
    state = ServeState(pid=4242, started_at=started, ready=True)
    state.jobs["report"] = JobState(
        "report", last_started=started, outcome="ok", next_run=started.replace(day=30), runs=1
    )
    save_state(state_path(vault), state)
    with ServeLock(vault).held():
        out = _ok(vault, "status").output
    assert "since 11-30 07:00" in out
    assert "12-01 07:00" in out  # the next run


def _bad_zone_config(vault: Path) -> None:
    (vault / "signaldesk.toml").write_text(
        render_default_config({"schedule": {"timezone": "Mars/Olympus"}})
    )


def test_doctor_fails_on_a_time_zone_that_serve_report_and_log_refuse(vault: Path) -> None:
    _bad_zone_config(vault)
    assert _run(vault, "report").exit_code == 1
    result = _run(vault, "doctor", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    checks = {c["name"]: c for c in data["checks"]}
    assert data["ok"] is False
    assert checks["config"]["outcome"] == "fail"
    assert "Mars/Olympus" in checks["config"]["detail"] and "timezone" in checks["config"]["fix"]


def test_status_still_answers_with_a_bad_time_zone(vault: Path) -> None:
    _bad_zone_config(vault)
    result = _run(vault, "status")
    assert result.exit_code == 0, result.output
    assert "serve is not running" in result.output
    warning = [line for line in result.output.splitlines() if "Mars/Olympus" in line]
    assert len(warning) == 1 and "machine's" in warning[0]
    assert json.loads(_ok(vault, "status", "--json").stdout)["running"] is False


def test_status_with_an_unreadable_state_file_does_not_say_never_started(vault: Path) -> None:
    state_path(vault).parent.mkdir(parents=True, exist_ok=True)
    state_path(vault).write_text("{half a file", encoding="utf-8")
    out = _ok(vault, "status").output
    assert "never started" not in out and "serve is not running" in out
    assert "cannot be read" in out
    with ServeLock(vault).held():
        out = _ok(vault, "status").output
    assert "serve is running" in out and "not running" not in out


@pytest.mark.parametrize("verb", ["report", "log"])
def test_a_folder_in_the_way_of_the_note_is_one_message_not_a_traceback(
    vault: Path, verb: str
) -> None:
    import os
    import subprocess
    import sys

    _utc_config(vault)
    name = "triage" if verb == "report" else "captains-log"
    blocker = vault / "06-daily" / f"2026-11-27-{name}.md"
    blocker.mkdir(parents=True)
    (blocker / "mine.md").write_text("a person's note\n")
    proc = subprocess.run(
        [sys.executable, "-m", "signaldesk", "--vault", str(vault), verb, "--date", "2026-11-27"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "300"},  # one line is one line, not rich's wrapping
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and f"2026-11-27-{name}.md" in lines[0], lines
    assert len(lines) <= 2 and (len(lines) == 1 or lines[1].startswith("hint: "))
    assert (blocker / "mine.md").read_text() == "a person's note\n"


def test_log_leaves_out_what_sits_in_the_clipper_folder(vault: Path) -> None:
    _utc_config(vault)
    (vault / "Clippings").mkdir(exist_ok=True)
    (vault / "Clippings" / "page.md").write_text(
        "---\ncreated: 2026-11-27\n---\nThe board decided to adopt the new plan.\n- [ ] step\n"
    )
    data = json.loads(_ok(vault, "log", "--date", "2026-11-27", "--json").stdout)
    assert data["decisions"] == [] and data["unchecked"] == []


def test_a_hand_edited_report_is_said_once(vault: Path) -> None:
    import os
    import subprocess
    import sys

    _utc_config(vault)
    _ok(vault, "report", "--date", "2026-11-27")
    note = vault / "06-daily" / "2026-11-27-triage.md"
    note.write_text(note.read_text() + "\nMy own remark.\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "signaldesk",
            "--vault",
            str(vault),
            "report",
            "--date",
            "2026-11-27",
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert proc.returncode == 0
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if "edited" in line]
    assert said == ["06-daily/2026-11-27-triage.md: kept: edited by hand (delete it to regenerate)"]
    assert note.read_text().endswith("My own remark.\n")
