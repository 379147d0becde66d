"""`signaldesk scan`, `items` and `capture`: run intake (and triage), look at the ledger,
capture text."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from signaldesk.pipeline.cli._context import AppContext
from signaldesk.pipeline.cli._hints import with_vault
from signaldesk.pipeline.cli._index_note import index_note
from signaldesk.pipeline.cli._output import print_json
from signaldesk.pipeline.cli.triage import exit_if_not_indexed, print_triage_report, triage_json
from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.intake.summary import SOURCE_KINDS, ScanStats, problem_lines
from signaldesk.pipeline.ledger.schema import ITEM_STATUSES
from signaldesk.pipeline.ledger.store import LedgerEntry, open_ledger
from signaldesk.pipeline.triage.run import capture_and_triage, scan_and_triage
from signaldesk.pipeline.wording import plural
from signaldesk.signal_note import score_number, weakest_score

__all__ = ["COMMANDS", "capture", "items", "scan"]

_MAX_FEED_ROWS = 20


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
        "problems": list(stats.problems.values()),
        "new_ids": stats.new_ids,
        "elapsed": round(stats.elapsed, 3),
    }


def _items(count: int, singular: str = "item", many: str | None = None) -> str:
    return plural(count, singular, many)


def _describe(stats: ScanStats) -> str:
    t = stats.totals
    return (
        f"feeds {stats.feeds_polled}/{stats.feeds_due} · new {t.new} · "
        f"duplicate {t.duplicate} · parked {t.parked}"
    )


def _print_summary(console: Console, stats: ScanStats) -> None:
    table = Table(title=f"Scan finished in {stats.elapsed:.1f} s")
    for column in ("source", "new", "duplicate", "parked", "errors", "teasers"):
        table.add_column(column, justify="left" if column == "source" else "right")
    for kind, tally in [*stats.tallies.items(), ("[bold]total[/]", stats.totals)]:
        table.add_row(
            kind,
            str(tally.new),
            str(tally.duplicate),
            str(tally.parked),
            str(tally.errors),
            str(tally.teasers),
        )
    console.print(table)
    console.print(
        f"feeds: {stats.feeds_polled} polled, {stats.feeds_not_modified} not modified, "
        f"{stats.feeds_failed} failed; {_items(stats.resumed)} resumed from an earlier run",
        highlight=False,
    )
    total = stats.totals
    if total.teasers:
        console.print(
            f"{_items(total.teasers, 'entry', 'entries')} went on with the feed's own text "
            "(marked as teasers): their article pages could not be fetched and are tried "
            "again in a later scan",
            highlight=False,
        )
    if total.refetched:
        console.print(
            f"{_items(total.refetched, 'earlier teaser')} got their article page and were "
            "scored again",
            highlight=False,
        )
    lines = problem_lines(stats.problems.values())
    if lines:
        console.print("[bold]problems[/] (one line per cause and host; details with -v):")
        for line in lines:
            console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)
    if stats.feed_problems:
        problems = Table(title="Feeds failing or disabled")
        for column in ("feed", "outcome", "errors", "reason"):
            problems.add_column(column, overflow="fold")
        for p in stats.feed_problems[:_MAX_FEED_ROWS]:
            problems.add_row(
                Text(p.url if p.title is None else f"{p.title}\n{p.url}"),
                p.outcome,
                str(p.error_count),
                Text(p.disabled_reason or p.error or ""),
            )
        console.print(problems)
        if len(stats.feed_problems) > _MAX_FEED_ROWS:
            console.print(
                f"…and {len(stats.feed_problems) - _MAX_FEED_ROWS} more: `signaldesk feeds list`",
                highlight=False,
            )


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
        "reason": _why_rejected(entry.scores)
        if entry.status == "rejected" and entry.scores
        else None,
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

    async def _read() -> tuple[list[LedgerEntry], dict[str, LedgerEntry]]:
        async with open_ledger(workspace) as ledger:
            # One more than shown: whether the list was cut, for the table's title.
            found = await ledger.entries(status=status, source_kind=source_kind, limit=limit + 1)
            # A duplicate is shown by its original's note: an id alone opens nothing.
            originals = {}
            for entry in found[:limit]:
                if entry.duplicate_of and entry.duplicate_of not in originals:
                    original = await ledger.get(entry.duplicate_of)
                    if original is not None:
                        originals[entry.duplicate_of] = original
            return found, originals

    entries, originals = anyio.run(_read)
    more = len(entries) > limit
    entries = entries[:limit]
    if as_json:
        print_json([_entry_json(e) for e in entries])
        return
    if not entries:
        # soft_wrap: the terminal folds the line; rich would cut a command in two.
        app.console.print(
            _no_items(workspace, status, source_kind, app.vault_argument), soft_wrap=True
        )
        return
    title = f"the newest {limit} item(s); --limit for more" if more else f"{len(entries)} item(s)"
    table = Table(title=title)
    for column in ("id", "status", "score", "source", "title", "discovered", "note / reason"):
        table.add_column(column, overflow="fold", justify="right" if column == "score" else "left")
    for e in entries:
        table.add_row(
            e.id[:10],
            e.status,
            "-" if e.score is None else f"{e.score:.2f}",
            e.item.source_kind,
            Text(e.item.title),
            e.discovered_at.strftime("%Y-%m-%d %H:%M"),
            Text(_detail(e, originals.get(e.duplicate_of or ""))),
        )
    app.console.print(table)


def _no_items(
    workspace: Workspace, status: str | None, source_kind: str | None, vault: str | None
) -> Text:
    """What an empty list means: the filters matched nothing, or nothing came in yet
    (on a new vault an empty table said neither)."""
    if status or source_kind:
        which = " ".join(
            f"--{name} {value}"
            for name, value in (("status", status), ("source", source_kind))
            if value
        )
        return Text(with_vault(f"no items match {which}; `signaldesk items` lists them all", vault))
    config = workspace.config
    drops = ", ".join(
        f"{folder}/"
        for folder in (
            config.clipper.folder,
            config.newsletter.drop_folder,
            config.tool_output.drop_folder,
        )
    )
    hint = (
        "nothing has come in yet: subscribe to a feed (`signaldesk feeds add URL`) or drop "
        f"notes into {drops}, then run `signaldesk scan`"
    )
    return Text(with_vault(hint, vault))


def _detail(entry: LedgerEntry, original: LedgerEntry | None = None) -> str:
    """The note, or why the item is where it is (a rejected item says what held it back,
    a duplicate names its original's note, else its title)."""
    if entry.note_path:
        return entry.note_path
    if entry.status == "rejected" and entry.scores:
        return _why_rejected(entry.scores)
    if entry.last_error:
        return entry.last_error
    if entry.duplicate_of:
        shown = original.note_path or original.title if original is not None else ""
        return f"duplicate of {entry.duplicate_of[:10]}" + (f": {shown}" if shown else "")
    return entry.item.url or ""


def _why_rejected(scores: dict[str, Any]) -> str:
    """``0.412 ≤ 0.55; weakest: depth 0.12 (48 words, no headings)``, and what the
    vault's corrections took off."""
    composite, threshold = scores.get("composite"), scores.get("threshold")
    parts: list[str] = []
    if isinstance(composite, int | float) and isinstance(threshold, int | float):
        parts.append(f"{composite:.3f} ≤ {threshold:.2f}")  # 0.548 is not "0.55 ≤ 0.55"
    weakest = weakest_score(scores)
    if weakest is not None:
        parts.append(f"weakest: {weakest}")
    learned = scores.get("learned")
    if isinstance(learned, dict) and (score_number(learned) or 0.0) < 0 and learned.get("reason"):
        parts.append(f"learned: {learned['reason']}")  # its reason ends with the shift
    return "; ".join(parts) or "below the threshold"


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
    # A capture that passed is searchable through its filed note (triage indexed it);
    # one that did not is searchable through the captured file itself.
    rejected = report is not None and any(
        d.item_id in stats.new_ids and d.note_path is None for d in report.decisions
    )
    indexing = rejected and workspace.config.triage.index_after
    index_error = index_note(workspace, path) if indexing else None
    if as_json:
        print_json(
            {
                "path": path,
                "new_ids": stats.new_ids,
                "new": tally.new,
                "duplicate": tally.duplicate,
                "parked": tally.parked,
                "triage": triage_json(report) if report else None,
                "index_error": index_error,
            }
        )
        exit_if_not_indexed(report)
        if index_error:
            raise SystemExit(1)
        return
    try:
        shown = path.relative_to(workspace.vault)
    except ValueError:
        shown = path
    if tally.new == tally.duplicate == tally.parked == 0:
        app.console.print(
            f"captured to {shown}: the same text is already in the ledger",
            markup=False,
            highlight=False,
        )
        return
    app.console.print(
        f"captured to {shown}: {tally.new} new, {tally.duplicate} duplicate, {tally.parked} parked",
        markup=False,
        highlight=False,
    )
    if report is not None and (report.decisions or report.errors):
        print_triage_report(app.console, report)
    if index_error:
        app.console.print(
            f"[yellow]the capture is not indexed yet:[/] {escape(index_error)}", highlight=False
        )
    exit_if_not_indexed(report)
    if index_error:
        raise SystemExit(1)


COMMANDS: list[click.Command] = [scan, items, capture]
