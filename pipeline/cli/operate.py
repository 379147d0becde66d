"""`signaldesk serve`, `status`, `report`, `log` and `demo`: running signaldesk day to day."""

from __future__ import annotations

import logging
import os
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Any

import anyio
import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from signaldesk.pipeline.cli._context import AppContext
from signaldesk.pipeline.cli._demo_view import DemoView
from signaldesk.pipeline.cli._hints import with_vault
from signaldesk.pipeline.cli._index_note import index_note
from signaldesk.pipeline.cli._output import print_json, to_jsonable
from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.demo.tour import DEFAULT_DEMO_DIR, run_demo
from signaldesk.pipeline.ledger.store import open_ledger
from signaldesk.pipeline.reports.captains_log import (
    gather,
    log_path,
    open_loops,
    summary_line,
    write_captains_log,
)
from signaldesk.pipeline.reports.generated_notes import GeneratedNote
from signaldesk.pipeline.reports.triage_report import (
    FeedIssue,
    TriageReportNote,
    gather_triage_report,
    report_path,
    write_triage_report,
)
from signaldesk.pipeline.reports.triage_report import summary_line as report_summary
from signaldesk.pipeline.service.job_state import state_path
from signaldesk.pipeline.service.scheduler import ScheduleError, resolve_timezone
from signaldesk.pipeline.service.scheduler import serve as run_serve
from signaldesk.pipeline.service.status import ServiceStatus, gather_status

__all__ = ["COMMANDS", "demo", "log", "report", "serve", "status"]


def _when(value: datetime | None, tz: tzinfo) -> str:
    """A time in the configured zone: the one report_time and log_time are set in."""
    if value is None:
        return "-"
    local = value.astimezone(tz)
    today = datetime.now(tz).date()
    return local.strftime("%H:%M:%S" if local.date() == today else "%m-%d %H:%M")


def _next_check(feed: FeedIssue, tz: tzinfo) -> str:
    """When a feed in backoff is tried again (a disabled one is not)."""
    if feed.state != "backoff":
        return "-"
    return _when(feed.next_check_at, tz) if feed.next_check_at else "next scan"


def _rel(path: Path, vault: Path) -> str:
    try:
        return path.relative_to(vault).as_posix()
    except ValueError:
        return str(path)


@click.command()
@click.pass_obj
def serve(app: AppContext) -> None:
    """Run everything on the schedule in [schedule] until SIGINT/SIGTERM.

    Polls due feeds, reads the drop folders, triages, keeps the index fresh as the
    vault changes, and writes the daily triage report and captain's log. A stop
    lets the running job finish (up to `shutdown_grace` seconds) and exits 0.
    """
    workspace = app.workspace()
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        # APScheduler logs every run at INFO; our own job lines say the same more briefly.
        logging.getLogger("apscheduler").setLevel(logging.WARNING)
    err = Console(stderr=True)

    def ready() -> None:
        err.print(
            f"signaldesk serve: {workspace.vault} (pid {os.getpid()}); "
            "`signaldesk status` shows the jobs; Ctrl-C stops",
            markup=False,
            highlight=False,
        )

    # Imported here: the search verb's module loads the retriever, which only serve needs.
    from signaldesk.pipeline.cli._search_answer import answer_forwarded

    state = anyio.run(lambda: run_serve(workspace, on_ready=ready, search_answer=answer_forwarded))
    err.print(
        "stopped cleanly" if state.clean_exit else "stopped (running jobs were cancelled)",
        highlight=False,
    )


