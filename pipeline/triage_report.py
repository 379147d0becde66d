"""The daily triage report: a note on what arrived, what was filed, what nearly was, and
what needs a person — read from the ledger, with Mermaid charts Obsidian draws.

A day is a local calendar day, and an item belongs to the day it *arrived*
(``discovered_at``), whatever stage it has reached since; so a report can be
rewritten later and still lists the same items, only further along.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from pathlib import Path, PurePosixPath
from typing import Any

import anyio.to_thread

from pipeline.config import Workspace
from pipeline.feeds import FeedRecord, FeedRegistry
from pipeline.generated_notes import GeneratedNote, write_generated_note
from pipeline.intake import open_ledger
from pipeline.ledger import Ledger, LedgerEntry
from retrieval.frontmatter import parse_note
from signaldesk.vault import STATE_DIR

__all__ = [
    "DIMENSIONS",
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
    "write_triage_report",
]

logger = logging.getLogger(__name__)

DIMENSIONS = ("relevance", "actionability", "depth", "authority")
_SOURCE_ORDER = ("rss", "clipper", "newsletter", "tool_output")


@dataclass(frozen=True, slots=True)
class ReportItem:
    """One ledger item as the report shows it."""

    id: str
    title: str
    source_kind: str
    source: str
    status: str
    url: str | None
    score: float | None
    scores: dict[str, float]
    domain: str | None
    note_path: str | None
    error: str | None
    duplicate_of: str | None
    arrived: datetime


@dataclass(frozen=True, slots=True)
class SourceCount:
    """Per source (a feed, a drop folder): what arrived and what became of it."""

    source_kind: str
    source: str
    arrived: int = 0
    filed: int = 0
    rejected: int = 0
    duplicate: int = 0
    parked: int = 0
    waiting: int = 0


@dataclass(frozen=True, slots=True)
class WaitingNote:
    """A note still sitting in the inbox or the clipper folder."""

    path: str
    title: str
    status: str | None = None
    score: float | None = None


@dataclass(frozen=True, slots=True)
class FeedIssue:
    """A feed in backoff or disabled."""

    url: str
    title: str | None
    state: str  # "backoff" | "disabled"
    error_count: int
    last_error: str | None
    next_check_at: datetime | None
    last_success_at: datetime | None


@dataclass
class TriageReportNote:
    """Everything the report shows for one day (tests and ``--json`` read this)."""

    day: date
    threshold: float
    near_margin: float
    items: list[ReportItem] = field(default_factory=list)
    waiting_notes: list[WaitingNote] = field(default_factory=list)
    pending_total: int = 0
    pending: list[ReportItem] = field(default_factory=list)
    feed_issues: list[FeedIssue] = field(default_factory=list)

    def with_status(self, *statuses: str) -> list[ReportItem]:
        """The day's items in one of ``statuses``."""
        return [i for i in self.items if i.status in statuses]

    @property
    def filed(self) -> list[ReportItem]:
        """Filed items, best first."""
        return sorted(self.with_status("filed"), key=lambda i: (-(i.score or 0.0), i.title))

    @property
    def near_misses(self) -> list[ReportItem]:
        """Rejected items within ``near_margin`` below the threshold, best first."""
        floor = self.threshold - self.near_margin - 1e-9
        near = [i for i in self.with_status("rejected") if i.score is not None and i.score >= floor]
        return sorted(near, key=lambda i: (-(i.score or 0.0), i.title))

    @property
    def duplicates(self) -> list[ReportItem]:
        return self.with_status("duplicate")

    @property
    def parked(self) -> list[ReportItem]:
        return self.with_status("parked")

    @property
    def by_source(self) -> list[SourceCount]:
        """Counts per source, in source-kind order then by name."""
        keys = sorted(
            {(i.source_kind, i.source) for i in self.items},
            key=lambda k: (_kind_rank(k[0]), k[1].lower()),
        )
        rows = []
        for kind, source in keys:
            mine = [i for i in self.items if (i.source_kind, i.source) == (kind, source)]
            status = Counter(i.status for i in mine)
            rows.append(
                SourceCount(
                    kind,
                    source,
                    arrived=len(mine),
                    filed=status["filed"],
                    rejected=status["rejected"],
                    duplicate=status["duplicate"],
                    parked=status["parked"],
                    waiting=len(mine)
                    - status["filed"]
                    - status["rejected"]
                    - status["duplicate"]
                    - status["parked"],
                )
            )
        return rows

    @property
    def by_domain(self) -> dict[str, tuple[int, int]]:
        """``{domain: (filed, rejected)}`` for the day's scored items."""
        counts: dict[str, list[int]] = {}
        for i in self.with_status("filed", "rejected"):
            pair = counts.setdefault(i.domain or "other", [0, 0])
            pair[0 if i.status == "filed" else 1] += 1
        return {d: (c[0], c[1]) for d, c in sorted(counts.items())}


