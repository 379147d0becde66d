from __future__ import annotations

import os
import subprocess
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from signaldesk.pipeline.reports.captains_log import (
    gather,
    open_loops,
    period_for,
    render,
    summary_line,
    write_captains_log,
)
from signaldesk.pipeline.settings import CaptainsLogSettings


def _git(repo: Path, *args: str, when: str | None = None) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.org",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.org",
    }
    if when:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)


def _commit(repo: Path, name: str, content: str, message: str, when: str) -> None:
    (repo / name).write_text(content)
    _git(repo, "add", name)
    _git(repo, "commit", "-q", "-m", message, when=when)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Commits on Thu 2026-11-26 .. Mon 2026-11-30 (UTC), one merge."""
    path = tmp_path / "engine"
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    _commit(path, "a.py", "x = 1\n", "Thursday work", "2026-11-26T10:00:00+00:00")
    _commit(
        path,
        "a.py",
        "x = 2\n# TODO: handle empty input\n",
        "Decided to switch to anyio",
        "2026-11-27T09:00:00+00:00",
    )
    _git(path, "checkout", "-q", "-b", "side")
    _commit(path, "b.py", "y = 1\n", "Side branch on Saturday", "2026-11-28T15:00:00+00:00")
    _git(path, "checkout", "-q", "main")
    _git(
        path, "merge", "-q", "--no-ff", "-m", "Merge side", "side", when="2026-11-29T11:00:00+00:00"
    )
    _commit(
        path,
        "c.py",
        "z = 1\nz = 2\n# FIXME: slow path\n",
        "Sunday fix",
        "2026-11-29T20:00:00+00:00",
    )
    _commit(path, "d.py", "w = 1\n", "Monday start", "2026-11-30T08:00:00+00:00")
    return path


def test_monday_covers_friday_to_sunday() -> None:
    period = period_for(date(2026, 11, 30), "previous_day", UTC)
    assert [d.isoformat() for d in period.days] == ["2026-11-27", "2026-11-28", "2026-11-29"]
    tuesday = period_for(date(2026, 12, 1), "previous_day", UTC)
    assert [d.isoformat() for d in tuesday.days] == ["2026-11-30"]
    same_day = period_for(date(2026, 11, 30), "same_day", UTC)
    assert [d.isoformat() for d in same_day.days] == ["2026-11-28", "2026-11-29", "2026-11-30"]


def test_log_lists_exactly_the_periods_commits(vault: Path, repo: Path) -> None:
    settings = CaptainsLogSettings(repos=[str(repo)], covers="previous_day")
    log = gather(vault, settings, date(2026, 11, 30), tz=UTC)
    subjects = [c.subject for c in log.commits["engine"]]
    assert subjects == ["Decided to switch to anyio", "Side branch on Saturday", "Sunday fix"]
    sunday = log.commits["engine"][-1]
    assert (sunday.files, sunday.insertions, sunday.deletions) == (1, 3, 0)
    assert sorted((t.tag, t.text) for t in log.todos) == [
        ("FIXME", "slow path"),
        ("TODO", "handle empty input"),
    ]
    assert any("switch to anyio" in d for d in log.decisions)


def test_log_note_is_written_and_human_edits_are_kept(vault: Path, repo: Path) -> None:
    (vault / "00-inbox" / "thoughts.md").write_text(
        "---\ncreated: 2026-11-29\n---\n- [ ] write the benchmark\n- [x] done thing\n"
        "We decided to keep SQLite as the only store.\n"
    )
    signal = vault / "05-signals" / "security" / "2026-11-28-advisory.md"
    signal.write_text(
        "---\ntitle: OpenSSL advisory\ntype: signal\ndomain: security\n"
        "created: 2026-11-28T09:00:00Z\ncomposite: 0.81\n---\nbody\n"
    )
    settings = CaptainsLogSettings(repos=[str(repo)], covers="previous_day")
    _log, note = write_captains_log(vault, settings, date(2026, 11, 30), tz=UTC)
    assert note.outcome == "created"
    text = note.path.read_text()
    assert note.path.name == "2026-11-30-captains-log.md"
    assert "### engine (3 commits" in text
    assert "Merge side" not in text
    assert "write the benchmark" in text and "done thing" not in text
    assert "keep SQLite as the only store" in text
    assert "[[05-signals/security/2026-11-28-advisory|OpenSSL advisory]] · security · 0.81" in text
    _, again = write_captains_log(vault, settings, date(2026, 11, 30), tz=UTC)
    assert again.outcome == "unchanged"
    note.path.write_text(text.replace("## Open loops", "## Open loops\n\nmy own line"))
    _, kept = write_captains_log(vault, settings, date(2026, 11, 30), tz=UTC)
    assert kept.outcome == "kept_edited"
    assert "my own line" in note.path.read_text()


def test_no_repositories_still_gives_notes_and_signals(vault: Path) -> None:
    log, note = write_captains_log(vault, CaptainsLogSettings(), date(2026, 12, 2), tz=UTC)
    assert log.commits == {}
    assert "No commits" in note.path.read_text()


def test_missing_repository_is_reported_not_fatal(vault: Path, tmp_path: Path) -> None:
    settings = CaptainsLogSettings(repos=[str(tmp_path / "nope")])
    log = gather(vault, settings, date(2026, 12, 2), tz=datetime.now().astimezone().tzinfo)
    assert log.commits == {}


def test_numbered_steps_are_not_decisions_and_counts_read_right(vault: Path) -> None:
    (vault / "00-inbox" / "runbook.md").write_text(
        "---\ncreated: 2026-11-27\n---\n"
        "1. Switch to the new client before deploying\n"
        "2) Replace the token with a fresh one\n"
        "We decided to keep one writer task.\n"
        "- [ ] one open loop\n",
        encoding="utf-8",
    )
    log = gather(vault, CaptainsLogSettings(), date(2026, 11, 27), tz=UTC)
    assert len(log.decisions) == 1 and "keep one writer task" in log.decisions[0]
    assert summary_line(log) == ("0 commits in 0 repositories, 1 decision, 1 open loop, 0 signals")
    assert "1 open loop." in render(log)


def test_signals_and_the_log_follow_a_configured_layout(vault: Path, repo: Path) -> None:
    signal = vault / "Signals" / "security" / "advisory.md"
    signal.parent.mkdir(parents=True)
    signal.write_text(
        "---\ntitle: OpenSSL advisory\ntype: signal\ndomain: security\n"
        "created: 2026-11-29T09:00:00Z\nscores:\n  composite: 0.77\n---\nbody\n"
    )
    settings = CaptainsLogSettings(
        repos=[str(repo)], covers="previous_day", path="Journal/{date} log.md"
    )
    _log, note = write_captains_log(vault, settings, date(2026, 11, 30), tz=UTC)
    assert note.path == vault / "Journal" / "2026-11-30 log.md"
    assert (
        "[[Signals/security/advisory|OpenSSL advisory]] · security · 0.77" in note.path.read_text()
    )


def test_a_signal_filed_near_midnight_counts_on_the_configured_zones_day(vault: Path) -> None:
    # 03:30 UTC on 2 December is 19:30 on 1 December in Los Angeles: the log of the 1st
    # (as the triage report of the 1st, which counts arrivals in that zone) lists it, the
    # log of the 2nd does not. Written with an offset, and as signaldesk's note writer
    # stamps it (this machine's local time, no offset).
    from zoneinfo import ZoneInfo

    la = ZoneInfo("America/Los_Angeles")
    instant = datetime(2026, 12, 2, 3, 30, tzinfo=UTC)
    stamps = {
        "aware": "'2026-12-02T03:30:00+00:00'",
        "naive": repr(instant.astimezone().replace(tzinfo=None).isoformat(timespec="seconds")),
    }
    folder = vault / "05-signals" / "security"
    for name, stamp in stamps.items():
        (folder / f"{name}.md").write_text(
            f"---\ntitle: {name}\ntype: signal\ndomain: security\n"
            f"created: {stamp}\ncomposite: 0.7\n---\nbody\n"
        )
    settings = CaptainsLogSettings(covers="same_day")
    first = gather(vault, settings, date(2026, 12, 1), tz=la)  # a Tuesday
    assert sorted(s.title for s in first.signals) == ["aware", "naive"]
    second = gather(vault, settings, date(2026, 12, 2), tz=la)
    assert second.signals == []


def test_links_open_notes_whose_names_a_wiki_link_cannot_carry(vault: Path) -> None:
    from tests.test_triage_report import _obsidian_targets

    (vault / "00-inbox" / "C# notes.md").write_text(
        "---\ncreated: 2026-12-01\n---\n- [ ] port the parser\nWe decided to drop .NET 6.\n"
    )
    (vault / "05-signals" / "security" / "advisory ^1.md").write_text(
        "---\ntitle: Advisory [[draft]]\ntype: signal\ndomain: security\n"
        "created: 2026-12-01T09:00:00Z\ncomposite: 0.8\n---\nbody\n"
    )
    text = render(gather(vault, CaptainsLogSettings(), date(2026, 12, 1), tz=UTC))
    lines = [line for line in text.splitlines() if "notes" in line or "Advisory" in line]
    assert len(lines) == 3, text
    for line in lines:
        targets = _obsidian_targets(vault, line)
        assert len(targets) == 1 and targets[0].is_file(), (line, targets)


def test_commit_times_are_in_the_logs_zone(vault: Path, repo: Path) -> None:
    # Authored at 23:30 on Thursday in Los Angeles: 07:30 on Friday in UTC, the zone of
    # a log that covers Friday; shown as Thursday it would read as outside the log's day.
    _commit(repo, "la.py", "v = 1\n", "Late fix from LA", "2026-11-26T23:30:00-08:00")
    log = gather(vault, CaptainsLogSettings(repos=[str(repo)]), date(2026, 11, 27), tz=UTC)
    row = next(line for line in render(log).splitlines() if "Late fix from LA" in line)
    assert row.startswith("| Fri 07:30 |"), row


def test_a_configured_repository_that_is_missing_is_said_in_the_log(
    vault: Path, repo: Path, tmp_path: Path
) -> None:
    # The log is read in Obsidian (and written by serve, whose warnings nobody reads):
    # "1 repository" must not hide that the second one configured was skipped.
    missing = tmp_path / "nope"
    settings = CaptainsLogSettings(repos=[str(repo), str(missing)])
    log = gather(vault, settings, date(2026, 11, 27), tz=UTC)
    assert [e for e in log.errors if str(missing) in e and "not a git repository" in e]
    assert "## Problems" in render(log)


_ARTICLE = (
    "The league decided to move the kickoff to 1 p.m. instead of 4:25.\n"
    "- [ ] a reader's checklist from the page\n"
)


def test_clipped_pages_are_not_the_persons_decisions_or_open_loops(vault: Path) -> None:
    # A Web Clipper note (its `clippings` tag, wherever it was moved; or anything in the
    # clipper folder) is someone else's article: "decided" in it is not a decision of
    # the day, its checkboxes are not open loops. The person's own notes still count.
    (vault / "00-inbox" / "read later.md").write_text(
        "---\ntitle: Kickoff moved\nsource: https://news.example/a\ntags:\n  - clippings\n"
        "created: 2026-12-01\n---\n" + _ARTICLE
    )
    (vault / "Clippings").mkdir(exist_ok=True)
    (vault / "Clippings" / "untagged.md").write_text("---\ncreated: 2026-12-01\n---\n" + _ARTICLE)
    (vault / "00-inbox" / "mine.md").write_text(
        "---\ncreated: 2026-12-01\nsource: https://wiki.example/deploy\n---\n"
        "We decided to run migrations before the workers start.\n- [ ] tell the team\n"
    )
    log = gather(vault, CaptainsLogSettings(), date(2026, 12, 1), tz=UTC, skip=["Clippings"])
    assert [d.split(" (")[0] for d in log.decisions] == [
        "We decided to run migrations before the workers start."
    ]
    assert [u.text for u in log.unchecked] == ["tell the team"]


def test_a_log_without_repositories_says_how_to_add_them(vault: Path, repo: Path) -> None:
    text = render(gather(vault, CaptainsLogSettings(), date(2026, 11, 28), tz=UTC))
    assert "no repositories are configured" in text and "[captains_log] repos" in text
    # Configured, with nothing that day: that is what it says.
    quiet = render(gather(vault, CaptainsLogSettings(repos=[str(repo)]), date(2026, 12, 5), tz=UTC))
    assert "No commits in the configured repositories." in quiet


def test_sections_are_one_blank_line_apart(vault: Path, repo: Path) -> None:
    # Two blank lines after the commit tables showed as a gap in reading view.
    text = render(gather(vault, CaptainsLogSettings(repos=[str(repo)]), date(2026, 11, 27), tz=UTC))
    assert "### engine" in text and "\n\n\n" not in text


def test_one_loop_written_in_the_code_and_in_notes_is_listed_once(vault: Path, repo: Path) -> None:
    # Trigger: the demo's log listed "TODO: shield the rollback from cancellation" from the
    # code and "Shield the rollback from cancellation." from the session notes as two loops.
    for name in ("thoughts", "session"):
        (vault / "00-inbox" / f"{name}.md").write_text(
            "---\ncreated: 2026-11-29\n---\n- [ ] Handle empty input.\n- [ ] write the benchmark\n"
        )
    settings = CaptainsLogSettings(repos=[str(repo)], covers="previous_day")
    log = gather(vault, settings, date(2026, 11, 30), tz=UTC)
    assert len(log.todos) + len(log.unchecked) == 6  # what was found stays as found
    loops = {loop.text: set(loop.sources) for loop in open_loops(log)}
    assert loops == {
        "TODO: handle empty input": {
            "`engine/a.py`",
            "[[00-inbox/session]]",
            "[[00-inbox/thoughts]]",
        },
        "FIXME: slow path": {"`engine/c.py`"},
        "write the benchmark": {"[[00-inbox/session]]", "[[00-inbox/thoughts]]"},
    }
    text = render(log)
    assert text.count("handle empty input") + text.count("Handle empty input") == 1
    assert "- [ ] TODO: handle empty input (`engine/a.py`; [[00-inbox/" in text
    assert summary_line(log).endswith("3 open loops, 0 signals")
    assert "3 open loops." in text
