"""The results of scoring one item: four dimension scores, the composite and the route."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from signaldesk.signal_note import DIMENSIONS

__all__ = [
    "DIMENSIONS",
    "TEASER_NOTE",
    "DimensionScore",
    "LearnedShift",
    "RouteDecision",
    "ScoreCard",
]

"""The four dimensions, in the order the composite formula lists them."""

TEASER_NOTE = (
    "scored on the feed's teaser (the page could not be fetched); "
    "re-scored when the full text arrives"
)
"""What a card scored on a teaser says, in its depth reason and its summary."""


@dataclass(frozen=True, slots=True)
class DimensionScore:
    """One dimension's score and why.

    :param value: the score in [0, 1].
    :param reason: one line a person can read ("steps: 5, code blocks: 2, ...").
    :param features: the measured features that produced ``value`` (names are stable).
    """

    value: float
    reason: str
    features: dict[str, float]


@dataclass(frozen=True, slots=True)
class LearnedShift:
    """What this vault's corrections add to the composite (:mod:`scoring.feedback`).

    :param value: the signed amount added to the weighted sum of the four dimensions.
    :param reason: one line naming the corrections behind it ("you kept 2 similar items
        and 1 other item from this site (+0.11)"; with the person's line, "...; your 6
        corrections near the threshold put your line 0.03 lower (+0.03); in all (+0.14)").
    :param features: the votes and the line behind ``value`` (names are stable).
    """

    value: float
    reason: str
    features: dict[str, float]


@dataclass(frozen=True, slots=True)
class RouteDecision:
    """Which domain folder an item is filed under, and how sure the router is.

    :param domain: one of :data:`signaldesk.vault.DOMAINS` (``other`` when nothing is confident).
    :param confidence: the best domain's combined keyword and embedding score, in [0, 1];
        for ``other``, one minus the best domain's score (how clearly nothing fits).
    :param reason: one line naming the keywords and similarity that decided it.
    :param candidates: the best domains with their combined scores, best first.
    """

    domain: str
    confidence: float
    reason: str
    candidates: tuple[tuple[str, float], ...]


@dataclass(frozen=True, slots=True)
class ScoreCard:
    """Everything triage decides about one item.

    :param composite: the weighted sum of the four dimensions, plus ``learned`` when this
        vault's corrections moved it, in [0, 1].
    :param passed: ``composite > threshold``: the item is filed under ``route.domain``.
    :param teaser: scored on a feed's teaser, not the full text (``Item.teaser``): the
        decision is provisional, and the item is scored again when the full text arrives.
    :param by_person: ``passed`` and the route are the person's own decision
        (``signaldesk triage accept`` / ``move``), not the threshold's.
    :param learned: what this vault's corrections added to the composite (``None``: nothing,
        the shipped formula alone).
    """

    relevance: DimensionScore
    actionability: DimensionScore
    depth: DimensionScore
    authority: DimensionScore
    composite: float
    passed: bool
    route: RouteDecision
    teaser: bool = False
    by_person: bool = False
    learned: LearnedShift | None = None

    def dimension(self, name: str) -> DimensionScore:
        """The score of dimension ``name`` (one of :data:`DIMENSIONS`)."""
        if name not in DIMENSIONS:
            raise KeyError(name)
        score: DimensionScore = getattr(self, name)
        return score

    def summary(self, threshold: float) -> str:
        """One line on the decision, agreeing with ``passed`` and the numbers."""
        sign = ">" if self.composite > threshold else "<="
        numbers = f"composite {self.composite:.3f} {sign} {threshold:.2f}"
        if self.learned is not None:
            numbers += f" ({self.learned.value:+.2f} learned from your corrections)"
        line = (
            f"filed under {self.route.domain}: {numbers}"
            if self.passed
            else f"not filed: {numbers}"
        )
        if self.by_person:
            line += "; your decision"
        if self.teaser:
            line += f"; {TEASER_NOTE}"
        return line

    def as_frontmatter(self) -> dict[str, Any]:
        """The fields a signal note's frontmatter records (SPEC section 5), rounded for people."""
        scores: dict[str, Any] = {name: round(self.dimension(name).value, 3) for name in DIMENSIONS}
        why = {name: self.dimension(name).reason for name in DIMENSIONS}
        if self.learned is not None:
            scores["learned"] = round(self.learned.value, 3)
            why["learned"] = self.learned.reason
        return {
            "scores": scores,
            "composite": round(self.composite, 3),
            "domain": self.route.domain,
            "route_confidence": round(self.route.confidence, 3),
            "why": {**why, "route": self.route.reason},
        }
