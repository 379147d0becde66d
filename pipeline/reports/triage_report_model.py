"""What the daily triage report holds: the day's items and what needs a person.

Built by :func:`pipeline.reports.triage_report.gather_triage_report`, rendered by
:mod:`pipeline.reports.triage_report_render`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime

from signaldesk.signal_note import DIMENSIONS

__all__ = [
    "DIMENSIONS",
    "CorrectionNote",
    "FeedIssue",
    "ReportItem",
    "SourceCount",
    "TriageReportNote",
    "WaitingNote",
    "kind_rank",
    "reason_key",
]

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
    teaser: bool = False
    page_cause: str | None = None  # why the article page could not be had (teasers)
    # The note a clipping is (vault-relative), linked while it has no filed note.
    origin_path: str | None = None
    held_back: str = "-"  # its weakest score and why (signal_note.weakest_score)


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
    # The clipping's ledger status; "unscanned": in the clipper folder, not seen yet;
    # None: a person's note in the inbox.
    status: str | None = None
    score: float | None = None
    duplicate_of: str | None = None  # the title of the item a duplicate clipping repeats


@dataclass(frozen=True, slots=True)
class FeedIssue:
    """A feed in backoff or disabled."""

    url: str
    title: str | None
    state: str  # "backoff" | "disabled"
    error_count: int
    last_error: str | None
    next_check_at: datetime | None  # None: at the next scan (a backoff that has run out)
    last_success_at: datetime | None


@dataclass(frozen=True, slots=True)
class CorrectionNote:
    """A correction the person made that day (``pipeline.triage.corrections``)."""

    item_id: str
    title: str
    how: str
    accept: bool | None
    domain: str | None
    recorded_at: datetime
    undone: bool = False
    note_path: str | None = None
    url: str | None = None


@dataclass
class TriageReportNote:
    """Everything the report shows for one day (tests and ``--json`` read this)."""

    day: date
    threshold: float
    near_margin: float
    items: list[ReportItem] = field(default_factory=list)
    corrections: list[CorrectionNote] = field(default_factory=list)
    """What the person corrected that day (recorded then), oldest first."""
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
    def teasers(self) -> list[ReportItem]:
        """Feed entries of the day scored on their teaser: the article page did not come."""
        return [i for i in self.items if i.teaser and i.status != "duplicate"]

    @property
    def parked_by_reason(self) -> list[tuple[str, list[ReportItem]]]:
        """Parked items grouped by their reason (links and numbers aside), largest first."""
        groups: dict[str, list[ReportItem]] = {}
        for item in self.parked:
            groups.setdefault(reason_key(item.error), []).append(item)
        return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))

    @property
    def by_source(self) -> list[SourceCount]:
        """Counts per source, in source-kind order then by name."""
        keys = sorted(
            {(i.source_kind, i.source) for i in self.items},
            key=lambda k: (kind_rank(k[0]), k[1].lower()),
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


_URL = re.compile(r"https?://[^\s)>\]]+|\b[\w.-]+\.(?:md|eml|mbox|json|txt)\b")
_NUMBER = re.compile(r"\d+")


def reason_key(reason: str | None) -> str:
    """A parked reason with its links, file names and numbers blanked, for grouping:
    69 "HTTP 404 fetching article https://…/a/17" rows become one."""
    if not reason:
        return "no reason recorded"
    text = _URL.sub("…", reason)
    return " ".join(_NUMBER.sub("N", text).split())[:160]


def kind_rank(kind: str) -> int:
    return _SOURCE_ORDER.index(kind) if kind in _SOURCE_ORDER else len(_SOURCE_ORDER)
