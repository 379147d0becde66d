"""The daily triage report as markdown: tables, wiki-links and Mermaid charts that
Obsidian draws (``pie`` and ``xychart-beta``, checked with the real Mermaid parser in
``tests/test_triage_report.py``)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from datetime import tzinfo

from signaldesk.pipeline.intake.summary import ProblemGroup, problem_lines
from signaldesk.pipeline.reports.note_links import note_link
from signaldesk.pipeline.reports.triage_report_model import (
    DIMENSIONS,
    CorrectionNote,
    ReportItem,
    TriageReportNote,
    kind_rank,
)
from signaldesk.pipeline.wording import plural
from signaldesk.sources.http import host_of

__all__ = ["render_triage_report", "score_histogram"]


def _cell(text: str | None) -> str:
    """Text safe inside a markdown table cell."""
    return (text or "").replace("\n", " ").replace("|", "\\|").strip()


def _link(item: ReportItem) -> str:
    """A link to the item's note (its filed note, else the clipping it is), else its URL
    or title; pipes escaped for tables."""
    return _note_link(item.title, item.note_path or item.origin_path, item.url)


def _note_link(title: str, note_path: str | None, url: str | None) -> str:
    if note_path:
        return note_link(note_path, title, in_table=True)
    if url:
        return f"[{_cell(title).replace(']', ')')}]({url.replace(')', '%29')})"
    return _cell(title)


# What a waiting note's ledger status means for it (other statuses are shown as they are).
_WAITING_STATUS: dict[str | None, str] = {
    "rejected": "below threshold",
    "unscanned": "not scanned yet (the next scan takes it)",
    None: "yours to file (triage leaves it alone)",
}


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
        order = sorted(kinds, key=kind_rank)
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
    report: TriageReportNote,
    *,
    charts: bool = True,
    max_rows: int = 100,
    tz: tzinfo | None = None,
) -> str:
    """The report as markdown: a summary line, then one H2 section per question.

    :param tz: the zone times are shown in, the one the report's day is counted in
        (default: this machine's).
    """
    filed, near = report.filed, report.near_misses
    rejected = report.with_status("rejected")
    day = report.day.isoformat()
    lines = [f"# Triage report {day}", ""]
    lines.append(
        f"{len(report.items)} arrived · {len(filed)} filed · {len(rejected)} rejected "
        f"({len(near)} worth a look) · {plural(len(report.duplicates), 'duplicate')} · "
        f"{len(report.parked)} parked · {plural(len(report.waiting_notes), 'note')} and "
        f"{plural(report.pending_total, 'item')} waiting · "
        f"{plural(len(report.feed_issues), 'feed needs', 'feeds need')} attention. "
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
        + (
            " `signaldesk triage accept ID` files one (scoring learns from it); "
            "`held back by` is its weakest score."
            if near
            else ""
        )
    )
    lines.append("")
    if not near:
        lines.append("None.")
    else:
        lines += [
            "| item | id | source | domain | composite | short by | held back by |",
            "| --- | --- | --- | --- | ---: | ---: | --- |",
        ]
        for i in near[:max_rows]:
            # Three decimals, as the note's frontmatter has them: at two, 0.548 read as
            # "0.55, short by 0.00" beside a threshold of 0.55.
            score = i.score or 0.0
            lines.append(
                f"| {_link(i)} | {i.id[:10]} | {_cell(i.source)} | {i.domain or '-'} "
                f"| {score:.3f} | {report.threshold - score:.3f} | {_cell(i.held_back)} |"
            )
        lines += _more(len(near), max_rows)

    lines += _corrections_section(report.corrections, max_rows)

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
            if w.status == "duplicate" and w.duplicate_of:
                status = f"duplicate of {_cell(w.duplicate_of)}"
            else:
                status = _WAITING_STATUS.get(w.status, w.status or "")
            link = note_link(w.path, w.title, in_table=True)
            lines.append(f"| {link} | {status} | {_fmt(w.score)} |")
        lines += _more(len(report.waiting_notes), max_rows)
    if report.pending_total:
        lines += ["", f"{report.pending_total} item(s) in the ledger wait for triage:", ""]
        lines += [f"- {_link(i)} ({_cell(i.source)})" for i in report.pending[:max_rows]]
        lines += _more(report.pending_total, max_rows)

    lines += ["", "## Feeds needing attention", ""]
    teasers = report.teasers
    if not report.feed_issues and not teasers:
        lines.append("All feeds are healthy.")
    if teasers:
        hosts = {host_of(i.url) for i in teasers}
        lines.append(
            f"Article pages could not be fetched for {len(teasers)} of the day's entries, "
            f"from {len(hosts)} {'host' if len(hosts) == 1 else 'hosts'}: they were scored "
            "on the feed's own teaser, and their pages are tried again in later scans."
        )
        lines.append("")
        lines += [f"- {_cell(line)}" for line in problem_lines(_page_groups(teasers))]
        if report.feed_issues:
            lines.append("")
    if report.feed_issues:
        lines += [
            "| feed | state | errors | last error | next check |",
            "| --- | --- | ---: | --- | --- |",
        ]
        for f in report.feed_issues[:max_rows]:
            name = f"[{_cell(f.title or f.url)}]({f.url})"
            when = "-"
            if f.state == "backoff":
                at = f.next_check_at
                when = at.astimezone(tz).strftime("%Y-%m-%d %H:%M") if at else "next scan"
            lines.append(
                f"| {name} | {f.state} | {f.error_count} | {_cell(f.last_error)} | {when} |"
            )

    lines += ["", "## Parked errors", ""]
    if not report.parked:
        lines.append("None.")
    else:
        # One row per reason, not per item: 69 pages failing alike are one problem.
        lines += ["| reason | items | for example |", "| --- | ---: | --- |"]
        groups = report.parked_by_reason
        for _key, items in groups[:max_rows]:
            examples = ", ".join(_link(i) for i in items[:3])
            more = f" and {len(items) - 3} more" if len(items) > 3 else ""
            lines.append(f"| {_cell(items[0].error)} | {len(items)} | {examples}{more} |")
        lines += _more(len(groups), max_rows)
    return "\n".join(lines) + "\n"


def _page_groups(teasers: Iterable[ReportItem]) -> list[ProblemGroup]:
    groups: dict[tuple[str, str], ProblemGroup] = {}
    for item in teasers:
        host, cause = host_of(item.url), item.page_cause or "not fetched"
        group = groups.setdefault((host, cause), ProblemGroup("article page", host, cause))
        group.count += 1
        group.example = group.example or (item.url or "")
    return list(groups.values())


def _corrections_section(corrections: list[CorrectionNote], max_rows: int) -> list[str]:
    """What the person corrected that day: triage learns from these."""
    lines = ["", "## Your corrections", ""]
    if not corrections:
        return [*lines, "None."]
    lines += [
        "Triage learns from these (`signaldesk triage corrections` lists the ones in force; "
        "`--undo N` or `--reset` takes them back).",
        "",
        "| item | what you did | kept | domain |",
        "| --- | --- | --- | --- |",
    ]
    for c in corrections[:max_rows]:
        kept = {True: "yes", False: "no", None: "-"}[c.accept]
        how = _cell(c.how) + (" (undone since)" if c.undone else "")
        link = _note_link(c.title, c.note_path, c.url)
        lines.append(f"| {link} | {how} | {kept} | {c.domain or '-'} |")
    return lines + _more(len(corrections), max_rows)


def _more(total: int, shown: int) -> list[str]:
    return ["", f"…and {total - shown} more."] if total > shown else []
