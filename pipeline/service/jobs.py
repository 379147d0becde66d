"""The jobs `signaldesk serve` runs: each one step of work that returns a one-line summary.

A job knows nothing of scheduling; :mod:`pipeline.service.scheduler` decides when it
runs, bounds it with a timeout and records how it went. Jobs that write into the
vault ask for an index run afterwards through ``trigger``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo

import anyio
import anyio.to_thread

from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.intake.summary import ScanStats
from signaldesk.pipeline.ledger.index_queue import forget_indexed
from signaldesk.pipeline.reports.captains_log import write_captains_log
from signaldesk.pipeline.reports.generated_notes import GeneratedNote
from signaldesk.pipeline.reports.triage_report import write_triage_report
from signaldesk.pipeline.service.watcher import VaultWatcher
from signaldesk.pipeline.triage.records import TriageReport
from signaldesk.pipeline.triage.run import scan_and_triage, triage
from signaldesk.retrieval.backends import make_indexer
from signaldesk.retrieval.embedder import Embedder
from signaldesk.retrieval.errors import IndexLockedError
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.records import IndexReport

__all__ = [
    "DROP_SOURCES",
    "JobFunc",
    "JobServices",
    "captains_log_job",
    "drops_job",
    "feeds_job",
    "index_job",
    "report_day",
    "report_job",
    "triage_job",
    "watch_job",
]

logger = logging.getLogger(__name__)

DROP_SOURCES = ("clipper", "newsletter", "tool_output")
_STOPPING = "not started: serve is stopping"


@dataclass
class JobServices:
    """What the jobs share for the life of one `serve` process.

    :param embedder: one embedding model for scoring and indexing, loaded once.
    :param trigger: ask for a job to run soon (coalesced with a run already queued).
    """

    workspace: Workspace
    embedder: Embedder
    tz: tzinfo
    trigger: Callable[[str], None]
    watcher: VaultWatcher
    clock: Callable[[], datetime] = field(default=lambda: datetime.now().astimezone())
    # Scans and triage runs take turns: each sweeps the ledger's pending items, and two
    # sweeps at once would score (and try to file) the same item twice.
    intake_lock: anyio.Lock = field(default_factory=anyio.Lock)
    stopping: Callable[[], bool] = field(default=lambda: False)
    # Per daily job, the days of runs missed while serve was stopped before the latest
    # one (which the catch-up run answers): that run writes these first, oldest first.
    owed: dict[str, list[date]] = field(default_factory=dict)

    def scheduled_day(self, at: str) -> date:
        """The date of the latest daily ``at`` (HH:MM local) at or before now: the run a
        daily job answers, also when it starts late past midnight (within the misfire
        grace) or catches up at start a run missed while serve was stopped."""
        local = self.clock().astimezone(self.tz)
        hour, minute = (int(part) for part in at.split(":"))
        passed = (local.hour, local.minute) >= (hour, minute)
        return local.date() if passed else local.date() - timedelta(days=1)


JobFunc = Callable[[JobServices], Awaitable[str]]


def _scan_summary(stats: ScanStats, report: TriageReport | None) -> str:
    t = stats.totals
    text = f"{t.new} new, {t.duplicate} duplicate, {t.parked} parked"
    if stats.feeds_due or stats.feeds_polled:
        text = f"{stats.feeds_polled}/{stats.feeds_due} due feeds polled; " + text
    if report is not None and report.decisions:
        text += f"; filed {len(report.filed)}, rejected {len(report.rejected)}"
    return text + _not_indexed(report)


def _not_indexed(report: TriageReport | None) -> str:
    # The paths stay queued in the ledger; the index job the caller triggers catches up.
    return f"; not indexed: {report.index_error}" if report and report.index_error else ""


async def feeds_job(services: JobServices) -> str:
    """Poll the feeds that are due (each keeps its own next check time) and triage what came."""
    async with services.intake_lock:
        if services.stopping():  # waited for the lock while a stop came: start nothing
            return _STOPPING
        stats, report = await scan_and_triage(
            services.workspace, sources=("rss",), embedder=services.embedder
        )
    if report is not None and (report.written or report.index_error):
        services.trigger("index")
    return _scan_summary(stats, report)


async def drops_job(services: JobServices) -> str:
    """Read the clipper, newsletter and tool-output drops and triage what came."""
    async with services.intake_lock:
        if services.stopping():
            return _STOPPING
        stats, report = await scan_and_triage(
            services.workspace, sources=DROP_SOURCES, embedder=services.embedder
        )
    if report is not None and (report.written or report.index_error):
        services.trigger("index")
    return _scan_summary(stats, report)


async def triage_job(services: JobServices) -> str:
    """Triage whatever is still pending (a scan interrupted earlier, a config change)."""
    async with services.intake_lock:
        if services.stopping():
            return _STOPPING
        report = await triage(services.workspace, embedder=services.embedder)
    if report.written or report.index_error:
        services.trigger("index")
    return f"filed {len(report.filed)}, rejected {len(report.rejected)}" + _not_indexed(report)


def _indexer(services: JobServices) -> Indexer:
    workspace = services.workspace
    return make_indexer(
        workspace.vault,
        workspace.config.index,
        services.embedder,
        vault_name=workspace.vault_name,
        postgres=workspace.config.postgres,
    )


def _index_summary(report: IndexReport) -> str:
    text = (
        f"{report.added} added, {report.changed} changed, {report.deleted} deleted, "
        f"{report.chunks_embedded} chunks embedded"
    )
    if report.errors:
        text += f"; {len(report.errors)} file(s) skipped"
    return text


async def index_job(services: JobServices) -> str:
    """Bring the index up to date with the vault (incremental)."""
    started = datetime.now(UTC)
    report = await _indexer(services).run()
    if not report.interrupted:
        # A whole run saw every note, including those the ledger queued for indexing.
        await forget_indexed(services.workspace, started)
    return _index_summary(report)


# More notes than this changed in one burst (a git pull, a sync) go to a whole index
# run, which plans them from one stat scan rather than path by path.
WATCH_PATHS_MAX = 500


async def watch_job(services: JobServices) -> str:
    """Stat the vault; once an edit has settled, index the notes that changed."""
    watcher = services.watcher
    if await watcher.poll():
        changed = watcher.take_changes()
        if changed is None or len(changed) > WATCH_PATHS_MAX:
            services.trigger("index")
            return f"vault changed ({watcher.notes} notes): indexing"
        try:
            report = await _indexer(services).run(paths=changed)
        except IndexLockedError:
            services.trigger("index")  # another run holds the index; the next one sees these
            return f"vault changed ({len(changed)} notes): indexing after the run in progress"
        return f"vault changed ({len(changed)} notes): " + _index_summary(report)
    # A poll skipped for the CPU budget reads the same as "no change", so the state
    # file is not rewritten for it.
    state = "changes settling" if watcher.dirty else "no change"
    return f"{state} ({watcher.notes} notes)"


def _said(note: GeneratedNote) -> str:
    """What became of a daily note, in the words `status` shows."""
    return "kept (edited by hand)" if note.outcome == "kept_edited" else note.outcome


def report_day(today: date, which: str) -> date:
    """The day the scheduled report covers: ``previous_day`` or ``same_day``."""
    return today - timedelta(days=1) if which == "previous_day" else today


async def _daily_notes(
    services: JobServices,
    name: str,
    at: str,
    write: Callable[[date], Awaitable[tuple[GeneratedNote, str]]],
) -> str:
    """Write the daily note of each run this one answers (those owed from before start,
    then its own), asking for an index run when one changed; the last one's summary."""
    days = [*services.owed.pop(name, []), services.scheduled_day(at)]
    summary = ""
    for run_day in days:
        note, counts = await write(run_day)
        if note.outcome in ("created", "updated"):
            services.trigger("index")
        rel = note.path.relative_to(services.workspace.vault).as_posix()
        summary = f"{rel} {_said(note)}: {counts}"
    owed = len(days) - 1
    return summary + (f" (and {owed} missed before it, written too)" if owed else "")


