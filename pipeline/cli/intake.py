"""`signaldesk scan`, `items` and `capture`: run intake (and triage), look at the ledger,
capture text."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from signaldesk.pipeline.cli._context import AppContext
from signaldesk.pipeline.cli._output import print_json
from signaldesk.pipeline.cli.triage import exit_if_not_indexed, print_triage_report, triage_json
from signaldesk.pipeline.intake import open_ledger
from signaldesk.pipeline.intake_report import SOURCE_KINDS, ScanStats
from signaldesk.pipeline.ledger import LedgerEntry
from signaldesk.pipeline.ledger_schema import ITEM_STATUSES
from signaldesk.pipeline.triage import capture_and_triage, scan_and_triage

__all__ = ["COMMANDS", "capture", "items", "scan"]


def _stats_json(stats: ScanStats) -> dict[str, Any]:
    return {
        "feeds": {
            "due": stats.feeds_due,
            "polled": stats.feeds_polled,
            "not_modified": stats.feeds_not_modified,
            "failed": stats.feeds_failed,
        },
        "resumed": stats.resumed,
        "sources": {kind: tally for kind, tally in stats.tallies.items()},
        "totals": stats.totals,
        "feed_problems": stats.feed_problems,
        "new_ids": stats.new_ids,
        "elapsed": round(stats.elapsed, 3),
    }


def _describe(stats: ScanStats) -> str:
    t = stats.totals
    return (
        f"feeds {stats.feeds_polled}/{stats.feeds_due} · new {t.new} · "
        f"duplicate {t.duplicate} · parked {t.parked}"
    )


def _print_summary(console: Console, stats: ScanStats) -> None:
    table = Table(title=f"Scan finished in {stats.elapsed:.1f} s")
    for column in ("source", "new", "duplicate", "parked", "errors"):
        table.add_column(column, justify="left" if column == "source" else "right")
    for kind, tally in stats.tallies.items():
        table.add_row(
            kind, str(tally.new), str(tally.duplicate), str(tally.parked), str(tally.errors)
        )
    total = stats.totals
    table.add_row(
        "[bold]total[/]", str(total.new), str(total.duplicate), str(total.parked), str(total.errors)
    )
    console.print(table)
    console.print(
        f"feeds: {stats.feeds_polled} polled, {stats.feeds_not_modified} not modified, "
        f"{stats.feeds_failed} failed; {stats.resumed} item(s) resumed from an earlier run",
        highlight=False,
    )
    if stats.feed_problems:
        problems = Table(title="Feeds failing or disabled")
        for column in ("feed", "outcome", "errors", "reason"):
            problems.add_column(column, overflow="fold")
        for p in stats.feed_problems:
            problems.add_row(
                p.title or p.url if p.title is None else f"{p.title}\n{p.url}",
                p.outcome,
                str(p.error_count),
                p.disabled_reason or p.error or "",
            )
        console.print(problems)


@click.command()
@click.option(
    "--source",
    "sources",
    multiple=True,
    type=click.Choice(SOURCE_KINDS),
    help="Scan only this kind of source (repeatable; default: all).",
)
@click.option(
    "--once",
    is_flag=True,
    default=True,
    help="Scan once and exit (always so here; `signaldesk serve` scans on a schedule).",
)
@click.option("--force", is_flag=True, help="Poll every enabled feed, due or not.")
@click.option("--json", "as_json", is_flag=True, help="Print the scan summary as JSON.")
@click.pass_obj
def scan(app: AppContext, sources: tuple[str, ...], once: bool, force: bool, as_json: bool) -> None:
    """Scan due feeds and the drop folders once, then triage what came in (score, file, index)."""
    workspace = app.workspace()
    if as_json:
        stats, report = anyio.run(
            lambda: scan_and_triage(workspace, sources=sources or None, force=force)
        )
        print_json({**_stats_json(stats), "triage": triage_json(report) if report else None})
        exit_if_not_indexed(report)
        return
    progress = Progress(
        TextColumn("[bold]scanning"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=app.console,
        transient=True,
    )
    task = progress.add_task("", total=None)

    def _update(stats: ScanStats) -> None:
        progress.update(
            task,
            total=stats.feeds_due or None,
            completed=stats.feeds_polled,
            description=_describe(stats),
        )

    with progress:
        stats, report = anyio.run(
            lambda: scan_and_triage(
                workspace, sources=sources or None, force=force, on_progress=_update
            )
        )
    _print_summary(app.console, stats)
    if report is not None:
        print_triage_report(app.console, report)
    exit_if_not_indexed(report)


def _entry_json(entry: LedgerEntry) -> dict[str, Any]:
    item = entry.item
    return {
        "id": entry.id,
        "status": entry.status,
        "source_kind": item.source_kind,
        "source_id": item.source_id,
        "title": item.title,
        "url": item.url,
        "guid": item.guid,
        "published": item.published,
        "duplicate_of": entry.duplicate_of,
        "attempts": entry.attempts,
        "last_error": entry.last_error,
        "discovered_at": entry.discovered_at,
        "updated_at": entry.updated_at,
        "score": entry.score,
        "domain": entry.domain,
        "note_path": entry.note_path,
    }


@click.command()
@click.option("--status", type=click.Choice(ITEM_STATUSES), help="Only items in this status.")
@click.option(
    "--source", "source_kind", type=click.Choice(SOURCE_KINDS), help="Only this source kind."
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def items(
    app: AppContext, status: str | None, source_kind: str | None, limit: int, as_json: bool
) -> None:
    """List items in the ledger, newest first."""
    workspace = app.workspace()

    async def _read() -> list[LedgerEntry]:
        async with open_ledger(workspace) as ledger:
            return await ledger.entries(status=status, source_kind=source_kind, limit=limit)

    entries = anyio.run(_read)
    if as_json:
        print_json([_entry_json(e) for e in entries])
        return
    table = Table(title=f"{len(entries)} item(s)")
    for column in ("id", "status", "source", "title", "discovered", "note / reason"):
        table.add_column(column, overflow="fold")
    for e in entries:
        detail = (
            e.note_path
            or e.last_error
            or (f"duplicate of {e.duplicate_of[:10]}" if e.duplicate_of else e.item.url or "")
        )
        table.add_row(
            e.id[:10],
            e.status,
            e.item.source_kind,
            e.item.title,
            e.discovered_at.strftime("%Y-%m-%d %H:%M"),
            detail,
        )
    app.console.print(table)


@click.command()
@click.argument("text", required=False)
@click.option("--title", help="Title of the capture (default: its first line).")
@click.option("--tags", default="", help="Comma-separated tags, e.g. a,b.")
@click.option("--source", "source_url", help="Where the text came from (a URL).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def capture(
    app: AppContext,
    text: str | None,
    title: str | None,
    tags: str,
    source_url: str | None,
    as_json: bool,
) -> None:
    """Capture TEXT (or stdin: `-` or no TEXT) into the tool-output drop folder, ingest it
    and triage it as `scan` does (score, file, index)."""
    workspace = app.workspace()
    if text is None or text == "-":
        text = sys.stdin.read()
    tag_list = tuple(t.strip() for t in tags.split(",") if t.strip())
    path, stats, report = anyio.run(
        lambda: capture_and_triage(
            workspace, text or "", title=title, tags=tag_list, source=source_url
        )
    )
    tally = stats.tally("tool_output")
    if as_json:
        print_json(
            {
                "path": path,
                "new_ids": stats.new_ids,
                "new": tally.new,
                "duplicate": tally.duplicate,
                "parked": tally.parked,
                "triage": triage_json(report) if report else None,
            }
        )
        exit_if_not_indexed(report)
        return
    try:
        shown = path.relative_to(workspace.vault)
    except ValueError:
        shown = path
    if tally.new == tally.duplicate == tally.parked == 0:
        app.console.print(
            f"captured to {shown}: the same text is already in the ledger", highlight=False
        )
        return
    app.console.print(
        f"captured to {shown}: {tally.new} new, {tally.duplicate} duplicate, {tally.parked} parked",
        highlight=False,
    )
    if report is not None and (report.decisions or report.errors):
        print_triage_report(app.console, report)
    exit_if_not_indexed(report)


COMMANDS: list[click.Command] = [scan, items, capture]
