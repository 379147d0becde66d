"""What an intake scan did, counted as it goes (progress) and summed up at the end."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from signaldesk.items import SourceKind

__all__ = ["SOURCE_KINDS", "FeedProblem", "Handoff", "ScanStats", "SourceTally"]

SOURCE_KINDS: tuple[SourceKind, ...] = ("rss", "clipper", "newsletter", "tool_output")

# The seam to triage: awaited with the id of every item the scan settled as new
# ("pending"), from the single dedupe worker. Awaiting it is the backpressure:
# a slow consumer slows the scan instead of growing a queue.
Handoff = Callable[[str], Awaitable[None]]


@dataclass(slots=True)
class SourceTally:
    """Per source kind: items that were new, duplicates, parked, and errors seen.

    ``errors`` counts failures that did not park anything: a feed that could not be
    polled, a page that will be retried next scan.
    """

    new: int = 0
    duplicate: int = 0
    parked: int = 0
    errors: int = 0


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
    new_ids: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    def tally(self, kind: str) -> SourceTally:
        """The tally of ``kind`` (created on first use)."""
        return self.tallies.setdefault(kind, SourceTally())

    @property
    def totals(self) -> SourceTally:
        """All sources summed."""
        total = SourceTally()
        for t in self.tallies.values():
            total.new += t.new
            total.duplicate += t.duplicate
            total.parked += t.parked
            total.errors += t.errors
        return total
