"""How `signaldesk demo` shows each step: a heading, what happened, and where to look."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from signaldesk.pipeline.demo.tour import DemoResult, DemoStep, DemoVault
from signaldesk.pipeline.intake.summary import FeedProblem, ScanStats
from signaldesk.pipeline.reports.captains_log import CaptainsLog
from signaldesk.pipeline.reports.captains_log import summary_line as log_summary
from signaldesk.pipeline.reports.generated_notes import GeneratedNote
from signaldesk.pipeline.reports.triage_report import TriageReportNote
from signaldesk.pipeline.reports.triage_report import summary_line as report_summary
from signaldesk.pipeline.triage.records import TriageReport
from signaldesk.retrieval.records import IndexReport, SearchResult
from signaldesk.vault import SIGNALS_FOLDER

__all__ = ["DemoView"]


def _feed_problem_text(problem: FeedProblem) -> str:
    """What happened to a feed, once: ``gone (410)`` when it failed in this scan,
    ``disabled (gone (410))`` on a later scan, which skips it for that reason."""
    reason = problem.disabled_reason or problem.error
    if not reason or reason.startswith(problem.outcome):
        return reason or problem.outcome
    return f"{problem.outcome} ({reason})"


class DemoView:
    """Prints the demo's steps with rich as they finish."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.vault: Path | None = None

    def _heading(self, step: DemoStep) -> None:
        self.console.rule(f"[bold]{step.title}[/] [dim]({step.seconds:.1f} s)[/]", align="left")

    def _rel(self, path: Path | str) -> str:
        path = Path(path)
        if self.vault is not None:
            try:
                return path.relative_to(self.vault).as_posix()
            except ValueError:
                pass
        return str(path)

    def step(self, step: DemoStep) -> None:
        self._heading(step)
        handler = getattr(self, f"_show_{step.key}", None)
        if handler is not None:
            handler(step.data)

    def _show_vault(self, data: DemoVault) -> None:
        self.vault = data.init.vault
        c = self.console
        c.print(f"vault: [bold]{escape(str(data.init.vault))}[/]", highlight=False)
        created = len(data.init.created)
        c.print(
            f"{created} folders/files created, {len(data.init.kept)} kept; "
            f"{len(data.notes_added)} hand-written notes added",
            highlight=False,
        )
        for placed in data.samples_placed:
            c.print(f"  dropped sample: {placed}", markup=False, highlight=False)
        if not data.samples_placed:
            c.print("  samples were placed by an earlier run (not placed again)")
        if data.repo is not None:
            c.print(
                f"  git repository for the captain's log: {data.repo}",
                markup=False,
                highlight=False,
            )
        if data.repo_problem:
            c.print(f"  [yellow]{escape(data.repo_problem)}[/]", highlight=False)

    def _show_feeds(self, added: list[str]) -> None:
        if added:
            for url in added:
                self.console.print(f"  subscribed: {url}", markup=False, highlight=False)
        else:
            self.console.print("  feeds already subscribed (from an earlier run)")

    def _show_scan(self, stats: ScanStats) -> None:
        table = Table(show_edge=False)
        for column in ("source", "new", "duplicate", "parked", "errors"):
            table.add_column(column, justify="left" if column == "source" else "right")
        for kind, t in stats.tallies.items():
            table.add_row(kind, str(t.new), str(t.duplicate), str(t.parked), str(t.errors))
        self.console.print(table)
        self.console.print(
            f"feeds polled {stats.feeds_polled}, failed {stats.feeds_failed}",
            highlight=False,
        )
        for p in stats.feed_problems:
            self.console.print(
                f"  [yellow]{escape(p.title or p.url)}: {escape(_feed_problem_text(p))}[/]",
                highlight=False,
            )

    def _show_triage(self, report: TriageReport | None) -> None:
        if report is None:
            self.console.print(
                "triage after scan is turned off ([triage] after_scan = false)", markup=False
            )
            return
        table = Table(show_edge=False)
        for column in ("decision", "score", "domain"):
            table.add_column(column, no_wrap=True)
        table.add_column("item", overflow="fold", ratio=1)
        table.add_column("note", overflow="fold", ratio=1)
        for d in sorted(report.decisions, key=lambda d: -d.composite):
            colour = "green" if d.decision == "filed" else "yellow"
            table.add_row(
                f"[{colour}]{d.decision}[/]",
                f"{d.composite:.2f}",
                d.domain,
                Text(d.title),
                Text(d.note_path or d.origin_path or ""),
            )
        self.console.print(table)
        self.console.print(
            f"{len(report.filed)} filed, {len(report.rejected)} below the threshold "
            f"({report.scoring_mode} scoring)",
            highlight=False,
        )
        if report.index_error:
            self.console.print(
                f"[yellow]indexing after triage: {escape(report.index_error)}[/]", highlight=False
            )

    def _show_note(self, note: GeneratedNote, detail: str) -> None:
        self.console.print(
            f"{escape(self._rel(note.path))} [dim]({note.outcome})[/]: {escape(detail)}",
            highlight=False,
        )

    def _show_report(self, data: tuple[TriageReportNote, GeneratedNote]) -> None:
        report, note = data
        self._show_note(note, report_summary(report))

    def _show_log(self, data: tuple[CaptainsLog, GeneratedNote]) -> None:
        log, note = data
        self._show_note(note, log_summary(log))

    def _show_index(self, report: IndexReport) -> None:
        self.console.print(
            f"{report.added} added, {report.changed} changed, {report.unchanged} unchanged; "
            f"{report.chunks_embedded} chunks embedded in {report.seconds:.1f} s",
            highlight=False,
        )

    def _show_search(self, results: list[SearchResult]) -> None:
        table = Table(show_edge=False)
        for column in ("#", "score", "note", "section"):
            table.add_column(column, overflow="fold")
        for n, r in enumerate(results, 1):
            table.add_row(str(n), f"{r.score:.3f}", Text(r.path), Text(r.section or ""))
        self.console.print(table)

    def finish(self, result: DemoResult) -> None:
        vault = result.vault
        # As a shell would take it, and not read as markup (a folder named "[work]").
        arg = escape(shlex.quote(str(vault)))
        for problem in result.problems:
            self.console.print(f"[bold red]problem:[/] {escape(problem)}", highlight=False)
        done = "Done" if result.ok else "[yellow]Finished with problems[/] (see above)"
        lines: list[Any] = [
            f"{done} in {result.seconds:.1f} s. Open [bold]{escape(str(vault))}[/] in Obsidian, "
            "or try:",
            "",
            f"  signaldesk --vault {arg} search {escape(shlex.quote(result.query))}",
            f"  signaldesk --vault {arg} items",
            f"  signaldesk --vault {arg} status",
            f"  signaldesk --vault {arg} serve      # keep it running",
            "",
            f"Filed signals: {SIGNALS_FOLDER}/<domain>/",  # the demo keeps the default layout
        ]
        if result.report is not None:
            lines.append(f"Triage report: {escape(self._rel(result.report.path))}")
        if result.log is not None:
            lines.append(f"Captain's log: {escape(self._rel(result.log.path))}")
        # Not in a panel: a border would cut a command that wraps at the terminal's edge
        # into pieces that no longer paste; a soft wrap keeps each one a single line.
        self.console.rule("where to look")
        for line in lines:
            self.console.print(line, soft_wrap=True, highlight=False)