async def report_job(services: JobServices) -> str:
    """Write the daily triage report (and any missed while serve was stopped)."""
    workspace = services.workspace
    schedule = workspace.config.schedule

    async def write(run_day: date) -> tuple[GeneratedNote, str]:
        day = report_day(run_day, schedule.report_day)
        report, note = await write_triage_report(workspace, day, tz=services.tz)
        return note, f"{len(report.items)} arrived, {len(report.filed)} filed"

    return await _daily_notes(services, "report", schedule.report_time, write)


async def captains_log_job(services: JobServices) -> str:
    """Write the daily captain's log (each morning: yesterday's, when a log covers its own
    day), and any missed while serve was stopped."""
    workspace = services.workspace
    covers_own_day = workspace.config.captains_log.covers == "same_day"

    async def write(run_day: date) -> tuple[GeneratedNote, str]:
        day = run_day - timedelta(days=1) if covers_own_day else run_day
        log, note = await anyio.to_thread.run_sync(
            functools.partial(
                write_captains_log,
                workspace.vault,
                workspace.config.captains_log,
                day,
                tz=services.tz,
                skip=[workspace.config.clipper.folder],
            )
        )
        commits = sum(len(c) for c in log.commits.values())
        return note, f"{commits} commits, {len(log.signals)} signals"

    return await _daily_notes(services, "captains_log", workspace.config.schedule.log_time, write)