def _kind_rank(kind: str) -> int:
    return _SOURCE_ORDER.index(kind) if kind in _SOURCE_ORDER else len(_SOURCE_ORDER)


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
        raw = (scores or {}).get(name)
        if isinstance(raw, dict):
            raw = raw.get("value")
        if isinstance(raw, int | float):
            values[name] = float(raw)
    return values


def _source_name(entry: LedgerEntry, feeds: dict[str, FeedRecord]) -> str:
    item = entry.item
    if item.source_kind == "rss":
        record = feeds.get(item.source_id)
        return (record.state.title if record else None) or item.site_name or item.source_id
    if item.source_kind == "newsletter":
        return item.site_name or item.author or item.source_id
    return item.source_id


def _report_item(
    entry: LedgerEntry, feeds: dict[str, FeedRecord], titles: dict[str, str]
) -> ReportItem:
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
    )


async def _day_entries(ledger: Ledger, day: date, tz: tzinfo) -> list[LedgerEntry]:
    start, end = _day_bounds(day, tz)
    async with ledger.connection.execute(
        "SELECT id FROM items WHERE discovered_at >= ? AND discovered_at < ? "
        "ORDER BY discovered_at, id",
        (start, end),
    ) as cursor:
        ids = [row[0] async for row in cursor]
    entries = [await ledger.get(item_id) for item_id in ids]
    return [e for e in entries if e is not None]


def feed_issues(records: Iterable[FeedRecord]) -> list[FeedIssue]:
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
                next_check_at=r.state.next_check_at,
                last_success_at=r.state.last_success_at,
            )
        )
    return sorted(issues, key=lambda f: (f.state != "disabled", f.url))


def _waiting_folders(workspace: Workspace) -> tuple[list[Path], list[Path]]:
    """(folders to list, folders inside them to skip: the mail and tool drops)."""
    config = workspace.config
    listed = [workspace.resolve("00-inbox"), workspace.resolve(config.clipper.folder)]
    skipped = [
        workspace.resolve(config.newsletter.drop_folder),
        workspace.resolve(config.tool_output.drop_folder),
    ]
    return listed, skipped


def _list_waiting(vault: Path, listed: list[Path], skipped: list[Path]) -> list[tuple[str, str]]:
    found: dict[str, str] = {}
    for root in listed:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.md")):
            if any(path.is_relative_to(s) for s in skipped):
                continue
            try:
                rel = path.relative_to(vault).as_posix()
            except ValueError:
                continue
            parts = PurePosixPath(rel).parts
            if any(p.startswith(".") for p in parts) or parts[0] == STATE_DIR:
                continue
            try:
                meta = parse_note(path.read_text(encoding="utf-8", errors="replace")).frontmatter
            except OSError:
                continue
            found[rel] = str(meta.get("title") or path.stem)
    return sorted(found.items())


