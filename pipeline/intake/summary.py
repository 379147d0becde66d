"""What an intake scan did, counted as it goes (progress) and summed up at the end."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from signaldesk.items import SourceKind
from signaldesk.pipeline.wording import plural

__all__ = [
    "SOURCE_KINDS",
    "FeedProblem",
    "Handoff",
    "ProblemGroup",
    "ScanStats",
    "SourceTally",
    "problem_lines",
]

SOURCE_KINDS: tuple[SourceKind, ...] = ("rss", "clipper", "newsletter", "tool_output")

# The seam to triage: awaited with the id of every item the scan settled as new
# ("pending"), from the single dedupe worker. Awaiting it is the backpressure:
# a slow consumer slows the scan instead of growing a queue.
Handoff = Callable[[str], Awaitable[None]]


@dataclass(slots=True)
class SourceTally:
    """Per source kind: items that were new, duplicates, parked, and errors seen.

    ``errors`` counts failures that did not park anything: a feed that could not be
    polled, an item a stage could not handle (it is retried next scan). ``teasers``
    counts entries that went on with the feed's own text because their article page
    could not be fetched (it is fetched again later); ``refetched`` the earlier such
    entries whose page arrived in this scan.
    """

    new: int = 0
    duplicate: int = 0
    parked: int = 0
    errors: int = 0
    teasers: int = 0
    refetched: int = 0


@dataclass(slots=True)
class ProblemGroup:
    """Failures of one kind of work at one host for one cause, counted, with an example.

    :param what: what failed ("article page", "feed", "mail", ...).
    :param host: the host (or file, for local sources) it failed at.
    :param cause: a short label ("timed out", "connection refused", "HTTP 404", ...).
    :param count: failures, ``skipped`` of them not even tried (the host had not
        answered earlier in the scan).
    """

    what: str
    host: str
    cause: str
    count: int = 0
    skipped: int = 0
    example: str = ""


@dataclass(frozen=True, slots=True)
class FeedProblem:
    """A feed that failed in this scan, or is disabled."""

    url: str
    title: str | None
    outcome: str
    error: str | None
    error_count: int
    disabled_reason: str | None


@dataclass(slots=True)
class ScanStats:
    """Live counters of one scan (the progress callback gets this object)."""

    feeds_due: int = 0
    feeds_polled: int = 0
    feeds_not_modified: int = 0
    feeds_failed: int = 0
    resumed: int = 0
    items_seen: int = 0
    tallies: dict[str, SourceTally] = field(
        default_factory=lambda: {kind: SourceTally() for kind in SOURCE_KINDS}
    )
    feed_problems: list[FeedProblem] = field(default_factory=list)
    problems: dict[tuple[str, str, str], ProblemGroup] = field(default_factory=dict)
    new_ids: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    def tally(self, kind: str) -> SourceTally:
        """The tally of ``kind`` (created on first use)."""
        return self.tallies.setdefault(kind, SourceTally())

    def problem(
        self, what: str, host: str, cause: str, example: str, *, skipped: bool = False
    ) -> None:
        """Count one failure in its group (one line per group is shown, never one per item)."""
        group = self.problems.get((what, host, cause))
        if group is None:
            group = self.problems[(what, host, cause)] = ProblemGroup(what, host, cause)
            group.example = example
        group.count += 1
        group.skipped += int(skipped)

    @property
    def totals(self) -> SourceTally:
        """All sources summed."""
        total = SourceTally()
        for t in self.tallies.values():
            total.new += t.new
            total.duplicate += t.duplicate
            total.parked += t.parked
            total.errors += t.errors
            total.teasers += t.teasers
            total.refetched += t.refetched
        return total


# More hosts than this failing for one cause are shown as one line for all of them.
_HOSTS_PER_CAUSE = 5


def problem_lines(groups: Iterable[ProblemGroup]) -> list[str]:
    """One line per kind of work, cause and host; a cause seen at many hosts is one line.

    ``article page: connection refused at example.org (3 pages, 2 of them not tried); e.g.
    https://example.org/a`` (the first that failed, to look at), or ``article page: timed
    out at 12 hosts (40 pages): a.org, b.net, c.io, ...``.
    """
    by_cause: dict[tuple[str, str], list[ProblemGroup]] = {}
    for group in groups:
        by_cause.setdefault((group.what, group.cause), []).append(group)
    lines: list[str] = []
    for (what, cause), found in sorted(
        by_cause.items(), key=lambda kv: -sum(g.count for g in kv[1])
    ):
        found.sort(key=lambda g: (-g.count, g.host))
        count = sum(g.count for g in found)
        skipped = sum(g.skipped for g in found)
        unit = _plural(count, what)
        not_tried = f", {skipped} of them not tried" if skipped else ""
        if len(found) > _HOSTS_PER_CAUSE:
            hosts = ", ".join(g.host for g in found[:_HOSTS_PER_CAUSE])
            lines.append(f"{what}: {cause} at {len(found)} hosts ({unit}{not_tried}): {hosts}, ...")
            continue
        for g in found:
            tried = f", {g.skipped} of them not tried" if g.skipped else ""
            example = f"; e.g. {g.example}" if g.example else ""
            lines.append(f"{what}: {cause} at {g.host} ({_plural(g.count, what)}{tried}){example}")
    return lines


def _plural(count: int, what: str) -> str:
    return plural(count, what.rsplit(" ", 1)[-1])
