"""`signaldesk feeds add|list|remove|import|export|enable`: manage feed subscriptions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
import click
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from signaldesk.pipeline.cli._context import AppContext
from signaldesk.pipeline.cli._output import print_json
from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.errors import FeedRegistryError
from signaldesk.pipeline.intake.feeds import FeedRecord, FeedRegistry, check_feed
from signaldesk.pipeline.ledger.store import open_ledger
from signaldesk.vault import atomic_write_bytes

__all__ = ["COMMANDS", "feeds"]

T = TypeVar("T")


def _with_registry(workspace: Workspace, action: Callable[[FeedRegistry], Awaitable[T]]) -> T:
    async def _run() -> T:
        async with open_ledger(workspace) as ledger:
            return await action(FeedRegistry(ledger))

    return anyio.run(_run)


def _record_json(record: FeedRecord) -> dict[str, Any]:
    state = record.state
    return {
        "url": state.url,
        "title": state.title,
        "category": record.category,
        "prior": record.prior,
        "full_text": state.full_text,
        "added_at": record.added_at,
        "next_check_at": state.next_check_at,
        "interval_seconds": state.interval_seconds,
        "last_success_at": state.last_success_at,
        "last_status": state.last_status,
        "error_count": state.error_count,
        "last_error": state.last_error,
        "disabled_reason": state.disabled_reason,
        "etag": state.etag,
        "last_modified": state.last_modified,
    }


def _when(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M") if value else "-"


@click.group()
def feeds() -> None:
    """Manage feed subscriptions (RSS, Atom, RDF, JSON Feed)."""


@feeds.command("add")
@click.argument("url")
@click.option("--title", help="A title until the feed gives its own.")
@click.option("--no-full-text", is_flag=True, help="Never fetch article pages for this feed.")
@click.option("--prior", type=click.FloatRange(0.0, 1.0), help="Authority prior for scoring, 0..1.")
@click.option("--category", help="A category (kept in OPML exports).")
@click.option(
    "--check/--no-check",
    default=True,
    show_default=True,
    help="Fetch the feed once first and refuse what is not a readable feed.",
)
@click.pass_obj
def add(
    app: AppContext,
    url: str,
    title: str | None,
    no_full_text: bool,
    prior: float | None,
    category: str | None,
    check: bool,
) -> None:
    """Subscribe to the feed at URL (polled on the next `signaldesk scan`).

    The feed is fetched once first: a 404, an HTML page or a host that does not answer
    is refused with the reason (`--no-check` subscribes without asking). A site's web
    page subscribes to the feed it links to (its first readable RSS, Atom or JSON link).
    """
    workspace = app.workspace()
    checked = None
    if check:
        config = workspace.config
        checked = anyio.run(lambda: check_feed(url, http=config.http, rss=config.rss))
    record = _with_registry(
        workspace,
        lambda r: r.add(
            checked.url if checked else url,
            title=title or (checked.title if checked else None),
            full_text=not no_full_text,
            prior=prior,
            category=category,
        ),
    )
    entries = (
        f"{checked.entries} {'entry' if checked.entries == 1 else 'entries'}" if checked else ""
    )
    found = f" ({checked.title or 'untitled'}, {entries} now)" if checked else ""
    if checked and checked.page:
        found = f", found on {checked.page}{found}"
    app.console.print(f"subscribed to {record.url}{found}", markup=False, highlight=False)


@feeds.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def list_feeds(app: AppContext, as_json: bool) -> None:
    """List subscriptions with their state, next check and errors."""
    records = _with_registry(app.workspace(), lambda r: r.records())
    if as_json:
        print_json([_record_json(r) for r in records])
        return
    now = datetime.now(UTC)
    table = Table(title=f"{len(records)} feed(s)")
    for column in ("feed", "state", "next check", "last success", "errors", "full text", "prior"):
        table.add_column(column, overflow="fold")
    for r in records:
        s = r.state
        if s.disabled_reason:
            state = f"[red]disabled[/]: {escape(s.disabled_reason)}"
        elif s.error_count:
            state = f"[yellow]failing[/]: {escape(s.last_error or '')}"
        elif s.last_success_at is None:
            state = "new"
        else:
            state = "[green]ok[/]"
        table.add_row(
            Text(f"{s.title}\n{s.url}" if s.title else s.url),
            state,
            "-" if s.disabled_reason else "next scan" if s.is_due(now) else _when(s.next_check_at),
            _when(s.last_success_at),
            str(s.error_count),
            "yes" if s.full_text else "no",
            "-" if r.prior is None else f"{r.prior:g}",
        )
    app.console.print(table)


@feeds.command("remove")
@click.argument("url")
@click.pass_obj
def remove(app: AppContext, url: str) -> None:
    """Unsubscribe from URL (items already taken in stay)."""
    _with_registry(app.workspace(), lambda r: r.remove(url))
    app.console.print(f"unsubscribed from {url}", markup=False, highlight=False)


@feeds.command("enable")
@click.argument("url")
@click.pass_obj
def enable(app: AppContext, url: str) -> None:
    """Re-enable a disabled feed; it is polled on the next scan."""
    _with_registry(app.workspace(), lambda r: r.enable(url))
    app.console.print(f"enabled {url}", markup=False, highlight=False)


@feeds.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def import_opml(app: AppContext, file: Path, as_json: bool) -> None:
    """Subscribe to every feed in an OPML FILE."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise FeedRegistryError(f"cannot read {file}: {exc}") from exc
    report = _with_registry(app.workspace(), lambda r: r.import_opml(data))
    if as_json:
        print_json(report)
        return
    app.console.print(
        f"{len(report.added)} feed(s) added, {len(report.already_present)} already subscribed"
        + (f", {len(report.invalid)} skipped (not http(s) URLs)" if report.invalid else ""),
        highlight=False,
    )


@feeds.command("export")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.pass_obj
def export(app: AppContext, file: Path | None) -> None:
    """Write every subscription as OPML to FILE (default: stdout)."""
    data = _with_registry(app.workspace(), lambda r: r.export_opml())
    if file is None:
        click.echo(data.decode("utf-8"), nl=False)
        return
    atomic_write_bytes(file, data)
    app.console.print(f"wrote {file}", markup=False, highlight=False)


COMMANDS: list[click.Command] = [feeds]