async def gather_triage_report(
    workspace: Workspace, ledger: Ledger, day: date, *, tz: tzinfo | None = None
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
    feeds = {r.url: r for r in records}
    entries = await _day_entries(ledger, day, zone)
    titles: dict[str, str] = {}
    for original_id in {e.duplicate_of for e in entries if e.duplicate_of}:
        original = await ledger.get(original_id)
        if original is not None:
            titles[original_id] = original.item.title
    report.items = [_report_item(e, feeds, titles) for e in entries]
    report.feed_issues = feed_issues(records)

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
    for rel, title in waiting:
        entry = clippings.get(rel)
        report.waiting_notes.append(
            WaitingNote(
                rel,
                title,
                status=entry.status if entry else None,
                score=entry.score if entry else None,
            )
        )
    return report


# -- rendering ---------------------------------------------------------------------


def _cell(text: str | None) -> str:
    """Text safe inside a markdown table cell."""
    return (text or "").replace("\n", " ").replace("|", "\\|").strip()


def _link(item: ReportItem) -> str:
    """A wiki-link to the item's note (pipe escaped for tables), else its URL or title."""
    if item.note_path:
        target = item.note_path[:-3] if item.note_path.endswith(".md") else item.note_path
        return f"[[{target}\\|{_cell(item.title)}]]"
    if item.url:
        return f"[{_cell(item.title).replace(']', ')')}]({item.url.replace(')', '%29')})"
    return _cell(item.title)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _mermaid_label(text: str) -> str:
    # Mermaid strings cannot contain a double quote, and a newline ends the statement.
    return re.sub(r"[\"\n\r]+", " ", text).strip() or "?"


def _pie(title: str, values: dict[str, int]) -> list[str]:
    lines = ["```mermaid", f"pie showData title {_mermaid_label(title)}"]
    lines += [f'    "{_mermaid_label(k)}" : {v}' for k, v in values.items() if v > 0]
    return [*lines, "```"]


def _bars(title: str, labels: list[str], series: list[list[int]], y_label: str) -> list[str]:
    top = max([1, *(v for s in series for v in s)])
    axis = ", ".join(f'"{_mermaid_label(label)}"' for label in labels)
    lines = [
        "```mermaid",
        "xychart-beta",
        f'    title "{_mermaid_label(title)}"',
        f"    x-axis [{axis}]",
        f'    y-axis "{_mermaid_label(y_label)}" 0 --> {top}',
    ]
    lines += [f"    bar [{', '.join(str(v) for v in s)}]" for s in series]
    return [*lines, "```"]


def score_histogram(scores: Iterable[float], bins: int = 10) -> list[int]:
    """Counts of ``scores`` in ``bins`` equal bins over [0, 1] (1.0 goes in the last)."""
    counts = [0] * bins
    for s in scores:
        counts[min(bins - 1, max(0, int(s * bins)))] += 1
    return counts


def _charts(report: TriageReportNote) -> list[str]:
    lines: list[str] = []
    filed_domains = Counter(i.domain or "other" for i in report.with_status("filed"))
    if filed_domains:
        lines += ["", *_pie("Filed per domain", dict(sorted(filed_domains.items())))]
    scored = [i.score for i in report.with_status("filed", "rejected") if i.score is not None]
    if scored:
        labels = [f"{n / 10:.1f}" for n in range(10)]
        lines += [
            "",
            *_bars("Composite scores", labels, [score_histogram(scored)], "items"),
        ]
    kinds = Counter(i.source_kind for i in report.with_status("filed", "rejected"))
    if kinds:
        order = sorted(kinds, key=_kind_rank)
        filed = Counter(i.source_kind for i in report.with_status("filed"))
        lines += [
            "",
            *_bars(
                "Scored and filed per source",
                order,
                [[kinds[k] for k in order], [filed[k] for k in order]],
                "items",
            ),
            "",
            "Each bar is what was scored from that kind of source; the bar drawn over it "
            "is the part that was filed.",
        ]
    return lines


def render_triage_report(
    report: TriageReportNote, *, charts: bool = True, max_rows: int = 100
) -> str:
    """The report as markdown: a summary line, then one H2 section per question."""
    filed, near = report.filed, report.near_misses
    rejected = report.with_status("rejected")
    day = report.day.isoformat()
    lines = [f"# Triage report {day}", ""]
    lines.append(
        f"{len(report.items)} arrived · {len(filed)} filed · {len(rejected)} rejected "
        f"({len(near)} worth a look) · {len(report.duplicates)} duplicates · "
        f"{len(report.parked)} parked · {len(report.waiting_notes)} notes and "
        f"{report.pending_total} items waiting · {len(report.feed_issues)} feeds need attention. "
        f"Threshold {report.threshold:.2f}."
    )

    lines += ["", "## Arrived", ""]
    if not report.items:
        lines.append("Nothing arrived this day.")
    else:
        lines += [
            "| source | kind | arrived | filed | rejected | duplicate | parked | in progress |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for s in report.by_source:
            lines.append(
                f"| {_cell(s.source)} | {s.source_kind} | {s.arrived} | {s.filed} | "
                f"{s.rejected} | {s.duplicate} | {s.parked} | {s.waiting} |"
            )
        if report.by_domain:
            lines += ["", "| domain | filed | rejected |", "| --- | ---: | ---: |"]
            for domain, (n_filed, n_rejected) in report.by_domain.items():
                lines.append(f"| {domain} | {n_filed} | {n_rejected} |")
        if charts:
            lines += _charts(report)

    lines += ["", "## Filed", ""]
    if not filed:
        lines.append("Nothing was filed.")
    else:
        lines += [
            "| note | domain | composite | relevance | actionability | depth | authority |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for i in filed[:max_rows]:
            dims = " | ".join(_fmt(i.scores.get(d)) for d in DIMENSIONS)
            lines.append(f"| {_link(i)} | {i.domain or '-'} | {_fmt(i.score)} | {dims} |")
        lines += _more(len(filed), max_rows)

    lines += ["", "## Worth a look", ""]
    floor = max(0.0, report.threshold - report.near_margin)
    lines.append(
        f"Rejected, but within {report.near_margin:.2f} of the threshold "
        f"({floor:.2f} to {report.threshold:.2f})."
    )
    lines.append("")
    if not near:
        lines.append("None.")
    else:
        lines += [
            "| item | source | domain | composite | short by |",
            "| --- | --- | --- | ---: | ---: |",
        ]
        for i in near[:max_rows]:
            gap = report.threshold - (i.score or 0.0)
            lines.append(
                f"| {_link(i)} | {_cell(i.source)} | {i.domain or '-'} | {_fmt(i.score)} "
                f"| {gap:.2f} |"
            )
        lines += _more(len(near), max_rows)

    lines += ["", "## Duplicates merged", ""]
    if not report.duplicates:
        lines.append("None.")
    else:
        lines += ["| item | source | same as |", "| --- | --- | --- |"]
        for i in report.duplicates[:max_rows]:
            lines.append(f"| {_link(i)} | {_cell(i.source)} | {_cell(i.duplicate_of)} |")
        lines += _more(len(report.duplicates), max_rows)

    lines += ["", "## Waiting", ""]
    if not report.waiting_notes and not report.pending_total:
        lines.append("The inbox is empty.")
    if report.waiting_notes:
        lines += ["| note | status | composite |", "| --- | --- | ---: |"]
        for w in report.waiting_notes[:max_rows]:
            target = w.path[:-3] if w.path.endswith(".md") else w.path
            status = {"rejected": "below threshold", None: "not triaged"}.get(
                w.status, w.status or ""
            )
            lines.append(f"| [[{target}\\|{_cell(w.title)}]] | {status} | {_fmt(w.score)} |")
        lines += _more(len(report.waiting_notes), max_rows)
    if report.pending_total:
        lines += ["", f"{report.pending_total} item(s) in the ledger wait for triage:", ""]
        lines += [f"- {_link(i)} ({_cell(i.source)})" for i in report.pending[:max_rows]]
        lines += _more(report.pending_total, max_rows)

    lines += ["", "## Feeds needing attention", ""]
    if not report.feed_issues:
        lines.append("All feeds are healthy.")
    else:
        lines += [
            "| feed | state | errors | last error | next check |",
            "| --- | --- | ---: | --- | --- |",
        ]
        for f in report.feed_issues[:max_rows]:
            name = f"[{_cell(f.title or f.url)}]({f.url})"
            when = (
                f.next_check_at.astimezone().strftime("%Y-%m-%d %H:%M")
                if f.next_check_at and f.state == "backoff"
                else "-"
            )
            lines.append(
                f"| {name} | {f.state} | {f.error_count} | {_cell(f.last_error)} | {when} |"
            )

    lines += ["", "## Parked errors", ""]
    if not report.parked:
        lines.append("None.")
    else:
        lines += ["| item | source | reason |", "| --- | --- | --- |"]
        for i in report.parked[:max_rows]:
            lines.append(f"| {_link(i)} | {_cell(i.source)} | {_cell(i.error)} |")
        lines += _more(len(report.parked), max_rows)
    return "\n".join(lines) + "\n"


def _more(total: int, shown: int) -> list[str]:
    return ["", f"…and {total - shown} more."] if total > shown else []


async def write_triage_report(
    workspace: Workspace, day: date, *, tz: tzinfo | None = None, ledger: Ledger | None = None
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
    body = render_triage_report(report, charts=settings.charts, max_rows=settings.max_rows)
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
