"""`signaldesk triage` (score and file what is waiting) and `signaldesk score` (explain one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from signaldesk.errors import SignaldeskError
from signaldesk.items import Item
from signaldesk.pipeline.cli._context import AppContext
from signaldesk.pipeline.cli._output import print_json
from signaldesk.pipeline.config import Config
from signaldesk.pipeline.triage.commands import (
    correct,
    list_corrections,
    undo,
    vault_corrections,
)
from signaldesk.pipeline.triage.corrections import Action
from signaldesk.pipeline.triage.records import TriageProgress, TriageReport, card_to_json
from signaldesk.pipeline.triage.run import triage as run_triage
from signaldesk.pipeline.triage.score_input import is_url, item_from_file, item_from_url
from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.scoring.feedback import Correction, describe_line
from signaldesk.scoring.records import DIMENSIONS, TEASER_NOTE, ScoreCard
from signaldesk.scoring.scorer import Scorer
from signaldesk.vault import DOMAINS

__all__ = [
    "COMMANDS",
    "exit_if_not_indexed",
    "print_triage_report",
    "score",
    "triage",
    "triage_json",
]

_VERB = {
    "created": ("filed", "would file"),
    "moved": ("moved", "would move"),
    "copied": ("copied", "would copy"),
    "left": ("left in place", "would leave in place"),
    "updated": ("re-scored", "would re-score"),
    "unchanged": ("unchanged", "unchanged"),
    "kept_edited": ("kept (edited by hand)", "would keep (edited by hand)"),
    "missing": ("note gone", "note gone"),
    "stays": ("not filed", "would not file"),
    "held": ("passes now, not filed", "passes now, not filed"),
    "failed": ("failed", "would fail"),
}


def triage_json(report: TriageReport) -> dict[str, Any]:
    """The report as plain JSON (``--json``)."""
    return {
        "dry_run": report.dry_run,
        "scoring_mode": report.scoring_mode,
        "filed": len(report.filed),
        "rejected": len(report.rejected),
        "held": len(report.held),
        "written": report.written,
        "inbox_waiting": [d.origin_path for d in report.inbox_waiting],
        "decisions": report.decisions,
        "indexed": report.indexed,
        "index_error": report.index_error,
        "errors": report.errors,
        "corrections_noticed": report.corrections,
        "elapsed": round(report.elapsed, 3),
    }


def print_triage_report(console: Console, report: TriageReport) -> None:
    """The decisions as a table, then what was indexed and what went wrong."""
    dry = report.dry_run
    if not report.decisions:
        console.print("nothing to triage: no pending items", highlight=False)
    else:
        title = f"Triage: {len(report.filed)} filed, {len(report.rejected)} below threshold"
        if dry:
            title = "Dry run (nothing written): " + title
        table = Table(title=title)
        for column in ("item", "composite", "domain", "decision", "note"):
            table.add_column(
                column, overflow="fold", justify="right" if column == "composite" else "left"
            )
        for d in report.decisions:
            verb = _VERB.get(d.outcome, (d.outcome, d.outcome))[1 if dry else 0]
            if d.by_person:
                verb += " (your decision)"  # beside a composite under the line
            marker = ">" if d.composite > d.threshold else "≤"
            note = Text(
                d.note_path or (d.origin_path if d.outcome == "stays" and d.origin_path else "")
            )
            if d.message:
                note.append(("\n" if note else "") + d.message, style="dim")
            table.add_row(
                Text(d.title),
                f"{d.composite:.3f} {marker} {d.threshold:.2f}",
                d.domain,
                verb,
                note,
            )
        console.print(table)
    if report.held:
        console.print(
            f"{len(report.held)} rejected item(s) pass the threshold now; --rescore files "
            "nothing: `signaldesk triage --item ID` files one",
            highlight=False,
        )
    if report.corrections:
        console.print(
            f"learned from {len(report.corrections)} correction(s) you made in the vault "
            "(`signaldesk triage corrections` lists them)",
            highlight=False,
        )
    if report.inbox_waiting:
        console.print(
            f"{len(report.inbox_waiting)} clipping(s) below the threshold stay in the inbox",
            highlight=False,
        )
    if report.indexed is not None:
        i = report.indexed
        console.print(
            f"indexed: {i.added} added, {i.changed} changed, {i.deleted} removed "
            f"({i.chunks_embedded} chunks embedded)",
            highlight=False,
        )
    if report.index_error:
        console.print(f"[yellow]not indexed:[/] {escape(report.index_error)}", highlight=False)
    for error in report.errors:
        console.print(f"[yellow]warning:[/] {escape(error)}", highlight=False)
    if report.scoring_mode == "keywords":
        console.print("[dim]scored by keywords only (no embedding model)[/]", highlight=False)


@click.group(invoke_without_command=True)
@click.option(
    "--dry-run", is_flag=True, help="Decide everything and write nothing; show what would happen."
)
@click.option(
    "--rescore",
    is_flag=True,
    help="Also re-score items already filed or rejected: refresh the scores of filed notes "
    "(a person's edits are kept) and record new scores; nothing is moved or newly filed.",
)
@click.option(
    "--item",
    "item_ids",
    multiple=True,
    help="Triage only this ledger item (id from `signaldesk items`; repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def triage(
    ctx: click.Context, dry_run: bool, rescore: bool, item_ids: tuple[str, ...], as_json: bool
) -> None:
    """Score the inbox and pending items, file those above the threshold, index the notes.

    With a subcommand, correct triage instead: `accept`, `reject` or `move` one item, or
    list, undo and reset the corrections it learns from.
    """
    if ctx.invoked_subcommand is not None:
        return
    app: AppContext = ctx.obj
    workspace = app.workspace()
    ids = list(item_ids) or None
    if as_json:
        report = anyio.run(
            lambda: run_triage(workspace, dry_run=dry_run, item_ids=ids, rescore=rescore)
        )
        print_json(triage_json(report))
        exit_if_not_indexed(report)
        return
    progress = Progress(
        TextColumn("[bold]triage"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = progress.add_task("", total=None)

    def _update(p: TriageProgress) -> None:
        progress.update(
            task,
            total=p.total or None,
            completed=p.done,
            description=f"filed {p.filed} · below threshold {p.rejected}",
        )

    with progress:
        report = anyio.run(
            lambda: run_triage(
                workspace, dry_run=dry_run, item_ids=ids, rescore=rescore, progress=_update
            )
        )
    print_triage_report(app.console, report)
    exit_if_not_indexed(report)


def exit_if_not_indexed(report: TriageReport | None) -> None:
    """Exit 1 when notes were filed but the index step failed (they stay queued in the
    ledger, and the next `scan`, `triage` or `index` catches up)."""
    if report is not None and report.index_error:
        raise SystemExit(1)


def _correct(app: AppContext, item_id: str, action: Action, domain: str | None) -> None:
    workspace = app.workspace()
    result, report = anyio.run(
        lambda: correct(
            workspace, item_id, action, domain, embedder=LazyEmbedder(workspace.config.index)
        )
    )
    app.console.print(
        f"{action} {result.item_id[:10]}: {result.message}", markup=False, highlight=False
    )
    if report is not None:
        print_triage_report(app.console, report)


@triage.command("accept")
@click.argument("item_id")
@click.pass_obj
def accept(app: AppContext, item_id: str) -> None:
    """Keep ITEM_ID: file it if triage left it out; scoring learns from it."""
    _correct(app, item_id, "accept", None)


@triage.command("reject")
@click.argument("item_id")
@click.pass_obj
def reject(app: AppContext, item_id: str) -> None:
    """Throw ITEM_ID away: its note is marked `status: archived` (never deleted)."""
    _correct(app, item_id, "reject", None)


@triage.command("move")
@click.argument("item_id")
@click.argument("domain", type=click.Choice(DOMAINS))
@click.pass_obj
def move(app: AppContext, item_id: str, domain: str) -> None:
    """File ITEM_ID under DOMAIN (its note moves there, its domain and domain tag with it);
    routing learns from it."""
    _correct(app, item_id, "move", domain)


@triage.command("corrections")
@click.option("--undo", "undo_last", type=click.IntRange(min=1), help="Undo the last N.")
@click.option("--reset", is_flag=True, help="Undo every correction (scoring forgets them).")
@click.option("--json", "as_json", is_flag=True, help="Print them as JSON.")
@click.pass_obj
def corrections(app: AppContext, undo_last: int | None, reset: bool, as_json: bool) -> None:
    """List the corrections triage learns from and where they put your line; `--undo N` or
    `--reset` takes them back."""
    workspace = app.workspace()
    if reset or undo_last is not None:
        n = anyio.run(lambda: undo(workspace, None if reset else undo_last))
        app.console.print(f"undid {n} correction(s)", highlight=False)
        return
    rows = anyio.run(lambda: list_corrections(workspace))
    if as_json:
        print_json(
            [
                {
                    "item_id": row.item_id,
                    "title": title,
                    "accept": row.accept,
                    "domain": row.domain,
                    "how": row.how,
                    "recorded_at": row.recorded_at.isoformat(),
                }
                for row, title in rows
            ]
        )
        return
    if not rows:
        app.console.print("no corrections: triage scores with the shipped rules only")
        return
    table = Table(title=f"{len(rows)} correction(s) triage learns from")
    for column in ("item", "title", "kept", "domain", "how", "when"):
        table.add_column(column, overflow="fold")
    for row, title in rows:
        kept = {True: "yes", False: "no", None: "-"}[row.accept]
        table.add_row(
            row.item_id[:10],
            Text(title),
            kept,
            row.domain or "-",
            row.how,
            row.recorded_at.strftime("%Y-%m-%d %H:%M"),  # as `items` shows times
        )
    app.console.print(table)
    app.console.print(_line_said(workspace.config, anyio.run(vault_corrections, workspace)))


def _line_said(config: Config, corrections: list[Correction]) -> Text:
    """Where the corrections put the person's line, as every card's `learned` row has it."""
    try:
        line, decided = Scorer(
            config.scoring, LazyEmbedder(config.index), corrections=corrections
        ).learned_line()
    except SignaldeskError:  # no model here: the keyword-only line, as triage would fall back
        line, decided = Scorer(config.scoring, None, corrections=corrections).learned_line()
    said = describe_line(line, decided)
    return Text(f"{said}: every item's composite {line:+.2f}" if line else said)


def _card_table(card: ScoreCard, *, explain: bool) -> Table:
    table = Table(title="Scores")
    table.add_column("dimension")
    table.add_column("value", justify="right")
    table.add_column("why", overflow="fold")
    if explain:
        table.add_column("features", overflow="fold")
    for name in DIMENSIONS:
        dim = card.dimension(name)
        row: list[str | Text] = [name, f"{dim.value:.3f}", Text(dim.reason)]
        if explain:
            row.append(", ".join(f"{k}={v:g}" for k, v in dim.features.items()))
        table.add_row(*row)
    if card.learned is not None:
        row = ["learned", f"{card.learned.value:+.3f}", Text(card.learned.reason)]
        if explain:
            row.append(", ".join(f"{k}={v:g}" for k, v in card.learned.features.items()))
        table.add_row(*row)
    return table


@click.command()
@click.argument("target")
@click.option("--explain", is_flag=True, help="Also show the measured features behind each score.")
@click.option("--json", "as_json", is_flag=True, help="Print the score card as JSON.")
@click.pass_obj
def score(app: AppContext, target: str, explain: bool, as_json: bool) -> None:
    """Score one PATH (note, clipping, .eml, text) or URL and explain it; nothing is written.

    A URL's page is scored as the Web Clipper note it would make (so "clipped by you").
    The vault's corrections count, as in triage (a "learned" row says what they add).
    """
    workspace = app.workspace()
    config = workspace.config

    async def _score() -> tuple[Item, ScoreCard]:
        if is_url(target):
            item = await item_from_url(target, config.http)
        else:
            item = await anyio.to_thread.run_sync(
                lambda: item_from_file(
                    Path(target),
                    workspace.vault,
                    drops=workspace.resolve(config.tool_output.drop_folder),
                )
            )
        # With this vault's corrections, so the card is the one triage would make.
        corrections = await vault_corrections(workspace)
        scorer = Scorer(config.scoring, LazyEmbedder(config.index), corrections=corrections)
        card = await anyio.to_thread.run_sync(lambda: scorer.score(item))
        return item, card

    item, card = anyio.run(_score)
    threshold = config.scoring.threshold
    if as_json:
        print_json(
            {
                "item": {
                    "title": item.title,
                    "url": item.url,
                    "source_kind": item.source_kind,
                    "author": item.author,
                },
                **card_to_json(card, threshold=threshold),
            }
        )
        return
    console = app.console
    console.print(f"[bold]{escape(item.title)}[/]", highlight=False)
    if item.url:
        console.print(item.url, markup=False, highlight=False)
    console.print(_card_table(card, explain=explain))
    verdict = (
        f"[green]passes[/]: filed under {card.route.domain}"
        if card.passed
        else "[yellow]below the threshold[/]: not filed"
    )
    sign = ">" if card.passed else "≤"
    console.print(
        f"composite {card.composite:.3f} {sign} threshold {threshold:.2f} — {verdict}",
        highlight=False,
    )
    route = card.route
    console.print(
        f"route: {route.domain} (confidence {route.confidence:.2f}) — {route.reason}",
        markup=False,
        highlight=False,
    )
    # Only the domains the rules found evidence for: "ai-tooling 0.00" is not a candidate.
    shown = ", ".join(f"{d} {value:.2f}" for d, value in route.candidates if round(value, 2) > 0)
    if shown:
        console.print(f"candidates: {shown}", highlight=False)
    if card.teaser:
        console.print(f"[yellow]{TEASER_NOTE}[/]", highlight=False)


COMMANDS: list[click.Command] = [triage, score]
