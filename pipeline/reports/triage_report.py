"""The daily triage report: a note on what arrived, what was filed, what nearly was, and
what needs a person — read from the ledger, with Mermaid charts Obsidian draws.

A day is a local calendar day, and an item belongs to the day it *arrived*
(``discovered_at``), whatever stage it has reached since; so a report can be
rewritten later and still lists the same items, only further along.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from pathlib import Path
from typing import Any

import anyio.to_thread

from signaldesk.frontmatter import first_heading, note_title, parse_note
from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.intake.feeds import FeedRecord, FeedRegistry
from signaldesk.pipeline.ledger.base import ItemLedger
from signaldesk.pipeline.ledger.corrections import corrections_recorded
from signaldesk.pipeline.ledger.store import LedgerEntry, open_ledger
from signaldesk.pipeline.reports.generated_notes import GeneratedNote, write_generated_note
from signaldesk.pipeline.reports.triage_report_model import (
    DIMENSIONS,
    CorrectionNote,
    FeedIssue,
    ReportItem,
    SourceCount,
    TriageReportNote,
    WaitingNote,
)
from signaldesk.pipeline.reports.triage_report_render import render_triage_report, score_histogram
from signaldesk.pipeline.wording import plural
from signaldesk.retrieval.ignore import VaultFilter, iter_vault_notes
from signaldesk.signal_note import score_number, weakest_score

__all__ = [
    "DIMENSIONS",
    "CorrectionNote",
    "FeedIssue",
    "ReportItem",
    "SourceCount",
    "TriageReportNote",
    "WaitingNote",
    "feed_issues",
    "gather_triage_report",
    "render_triage_report",
    "report_path",
    "score_histogram",
    "summary_line",
    "write_triage_report",
]

logger = logging.getLogger(__name__)


def report_path(workspace: Workspace, day: date) -> Path:
    """Where the report dated ``day`` is written."""
    return workspace.resolve(workspace.config.report.path.format(date=day.isoformat()))


def _day_bounds(day: date, tz: tzinfo) -> tuple[str, str]:
    # The ledger stores fixed-width UTC ISO stamps, so text comparison is time order.
    start = datetime.combine(day, time.min, tzinfo=tz)
    end = datetime.combine(day + timedelta(days=1), time.min, tzinfo=tz)
    return (
        start.astimezone(UTC).isoformat(timespec="microseconds"),
        end.astimezone(UTC).isoformat(timespec="microseconds"),
    )


def _dimension_values(scores: dict[str, Any] | None) -> dict[str, float]:
    values: dict[str, float] = {}
    for name in DIMENSIONS:
        number = score_number((scores or {}).get(name))
        if number is not None:
            values[name] = number
    return values


def _feed_names(records: Iterable[FeedRecord]) -> dict[str, str]:
    """Each subscribed feed's name in the report: its title, and its URL beside the
    title when another feed has the same title.

    Why: the "Arrived" table counts per name, and three feeds titled "Übersicht -
    Grüße" (or two called "Blog") were counted as one source.
    """
    records = list(records)
    counts = Counter(r.state.title for r in records if r.state.title)
    return {
        r.url: (f"{r.state.title} ({r.url})" if counts[r.state.title] > 1 else r.state.title)
        for r in records
        if r.state.title
    }


def _source_name(entry: LedgerEntry, feeds: dict[str, str]) -> str:
    item = entry.item
    if item.source_kind == "rss":
        return feeds.get(item.source_id) or item.site_name or item.source_id
    if item.source_kind == "newsletter":
        return item.site_name or item.author or item.source_id
    return item.source_id


def _report_item(entry: LedgerEntry, feeds: dict[str, str], titles: dict[str, str]) -> ReportItem:
    item = entry.item
    return ReportItem(
        id=entry.id,
        title=entry.item.title,
        source_kind=entry.item.source_kind,
        source=_source_name(entry, feeds),
        status=entry.status,
        url=entry.item.url,
        score=entry.score,
        scores=_dimension_values(entry.scores),
        domain=entry.domain,
        note_path=entry.note_path,
        error=entry.last_error,
        duplicate_of=titles.get(entry.duplicate_of or "", entry.duplicate_of),
        arrived=entry.discovered_at,
        teaser=entry.item.teaser,
        page_cause=entry.item.extra.get("full_text_cause") if entry.item.teaser else None,
        origin_path=item.origin_path if item.source_kind == "clipper" else None,
        held_back=weakest_score(entry.scores) or "-",
    )


async def _day_entries(ledger: ItemLedger, day: date, tz: tzinfo) -> list[LedgerEntry]:
    start, end = _day_bounds(day, tz)
    rows = await ledger.fetch_all(
        "SELECT id FROM items WHERE discovered_at >= ? AND discovered_at < ? "
        "ORDER BY discovered_at, id",
        (start, end),
    )
    ids = [row[0] for row in rows]
    entries = [await ledger.get(item_id) for item_id in ids]
    return [e for e in entries if e is not None]


def summary_line(report: TriageReportNote) -> str:
    """What the report holds, in one line (``signaldesk report`` and the demo print it)."""
    return (
        f"{len(report.items)} arrived, {len(report.filed)} filed, "
        f"{len(report.with_status('rejected'))} rejected ({len(report.near_misses)} worth a "
        f"look), {plural(len(report.duplicates), 'duplicate')}, {len(report.parked)} parked; "
        f"{plural(len(report.feed_issues), 'feed needs', 'feeds need')} attention"
    )


def feed_issues(records: Iterable[FeedRecord], now: datetime) -> list[FeedIssue]:
    """The feeds in backoff or disabled, as of ``now`` (a backoff that has run out by
    then has no next check time: the next scan tries the feed)."""
    issues = []
    for r in records:
        if not r.disabled and r.state.error_count <= 0:
            continue
        issues.append(
            FeedIssue(
                url=r.url,
                title=r.state.title,
                state="disabled" if r.disabled else "backoff",
                error_count=r.state.error_count,
                last_error=r.state.disabled_reason or r.state.last_error,
                next_check_at=None if r.state.is_due(now) else r.state.next_check_at,
                last_success_at=r.state.last_success_at,
            )
        )
    return sorted(issues, key=lambda f: (f.state != "disabled", f.url))


def _waiting_folders(workspace: Workspace) -> tuple[list[Path], list[Path]]:
    """(folders to list, folders inside them to skip: the mail and tool drops)."""
    config = workspace.config
    listed = [
        workspace.resolve(config.vault.inbox_folder),
        workspace.resolve(config.clipper.folder),
    ]
    skipped = [
        workspace.resolve(config.newsletter.drop_folder),
        workspace.resolve(config.tool_output.drop_folder),
    ]
    return listed, skipped


def _list_waiting(vault: Path, listed: list[Path], skipped: list[Path]) -> list[tuple[str, str]]:
    # The report is a note in the vault: what `.indexignore` hides stays out of it too.
    rules = VaultFilter(vault)
    found: dict[str, str] = {}
    for root in listed:
        if not root.is_relative_to(vault):
            continue
        for rel, _ in iter_vault_notes(vault, rules, under=root.relative_to(vault).as_posix()):
            path = vault / rel
            if any(path.is_relative_to(s) for s in skipped):
                continue
            try:
                note = parse_note(path.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
            found[rel] = note_title(note.frontmatter, rel, heading=first_heading(note.body))
    return sorted(found.items())


async def _day_corrections(ledger: ItemLedger, day: date, tz: tzinfo) -> list[CorrectionNote]:
    start, end = _day_bounds(day, tz)
    out = []
    for row in await corrections_recorded(ledger, start, end):
        entry = await ledger.get(row.item_id)
        out.append(
            CorrectionNote(
                item_id=row.item_id,
                title=entry.item.title if entry is not None else row.item_id[:10],
                how=row.how,
                accept=row.accept,
                domain=row.domain,
                recorded_at=row.recorded_at,
                undone=row.undone_at is not None,
                note_path=entry.note_path if entry is not None else None,
                url=entry.item.url if entry is not None else None,
            )
        )
    return out


async def gather_triage_report(
    workspace: Workspace, ledger: ItemLedger, day: date, *, tz: tzinfo | None = None
) -> TriageReportNote:
    """Collect the report of ``day`` (local time unless ``tz`` is given) from the ledger,
    the feed registry and the inbox folders."""
    zone = tz or datetime.now().astimezone().tzinfo
    assert zone is not None
    config = workspace.config
    report = TriageReportNote(
        day=day,
        threshold=config.scoring.threshold,
        near_margin=config.report.near_threshold,
    )
    records = await FeedRegistry(ledger).records()
    feeds = _feed_names(records)
    entries = await _day_entries(ledger, day, zone)
    titles: dict[str, str] = {}
    for original_id in {e.duplicate_of for e in entries if e.duplicate_of}:
        original = await ledger.get(original_id)
        if original is not None:
            titles[original_id] = original.item.title
    report.items = [_report_item(e, feeds, titles) for e in entries]
    report.feed_issues = feed_issues(records, datetime.now(UTC))

    counts = await ledger.status_counts()
    report.pending_total = sum(n for (_, status), n in counts.items() if status == "pending")
    pending = await ledger.entries(status="pending", limit=config.report.max_rows)
    report.pending = [_report_item(e, feeds, titles) for e in pending]

    clippings = {
        e.item.origin_path: e
        for e in reversed(await ledger.entries(source_kind="clipper"))
        if e.item.origin_path
    }
    listed, skipped = _waiting_folders(workspace)
    waiting = await anyio.to_thread.run_sync(_list_waiting, workspace.vault, listed, skipped)
    clipper = workspace.resolve(config.clipper.folder)
    for rel, title in waiting:
        entry = clippings.get(rel)
        if entry is not None:
            status: str | None = entry.status
        elif (workspace.vault / rel).is_relative_to(clipper):
            status = "unscanned"  # dropped since the last scan, which takes it
        else:
            status = None  # a person's note in the inbox: nothing triages it
        repeats: str | None = None
        if entry is not None and entry.duplicate_of:
            first = await ledger.get(entry.duplicate_of)
            repeats = first.item.title if first is not None else None
        report.waiting_notes.append(
            WaitingNote(
                rel,
                title,
                status=status,
                score=entry.score if entry else None,
                duplicate_of=repeats,
            )
        )
    report.corrections = await _day_corrections(ledger, day, zone)
    return report


async def write_triage_report(
    workspace: Workspace, day: date, *, tz: tzinfo | None = None, ledger: ItemLedger | None = None
) -> tuple[TriageReportNote, GeneratedNote]:
    """Gather, render and write the report dated ``day`` (a hand-edited report is kept).

    :param ledger: an open ledger to read (default: open the workspace's own).
    """
    if ledger is None:
        async with open_ledger(workspace) as own:
            report = await gather_triage_report(workspace, own, day, tz=tz)
    else:
        report = await gather_triage_report(workspace, ledger, day, tz=tz)
    settings = workspace.config.report
    body = render_triage_report(report, charts=settings.charts, max_rows=settings.max_rows, tz=tz)
    frontmatter = {
        "title": f"Triage report {day.isoformat()}",
        "type": "daily",
        "tags": ["triage-report"],
        "created": datetime.now().astimezone().isoformat(timespec="seconds"),
        "date": day.isoformat(),
        "status": "active",
        "arrived": len(report.items),
        "filed": len(report.filed),
        "rejected": len(report.with_status("rejected")),
        "duplicates": len(report.duplicates),
        "parked": len(report.parked),
    }
    path = report_path(workspace, day)
    note = await anyio.to_thread.run_sync(write_generated_note, path, frontmatter, body)
    return report, note