def _status_json(status: ServiceStatus) -> dict[str, Any]:
    state = status.state
    return {
        "vault": status.vault,
        "running": status.running,
        "pid": state.pid if state and status.running else None,
        "started_at": state.started_at if state else None,
        "stopped_at": state.stopped_at if state else None,
        "jobs": list(state.jobs.values()) if state else [],
        "feeds": {"total": status.feeds_total, "issues": status.feed_issues},
        "items": status.items,
        "index": status.index,
    }


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_obj
def status(app: AppContext, as_json: bool) -> None:
    """Show the scheduler's jobs, feeds in backoff or disabled, the ledger and the index."""
    workspace = app.workspace()
    snapshot = anyio.run(lambda: gather_status(workspace))
    if as_json:
        print_json(_status_json(snapshot))
        return
    console = app.console
    try:
        tz = resolve_timezone(workspace.config.schedule.timezone)
    except ScheduleError as exc:
        # status is where a person looks when serve will not start: it still answers.
        tz = resolve_timezone(None)
        console.print(
            f"[yellow]warning:[/] [schedule] timezone: {escape(exc.message)} "
            "(serve, report and log refuse it); times below are in the machine's zone",
            highlight=False,
        )
    state = snapshot.state
    if snapshot.running and state is not None:
        console.print(
            f"[green]serve is running[/] (pid {state.pid}, since {_when(state.started_at, tz)})",
            highlight=False,
        )
    elif state is not None and state.stopped_at is not None:
        console.print(
            f"[yellow]serve is not running[/] (last stopped {_when(state.stopped_at, tz)})",
            highlight=False,
        )
    elif state is not None:
        console.print(
            f"[red]serve is not running[/]: the one started {_when(state.started_at, tz)} "
            "ended without stopping cleanly (see its log)",
            highlight=False,
        )
    elif snapshot.running:
        console.print(
            "[green]serve is running[/] (its state file cannot be read yet)", highlight=False
        )
    elif state_path(workspace.vault).exists():
        console.print(
            "[yellow]serve is not running[/] (its state file cannot be read; the next "
            f"{escape(with_vault('`signaldesk serve`', app.vault_argument))} writes a new one)",
            highlight=False,
            soft_wrap=True,  # a command pastes as it reads
        )
    else:
        console.print(
            "[yellow]serve is not running[/] (never started for this vault: "
            f"{escape(with_vault('`signaldesk serve`', app.vault_argument))})",
            highlight=False,
            soft_wrap=True,  # a command pastes as it reads
        )
    if state is not None and state.jobs:
        table = Table(title="jobs", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        for column in ("job", "last run", "outcome", "next run", "runs/failed"):
            table.add_column(column, no_wrap=True)
        table.add_column("detail", overflow="fold", ratio=1)
        colours = {"ok": "green", "error": "red", "timeout": "red", "cancelled": "yellow"}
        for job in state.jobs.values():
            outcome = job.outcome or "-"
            took = f" {job.duration:.1f}s" if job.duration is not None else ""
            table.add_row(
                job.name,
                _when(job.last_started, tz),
                Text(outcome, style=colours.get(outcome, "cyan")) + took,
                _when(job.next_run, tz) if snapshot.running else "-",
                f"{job.runs}/{job.failures}",
                Text(job.error or job.summary or job.description),
            )
        console.print(table)
    console.print(
        f"feeds: {snapshot.feeds_total} subscribed, "
        f"{sum(f.state == 'backoff' for f in snapshot.feed_issues)} in backoff, "
        f"{sum(f.state == 'disabled' for f in snapshot.feed_issues)} disabled",
        highlight=False,
    )
    if snapshot.feed_issues:
        feeds = Table(title="feeds needing attention", title_justify="left")
        for column in ("feed", "state", "errors", "last error", "next check"):
            feeds.add_column(column, overflow="fold")
        for f in snapshot.feed_issues:
            feeds.add_row(
                Text(f.title or f.url),
                f.state,
                str(f.error_count),
                Text(f.last_error or ""),
                _next_check(f, tz),
            )
        console.print(feeds)
    if snapshot.items:
        console.print(
            "items: " + ", ".join(f"{n} {s}" for s, n in snapshot.items.items()), highlight=False
        )
    index = snapshot.index
    if index is not None:
        if index.exists:
            console.print(
                f"index: {index.notes} notes, {index.chunks} chunks, "
                f"last indexed {_when(index.last_indexed, tz)}"
                + (
                    f"; degraded: {with_vault('; '.join(index.degraded), app.vault_argument)}"
                    if index.degraded
                    else ""
                ),
                markup=False,
                highlight=False,
            )
        else:
            console.print(
                f"index: none yet ({escape(with_vault('`signaldesk index`', app.vault_argument))})",
                highlight=False,
                soft_wrap=True,  # a command pastes as it reads
            )
    console.print(
        f"[dim]state file: {escape(str(state_path(workspace.vault)))}[/]", highlight=False
    )


def _parse_day(value: str | None, timezone: str | None, *, writing: bool) -> date:
    """The day asked for (default today); a note is never written for a day to come."""
    today = datetime.now(resolve_timezone(timezone)).date()
    if value is None:
        return today
    try:
        day = date.fromisoformat(value)
    except ValueError as exc:
        raise click.BadParameter(
            f"{value!r} is not a date (YYYY-MM-DD)", param_hint="--date"
        ) from exc
    if writing and day > today:
        raise click.BadParameter(
            f"{day.isoformat()} has not happened yet (today is {today.isoformat()}); "
            "--json shows what it would hold without writing anything",
            param_hint="--date",
        )
    return day


_DATE_HELP = "The day (YYYY-MM-DD; default: today)."
_JSON_HELP = "Print what the {what} contains as JSON; nothing is written."


@click.command()
@click.option("--date", "day_text", metavar="YYYY-MM-DD", help=_DATE_HELP)
@click.option("--json", "as_json", is_flag=True, help=_JSON_HELP.format(what="report"))
@click.pass_obj
def report(app: AppContext, day_text: str | None, as_json: bool) -> None:
    """Write the triage report of a day into the vault (06-daily/ by default)."""
    workspace = app.workspace()
    timezone = workspace.config.schedule.timezone
    day = _parse_day(day_text, timezone, writing=not as_json)
    tz = resolve_timezone(timezone)
    if as_json:

        async def _gather() -> TriageReportNote:
            async with open_ledger(workspace) as ledger:
                return await gather_triage_report(workspace, ledger, day, tz=tz)

        result = anyio.run(_gather)
        print_json(_report_json(result, report_path(workspace, day)))
        return
    result, note = anyio.run(lambda: write_triage_report(workspace, day, tz=tz))
    _print_note(app.console, note, workspace.vault)
    _index_written(app.console, note, workspace)
    app.console.print(report_summary(result), highlight=False)


def _report_json(result: TriageReportNote, path: Path) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(result)
    data["path"] = str(path)
    data["worth_a_look"] = [i.id for i in result.near_misses]
    return data


def _print_note(console: Console, note: GeneratedNote, vault: Path) -> None:
    messages = {
        "created": "[green]written[/]",
        "updated": "[green]updated[/]",
        "unchanged": "unchanged",
        "kept_edited": "[yellow]kept: edited by hand (delete it to regenerate)[/]",
    }
    console.print(f"{escape(_rel(note.path, vault))}: {messages[note.outcome]}", highlight=False)


def _index_written(console: Console, note: GeneratedNote, workspace: Workspace) -> None:
    """Index the note just written, as `serve` does after writing it (when the vault has
    an index); a failure is one line, the note stays written."""
    problem = index_note(workspace, note.path, create=False)
    if problem is not None:
        where = escape(_rel(note.path, workspace.vault))
        console.print(f"[yellow]{where} is not indexed yet:[/] {escape(problem)}", highlight=False)


@click.command()
@click.option("--date", "day_text", metavar="YYYY-MM-DD", help=_DATE_HELP)
@click.option("--json", "as_json", is_flag=True, help=_JSON_HELP.format(what="log"))
@click.pass_obj
def log(app: AppContext, day_text: str | None, as_json: bool) -> None:
    """Write the captain's log of a day (git activity, decisions, open loops, top signals).

    By default the log of today, covering today ([captains_log] covers).
    """
    workspace = app.workspace()
    timezone = workspace.config.schedule.timezone
    day = _parse_day(day_text, timezone, writing=not as_json)
    tz = resolve_timezone(timezone)
    settings = workspace.config.captains_log
    skip = [workspace.config.clipper.folder]
    if as_json:
        gathered = gather(workspace.vault, settings, day, tz=tz, skip=skip)
        data: dict[str, Any] = to_jsonable(gathered)
        data["open_loops"] = to_jsonable(open_loops(gathered))  # each said once, as the log
        data["path"] = str(log_path(workspace.vault, settings, day))
        print_json(data)
        return
    result, note = write_captains_log(workspace.vault, settings, day, tz=tz, skip=skip)
    _print_note(app.console, note, workspace.vault)
    _index_written(app.console, note, workspace)
    app.console.print(summary_line(result), highlight=False)
    for problem in result.errors:
        app.console.print(f"[yellow]warning:[/] {escape(problem)}", highlight=False)


@click.command()
@click.argument(
    "directory",
    required=False,
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(DEFAULT_DEMO_DIR),
)
@click.pass_obj
def demo(app: AppContext, directory: Path) -> None:
    """Build a demo vault in DIRECTORY (default ./demo-vault) and run the whole pipeline
    on bundled sample data, offline: scan, triage, index, report, log and a search.

    Safe to run again on the same folder: notes that exist are never overwritten. A
    folder that already holds notes (your own vault) is refused: `signaldesk init`
    sets one up.
    """
    # The sample feeds are served on 127.0.0.1; a proxy from the environment must not
    # capture them (httpx honours NO_PROXY).
    no_proxy = {p for p in os.environ.get("NO_PROXY", "").split(",") if p}
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = ",".join(
        sorted(no_proxy | {"127.0.0.1", "localhost"})
    )
    view = DemoView(app.console)
    result = anyio.run(lambda: run_demo(directory, on_step=view.step))
    view.finish(result)
    if not result.ok:
        raise SystemExit(1)


COMMANDS: list[click.Command] = [serve, status, report, log, demo]
