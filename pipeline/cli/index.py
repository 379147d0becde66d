"""`signaldesk index`: bring the search index up to date (or show what is in it)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from types import FrameType

import anyio
import click
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from signaldesk.pipeline.cli._context import AppContext
from signaldesk.pipeline.cli._hints import with_vault
from signaldesk.pipeline.cli._output import print_json
from signaldesk.pipeline.config_snapshot import write_snapshot
from signaldesk.pipeline.ledger.index_queue import forget_indexed
from signaldesk.pipeline.wording import plural
from signaldesk.retrieval.backends import index_status_of, make_indexer
from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.retrieval.index_progress import IndexProgress
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.records import IndexReport, IndexStatus

INTERRUPTED_MESSAGE = "interrupted — index is consistent; run `signaldesk index` to continue"
REBUILD_INTERRUPTED_MESSAGE = (
    "interrupted — the rebuild was dropped and the previous index is kept; "
    "run `signaldesk index --full` to rebuild"
)


@click.command()
@click.option("--full", is_flag=True, help="Empty the index and rebuild it from the vault.")
@click.option(
    "--status", "show_status", is_flag=True, help="Show what is in the index; change nothing."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report (or status) as JSON.")
@click.pass_obj
def index(app: AppContext, full: bool, show_status: bool, as_json: bool) -> None:
    """Index the vault for search: incremental by default (only what changed)."""
    workspace = app.workspace()
    settings = workspace.config.index
    postgres = workspace.config.postgres

    def status_now() -> IndexStatus:
        return index_status_of(workspace.vault, settings, postgres)

    if show_status:
        status = status_now()
        if as_json:
            print_json(status)
        else:
            _print_status(app.console, status, app.vault_argument)
        return
    # A person's `index` also reads every page once (quick_check): a damaged file is
    # rebuilt from the vault instead of being reported as up to date.
    indexer = make_indexer(
        workspace.vault,
        settings,
        LazyEmbedder(settings),
        vault_name=workspace.vault_name,
        postgres=postgres,
        verify=True,
    )
    err = Console(stderr=True)
    started = datetime.now(UTC)
    with _stop_on_sigint(indexer.stop):
        if as_json:
            report = anyio.run(lambda: indexer.run(full=full))
        else:
            report = _run_with_progress(indexer, full, err)
    if not report.interrupted:
        # Every path triage queued before this run began has now been looked at.
        anyio.run(forget_indexed, workspace, started)
        # The next one-shot search reads its settings without validating the config.
        write_snapshot(workspace)
    if as_json:
        print_json(report)
    else:
        _print_report(app.console, report, status_now(), app.vault_argument)
    if report.interrupted:
        message = REBUILD_INTERRUPTED_MESSAGE if report.full_rebuild else INTERRUPTED_MESSAGE
        err.print(f"[yellow]{message}[/]", highlight=False)
        # Not click's Exit: main() runs click with standalone_mode=False, which
        # turns Exit into a return value that nobody turns into an exit status.
        raise SystemExit(130)


def _run_with_progress(indexer: Indexer, full: bool, console: Console) -> IndexReport:
    with Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files · {task.fields[chunks]} chunks embedded"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("scanning", total=None, chunks=0)

        def on_progress(p: IndexProgress) -> None:
            description = "rebuilding" if p.rebuild_reason else p.phase
            total = p.files_total if p.phase != "scanning" else None
            bar.update(
                task,
                description=description,
                total=total,
                completed=p.files_done,
                chunks=p.chunks_embedded,
            )

        return anyio.run(lambda: indexer.run(full=full, progress=on_progress))


@contextmanager
def _stop_on_sigint(stop: Callable[[], None]) -> Iterator[None]:
    """First Ctrl-C: finish the transaction in flight and stop. Second: stop now.

    The indexer's transactions make even the hard stop safe; the soft one just
    ends with a report instead of a traceback.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: FrameType | None) -> None:
        stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _print_report(
    console: Console, report: IndexReport, status: IndexStatus, vault: str | None
) -> None:
    rows: list[tuple[str, str]]
    if report.interrupted and report.full_rebuild:
        # The rebuild's counts are of a new index that was thrown away: "added 786"
        # beside the old index's totals read as if those notes had been indexed.
        title = "index: rebuild interrupted, the previous index is kept"
        rows = [("rebuild", f"dropped after {plural(report.added, 'note')}")]
    else:
        title = "index: interrupted, what it did is kept" if report.interrupted else "index"
        rows = [
            ("added", str(report.added)),
            ("changed", str(report.changed)),
            # Not "deleted": a moved note, or one an ignore rule now covers, leaves the
            # index too, and the file is never touched.
            ("removed from the index", str(report.deleted)),
            ("unchanged", str(report.unchanged)),
            ("chunks embedded", str(report.chunks_embedded)),
            ("chunks reused", str(report.chunks_reused)),
        ]
        if report.rebuild_reason:
            rows.append(("full rebuild", report.rebuild_reason))
    rows += [
        ("seconds", f"{report.seconds:.2f}"),
        ("model", _model_text(status)),
        ("notes / chunks in index", f"{status.notes} / {status.chunks}"),
    ]
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    for label, value in rows:
        table.add_row(label, Text(value))
    console.print(table)
    for error in report.errors:
        console.print(f"[yellow]warning:[/] {escape(error)}", highlight=False)
    for note in status.degraded:
        console.print(f"[yellow]degraded:[/] {escape(with_vault(note, vault))}", highlight=False)


def _print_status(console: Console, status: IndexStatus, vault: str | None) -> None:
    table = Table(title="index status", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("database", Text(status.db_path))
    table.add_row("exists", "yes" if status.exists else "no")
    if status.exists:
        table.add_row("notes", str(status.notes))
        table.add_row("chunks", str(status.chunks))
        table.add_row("vectors", str(status.vectors))
        table.add_row("size", _size_text(status.db_bytes))
        table.add_row("model", Text(_model_text(status)))
        last = status.last_indexed.isoformat(timespec="seconds") if status.last_indexed else "-"
        table.add_row("last indexed", last)
        if status.folders:
            # One a line, count first: folder names hold spaces and commas
            # ("04 - Guides, Workflows, & Courses"), so a list on one line cannot be read.
            width = len(str(max(status.folders.values())))
            folders = "\n".join(
                f"{count:>{width}}  {'(top level)' if name == '.' else name + '/'}"
                for name, count in status.folders.items()
            )
            table.add_row("folders", Text(folders))
    search = "; ".join(status.degraded) if status.degraded else "hybrid (BM25 + vectors)"
    table.add_row("search", Text(with_vault(search, vault)))
    console.print(table)


def _model_text(status: IndexStatus) -> str:
    if not status.model:
        return "none (keyword search only)"
    return f"{status.model} ({status.dimensions} dims)" if status.dimensions else status.model


def _size_text(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover


COMMANDS: list[click.Command] = [index]
