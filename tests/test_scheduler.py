"""`signaldesk serve`: the runner (failures, timeouts, clean stops), the watcher, and the
real process under a schedule of seconds, stopped with SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

import signaldesk.pipeline.service.watcher as watcher_module
from signaldesk.pipeline.config import Workspace, render_default_config, resolve_workspace
from signaldesk.pipeline.intake.feeds import FeedRegistry
from signaldesk.pipeline.ledger.store import open_ledger
from signaldesk.pipeline.service.job_state import (
    ServeLock,
    ServiceRunningError,
    load_state,
    state_path,
)
from signaldesk.pipeline.service.jobs import (
    JobServices,
    captains_log_job,
    report_day,
    report_job,
)
from signaldesk.pipeline.service.scheduler import JOB_NAMES, JobSpec, _last_scheduled, serve
from signaldesk.pipeline.service.watcher import (
    VaultListing,
    VaultWatcher,
    vault_listing,
)
from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.retrieval.settings import IndexSettings
from signaldesk.retrieval.store import connect, index_db_path
from tests.feedserver import FeedServer
from tests.intake_data import clipping_note, serve_feeds

pytestmark = pytest.mark.anyio


# -- units ---------------------------------------------------------------------------


def test_watcher_reports_a_change_once_it_has_settled() -> None:
    now = [0.0]
    watcher = VaultWatcher(Path("."), debounce=2.0, clock=lambda: now[0])
    assert watcher.observe("a") is False  # the starting point
    assert watcher.observe("a") is False
    now[0] = 1.0
    assert watcher.observe("b") is False and watcher.dirty  # changed, not settled yet
    now[0] = 2.0
    assert watcher.observe("c") is False  # still changing
    now[0] = 3.5
    assert watcher.observe("c") is False  # quiet for 1.5 s only
    now[0] = 4.0
    assert watcher.observe("c") is True  # quiet for 2 s: index now
    now[0] = 10.0
    assert watcher.observe("c") is False and not watcher.dirty  # reported once


def test_the_vault_listing_sees_edits_and_ignores_excluded_folders(vault: Path) -> None:
    note = vault / "01-projects" / "a.md"
    note.write_text("one\n")
    listing = vault_listing(vault)
    first, count = listing.signature, len(listing.entries)
    assert count == 1
    (vault / ".signaldesk").mkdir(exist_ok=True)
    (vault / ".signaldesk" / "x.md").write_text("state, not a note\n")
    (vault / "07-templates" / "t.md").write_text("template\n")
    assert vault_listing(vault).signature == first
    note.write_text("one, edited in place\n")
    assert vault_listing(vault).signature != first


def test_last_scheduled_fire_time_of_a_daily_job() -> None:
    trigger = CronTrigger(hour=7, minute=0, timezone=UTC)
    assert _last_scheduled(trigger, datetime(2026, 11, 30, 8, 0, tzinfo=UTC)) == datetime(
        2026, 11, 30, 7, 0, tzinfo=UTC
    )
    assert _last_scheduled(trigger, datetime(2026, 11, 30, 6, 59, tzinfo=UTC)) == datetime(
        2026, 11, 29, 7, 0, tzinfo=UTC
    )


def test_scheduled_report_covers_the_configured_day() -> None:
    day = datetime(2026, 11, 30).date()
    assert report_day(day, "previous_day").isoformat() == "2026-11-29"
    assert report_day(day, "same_day") == day


# -- the runner, in process -------------------------------------------------------------


def _spec(name: str, func: object, *, every: float = 0.05, timeout: float = 5.0) -> JobSpec:
    return JobSpec(name, name, func, IntervalTrigger(seconds=every), timeout, 1)  # type: ignore[arg-type]


async def _wait_for(condition: object, limit: float = 20.0) -> None:
    with anyio.fail_after(limit):
        while not condition():  # type: ignore[operator]
            await anyio.sleep(0.02)


async def test_a_failing_and_a_hanging_job_do_not_stop_the_others(vault: Path) -> None:
    ws = resolve_workspace(vault)
    stop = anyio.Event()
    good_runs = 0

    async def good(_: JobServices) -> str:
        nonlocal good_runs
        good_runs += 1
        return f"run {good_runs}"

    async def boom(_: JobServices) -> str:
        raise RuntimeError("the source broke")

    async def hang(_: JobServices) -> str:
        await anyio.sleep_forever()
        return "never"

    specs = [_spec("good", good), _spec("boom", boom), _spec("hang", hang, timeout=0.1)]
    result: dict[str, object] = {}

    async def run() -> None:
        result["state"] = await serve(
            ws, stop=stop, handle_signals=False, specs=specs, embedder=LazyEmbedder(ws.config.index)
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        path = state_path(vault)

        def settled() -> bool:
            state = load_state(path)
            if state is None:
                return False
            jobs = state.jobs
            return (
                good_runs >= 5
                and jobs.get("boom") is not None
                and jobs["boom"].failures >= 2
                and jobs.get("hang") is not None
                and jobs["hang"].failures >= 2
            )

        await _wait_for(settled)
        stop.set()
    state = load_state(state_path(vault))
    assert state is not None and state.clean_exit is True and state.ready is False
    boom_state, hang_state = state.jobs["boom"], state.jobs["hang"]
    assert boom_state.outcome == "error" and "the source broke" in (boom_state.error or "")
    assert hang_state.outcome == "timeout" and "timed out" in (hang_state.error or "")
    assert state.jobs["good"].outcome == "ok" and state.jobs["good"].failures == 0


async def test_stop_lets_the_running_step_finish(vault: Path) -> None:
    ws = resolve_workspace(vault)
    stop = anyio.Event()
    started, finished = anyio.Event(), anyio.Event()

    async def slow(_: JobServices) -> str:
        started.set()
        await anyio.sleep(0.3)  # the work being done when the stop arrives
        finished.set()
        return "done"

    async def run() -> None:
        await serve(ws, stop=stop, handle_signals=False, specs=[_spec("slow", slow, every=60)])

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(20):
            await started.wait()
        stop.set()
    assert finished.is_set()
    state = load_state(state_path(vault))
    assert state is not None and state.clean_exit is True
    assert state.jobs["slow"].outcome == "ok"


async def test_a_job_still_running_after_the_grace_is_cancelled(vault: Path) -> None:
    (vault / "signaldesk.toml").write_text(
        render_default_config({"schedule": {"shutdown_grace": 0.1}})
    )
    ws = resolve_workspace(vault)
    stop = anyio.Event()
    started = anyio.Event()

    async def stuck(_: JobServices) -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    async def run() -> None:
        await serve(ws, stop=stop, handle_signals=False, specs=[_spec("stuck", stuck, every=60)])

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(20):
            await started.wait()
        stop.set()
    state = load_state(state_path(vault))
    assert state is not None and state.clean_exit is False
    assert state.jobs["stuck"].outcome == "cancelled"


async def test_one_serve_per_vault(vault: Path) -> None:
    ws = resolve_workspace(vault)
    with ServeLock(vault).held(), pytest.raises(ServiceRunningError):
        await serve(ws, handle_signals=False, specs=[])


# -- the real process ----------------------------------------------------------------------


def _test_config(vault: Path) -> None:
    schedule = {
        "feeds_interval": 1.0,
        "drops_interval": 1.0,
        "triage_interval": 1.0,
        "index_interval": 600.0,  # after the first run, only edits (the watcher) index
        "watch_interval": 0.5,
        "watch_debounce": 0.2,
        "report_time": "00:00",  # passed today, never run: caught up at start
        "log_time": "00:00",
        "shutdown_grace": 20.0,
    }
    (vault / "signaldesk.toml").write_text(
        render_default_config({"vault": {"path": str(vault)}, "schedule": schedule})
    )


@pytest.fixture
def server() -> Iterator[FeedServer]:
    with FeedServer() as s:
        yield s


def _state(vault: Path) -> dict[str, object]:
    try:
        data: dict[str, object] = json.loads(state_path(vault).read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return data


def _indexed(vault: Path, rel: str) -> bool:
    db = index_db_path(vault, IndexSettings())
    if not db.exists():
        return False
    conn = connect(db, readonly=True)
    try:
        return conn.execute("SELECT 1 FROM notes WHERE path = ?", (rel,)).fetchone() is not None
    finally:
        conn.close()


async def _subscribe(ws: Workspace, urls: tuple[str, ...]) -> None:
    async with open_ledger(ws) as ledger:
        for url in urls:
            await FeedRegistry(ledger).add(url)


@pytest.mark.slow
async def test_serve_runs_every_job_and_stops_cleanly_on_sigterm(
    vault: Path, server: FeedServer
) -> None:
    _test_config(vault)
    ws = resolve_workspace(vault)
    feeds = serve_feeds(server, 1, 3)
    await _subscribe(ws, feeds.urls)
    clipping_note(
        vault / "Clippings",
        "clip.md",
        title="A clipped article about SQLite",
        source="https://example.com/clip",
        body="SQLite WAL mode and busy timeouts. " * 40,
    )
    env = {**os.environ, "SIGNALDESK_VAULT": str(vault)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "signaldesk", "-v", "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        with anyio.fail_after(90):
            while not _state(vault).get("ready"):
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                await anyio.sleep(0.1)
            assert _state(vault)["pid"] == proc.pid

            def runs(state: dict[str, object]) -> dict[str, int]:
                jobs = state.get("jobs") or {}
                assert isinstance(jobs, dict)
                return {name: int(job.get("runs") or 0) for name, job in jobs.items()}

            while not all(runs(_state(vault)).get(name, 0) >= 1 for name in JOB_NAMES):
                assert proc.poll() is None
                await anyio.sleep(0.1)
            # An edit made while serving is picked up by the watcher and indexed.
            (vault / "01-projects" / "edited.md").write_text("# Edited while serving\n")
            while not _indexed(vault, "01-projects/edited.md"):
                assert proc.poll() is None
                await anyio.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    text = output.decode(errors="replace")
    assert proc.returncode == 0, text
    assert "stopped cleanly" in text

    state = load_state(state_path(vault))
    assert state is not None and state.ready is False and state.clean_exit is True
    failed = {n: j.error for n, j in state.jobs.items() if j.failures}
    assert not failed, failed
    assert {n for n, j in state.jobs.items() if j.runs >= 1} >= set(JOB_NAMES)
    # Nothing half-written anywhere: atomic writes leave no temporary files.
    leftovers = [p for p in vault.rglob("*.tmp")]
    assert not leftovers, leftovers
    today = datetime.now().astimezone().date()
    # Each morning serve writes the log of the day before (a log covers its own day).
    yesterday = today - timedelta(days=1)
    assert (vault / "06-daily" / f"{yesterday.isoformat()}-captains-log.md").is_file()
    assert list((vault / "06-daily").glob("*-triage.md"))
    # The feed's entries and the clipping went all the way through triage.
    async with open_ledger(ws) as ledger:
        counts = await ledger.status_counts()
    assert sum(n for (kind, _), n in counts.items() if kind == "rss") == 3
    assert {status for _, status in counts} <= {"filed", "rejected"}, counts
    assert ("clipper", "filed") in counts or ("clipper", "rejected") in counts


async def test_the_watcher_hands_over_the_notes_that_changed(vault: Path) -> None:
    (vault / "01-projects" / "a.md").write_text("one\n")
    (vault / "01-projects" / "b.md").write_text("two\n")
    now = [0.0]
    watcher = VaultWatcher(vault, debounce=0.0, clock=lambda: now[0])
    assert await watcher.poll() is False and watcher.take_changes() == []
    now[0] += 60.0  # past the CPU budget's wait
    (vault / "01-projects" / "a.md").write_text("one, edited\n")
    (vault / "01-projects" / "b.md").unlink()
    (vault / "01-projects" / "c.md").write_text("three\n")
    assert await watcher.poll() is True
    assert watcher.take_changes() == ["01-projects/a.md", "01-projects/b.md", "01-projects/c.md"]
    assert watcher.take_changes() == []


async def test_an_unreadable_folder_asks_for_a_whole_look(vault: Path) -> None:
    (vault / "02-areas" / "x.md").write_text("x\n")
    watcher = VaultWatcher(vault, debounce=0.0)
    await watcher.poll()
    listing = vault_listing(vault)
    watcher._note_paths(VaultListing({}, "other", complete=False))
    assert watcher.take_changes() is None  # its notes are not known to be gone
    watcher._note_paths(listing)
    assert watcher.take_changes() == ["02-areas/x.md"]


async def test_watcher_scans_a_large_vault_less_often(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (vault / "01-projects" / "a.md").write_text("one\n")
    now = [0.0]

    def slow_scan(path: Path) -> VaultListing:
        now[0] += 1.0  # this scan "takes" one second
        return vault_listing(path)

    monkeypatch.setattr(watcher_module, "vault_listing", slow_scan)
    watcher = VaultWatcher(vault, debounce=0.0, clock=lambda: now[0])
    await watcher.poll()
    assert not watcher.skipped
    now[0] += 5.0  # the next tick: too soon for the CPU budget of a 1 s scan
    await watcher.poll()
    assert watcher.skipped
    now[0] += 20.0
    (vault / "01-projects" / "a.md").write_text("one, edited\n")
    assert await watcher.poll() is True and not watcher.skipped


def test_ctrl_c_right_after_the_ready_line_stops_serve_cleanly(vault: Path) -> None:
    """The line that says "Ctrl-C stops" is printed only once a Ctrl-C is a clean stop:
    a script (the README tour's test) that signals the moment it reads it must not meet
    Python's default handler, half-way through the start-up."""
    _test_config(vault)
    env = {**os.environ, "SIGNALDESK_VAULT": str(vault)}
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-m", "signaldesk", "serve"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        try:
            for line in proc.stderr:
                if "Ctrl-C stops" in line:
                    proc.send_signal(signal.SIGINT)
                    break
            _, rest = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stderr.close()
        assert proc.returncode == 0, rest
        assert "stopped cleanly" in rest
        assert "ERROR" not in rest and "raised an exception" not in rest, rest


# -- the daily jobs: the day they write is the day of the run they answer -----------------


def _daily_services(ws: Workspace, clock: datetime) -> JobServices:
    return JobServices(
        workspace=ws,
        embedder=LazyEmbedder(ws.config.index),
        tz=UTC,
        trigger=lambda _name: None,
        watcher=VaultWatcher(ws.vault, 1.0),
        clock=lambda: clock,
    )


def _daily_config(vault: Path, schedule: dict[str, object], covers: str = "same_day") -> Workspace:
    (vault / "signaldesk.toml").write_text(
        render_default_config(
            {
                "vault": {"path": str(vault)},
                "schedule": {"timezone": "UTC", **schedule},
                "captains_log": {"covers": covers},
            }
        )
    )
    return resolve_workspace(vault=vault)


async def test_an_evening_report_caught_up_after_midnight_is_the_missed_days(vault: Path) -> None:
    # Due at 21:00 on the 30th, serve was stopped then and starts at 08:00 on the 1st:
    # the report caught up is the 30th's (the 1st's is due tonight), not a morning's worth
    # of the 1st under the 1st's name while the 30th's is never written.
    ws = _daily_config(vault, {"report_time": "21:00", "report_day": "same_day"})
    summary = await report_job(_daily_services(ws, datetime(2026, 12, 1, 8, 0, tzinfo=UTC)))
    assert summary.startswith("06-daily/2026-11-30-triage.md created"), summary
    assert not (vault / "06-daily" / "2026-12-01-triage.md").exists()
    # On time (or late the same evening) it is that day's.
    summary = await report_job(_daily_services(ws, datetime(2026, 12, 1, 21, 0, 5, tzinfo=UTC)))
    assert summary.startswith("06-daily/2026-12-01-triage.md created"), summary


async def test_a_morning_report_caught_up_before_its_time_is_the_missed_mornings(
    vault: Path,
) -> None:
    # Default: at 07:00 the report on the day before. Started at 06:00 on the 2nd after
    # missing 07:00 on the 1st: the missed run was the report on the 30th.
    ws = _daily_config(vault, {"report_time": "07:00", "report_day": "previous_day"})
    summary = await report_job(_daily_services(ws, datetime(2026, 12, 2, 6, 0, tzinfo=UTC)))
    assert summary.startswith("06-daily/2026-11-30-triage.md created"), summary


async def test_a_late_captains_log_is_the_day_of_its_scheduled_run(vault: Path) -> None:
    # A log that covers the day before it is dated ("previous_day"), due at 23:30, run
    # past midnight (within the misfire grace): the log dated the 30th, covering the 29th.
    ws = _daily_config(vault, {"log_time": "23:30"}, covers="previous_day")
    summary = await captains_log_job(_daily_services(ws, datetime(2026, 12, 1, 0, 20, tzinfo=UTC)))
    assert summary.startswith("06-daily/2026-11-30-captains-log.md created"), summary


async def test_a_kept_report_reads_as_such_in_status(vault: Path) -> None:
    ws = _daily_config(vault, {"report_time": "07:00", "report_day": "previous_day"})
    services = _daily_services(ws, datetime(2026, 12, 2, 8, 0, tzinfo=UTC))
    await report_job(services)
    note = vault / "06-daily" / "2026-12-01-triage.md"
    note.write_text(note.read_text() + "\nMy own remark.\n")
    summary = await report_job(services)
    assert summary.startswith("06-daily/2026-12-01-triage.md kept (edited by hand):"), summary


async def test_serve_writes_every_report_missed_while_it_was_stopped(vault: Path) -> None:
    # Stopped for a long weekend: at start, each morning report it missed is written
    # (the oldest first), not only the last one.
    from signaldesk.pipeline.service.job_state import JobState, ServeState, save_state
    from signaldesk.pipeline.service.scheduler import build_specs

    ws = _daily_config(vault, {"report_time": "00:00", "report_day": "previous_day"})
    today = datetime.now(UTC).date()
    midnight = datetime(today.year, today.month, today.day, tzinfo=UTC)
    last = midnight - timedelta(days=3) + timedelta(seconds=30)  # its run 3 days ago went well
    save_state(
        state_path(vault),
        ServeState(
            pid=1,
            started_at=last,
            stopped_at=last,
            clean_exit=True,
            jobs={
                "report": JobState(
                    "report", last_started=last, outcome="ok", runs=1, last_success=last
                )
            },
        ),
    )
    specs = [s for s in build_specs(ws.config.schedule, UTC) if s.name == "report"]
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            await serve(ws, stop=stop, handle_signals=False, specs=specs)

        tg.start_soon(run)

        def reported() -> bool:
            state = load_state(state_path(vault))
            return state is not None and state.jobs["report"].runs >= 2

        await _wait_for(reported)
        stop.set()
    written = sorted(p.name for p in (vault / "06-daily").glob("*-triage.md"))
    owed = [(today - timedelta(days=n)).isoformat() + "-triage.md" for n in (3, 2, 1)]
    assert written == owed
    summary = load_state(state_path(vault)).jobs["report"].summary  # type: ignore[union-attr]
    assert summary is not None and "2 missed before it" in summary, summary
