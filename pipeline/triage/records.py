"""What triage decided per item and what a run did: the records the CLI and reports show."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from signaldesk.pipeline.triage.filing import NoteOutcome
from signaldesk.retrieval.records import IndexReport
from signaldesk.scoring.records import DIMENSIONS, ScoreCard

__all__ = [
    "WRITTEN_OUTCOMES",
    "Decision",
    "TriageDecision",
    "TriageProgress",
    "TriageReport",
    "card_to_json",
]

Decision = Literal["filed", "rejected"]

# Outcomes that wrote a file (or, in a dry run, would): these paths go to the indexer.
WRITTEN_OUTCOMES: frozenset[str] = frozenset({"created", "moved", "copied", "updated"})


@dataclass(frozen=True, slots=True)
class TriageDecision:
    """What triage decided and did for one item.

    :param decision: ``filed`` when the composite passed the threshold, else ``rejected``.
    :param outcome: what happened in the vault (see :data:`pipeline.triage.filing.NoteOutcome`;
        ``stays``: below threshold, nothing written; ``failed``: see ``message``).
    :param note_path: the item's note, vault-relative, when it has one.
    :param by_person: ``decision`` is the person's own (``triage accept``), not the
        threshold's: a note filed below the line.
    """

    item_id: str
    title: str
    source_kind: str
    composite: float
    threshold: float
    domain: str
    decision: Decision
    outcome: NoteOutcome
    note_path: str | None
    origin_path: str | None = None
    message: str | None = None
    by_person: bool = False


@dataclass(frozen=True, slots=True)
class TriageProgress:
    """A snapshot for progress bars: items done of those known so far."""

    done: int
    total: int
    filed: int
    rejected: int


@dataclass(slots=True)
class TriageReport:
    """The outcome of one triage run (``dry_run``: nothing was written anywhere)."""

    dry_run: bool
    decisions: list[TriageDecision] = field(default_factory=list)
    indexed: IndexReport | None = None
    index_error: str | None = None
    errors: list[str] = field(default_factory=list)
    scoring_mode: str = "embedding"
    elapsed: float = 0.0
    corrections: list[str] = field(default_factory=list)
    """Corrections noticed in the vault at the start of the run (what, which item)."""

    @property
    def filed(self) -> list[TriageDecision]:
        """Items that passed the threshold (except those a re-score only held)."""
        return [d for d in self.decisions if d.decision == "filed" and d.outcome != "held"]

    @property
    def held(self) -> list[TriageDecision]:
        """Rejected items that pass after a re-score; ``--rescore`` files nothing itself."""
        return [d for d in self.decisions if d.outcome == "held"]

    @property
    def rejected(self) -> list[TriageDecision]:
        """Items below the threshold (they stay in the ledger with their scores)."""
        return [d for d in self.decisions if d.decision == "rejected"]

    @property
    def written(self) -> list[str]:
        """Vault-relative paths this run wrote (or, in a dry run, would write)."""
        return [
            d.note_path for d in self.decisions if d.note_path and d.outcome in WRITTEN_OUTCOMES
        ]

    @property
    def inbox_waiting(self) -> list[TriageDecision]:
        """Clippings below the threshold: they stay in the inbox for a person to look at."""
        return [d for d in self.decisions if d.source_kind == "clipper" and d.outcome == "stays"]


def card_to_json(card: ScoreCard, *, threshold: float) -> dict[str, Any]:
    """A score card as the JSON the ledger keeps in ``scores`` (and ``--json`` prints)."""
    data: dict[str, Any] = {
        name: {
            "value": card.dimension(name).value,
            "reason": card.dimension(name).reason,
            "features": card.dimension(name).features,
        }
        for name in DIMENSIONS
    }
    if card.learned is not None:
        data["learned"] = {
            "value": card.learned.value,
            "reason": card.learned.reason,
            "features": card.learned.features,
        }
    data["composite"] = card.composite
    data["threshold"] = threshold
    data["passed"] = card.passed
    data["teaser"] = card.teaser
    data["summary"] = card.summary(threshold)
    data["route"] = {
        "domain": card.route.domain,
        "confidence": card.route.confidence,
        "reason": card.route.reason,
        "candidates": [list(c) for c in card.route.candidates],
    }
    return data
