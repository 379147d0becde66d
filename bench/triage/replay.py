"""Replay corrections from the tuning half and measure the held-out half again.

The 20 corrections are what a person using signaldesk on the tuning items would do: reject
what was filed against their judgement, accept what was left out, move what was filed
under the wrong domain, and, to make up the 20, confirm the decisions nearest the threshold
(the ones the triage report shows them): keep the note, or throw the item away (delete the
clipping from the inbox; `triage reject` a feed item). None comes from the held-out half.
Undoing them is building the scorer without them: every held-out decision must be back.
:func:`replay_draws` repeats the replay with other draws of the confirmations, to show how
much the figure owes to which near decisions were confirmed.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.triage.corpus import Example
from bench.triage.metrics import Agreement, measure
from signaldesk.scoring import ScoreCard, Scorer
from signaldesk.scoring.feedback import Correction

__all__ = ["ReplayResult", "choose_corrections", "replay_corrections", "replay_draws"]

CORRECTIONS = 20
# The daily report's window around the threshold (ReportSettings.near_threshold's default).
NEAR = 0.1
_BATCH = 64


def _score(scorer: Scorer, examples: Sequence[Example], mode: str) -> list[ScoreCard]:
    cards: list[ScoreCard] = []
    items = [x.item(mode) for x in examples]  # type: ignore[arg-type]
    for start in range(0, len(items), _BATCH):
        cards.extend(scorer.score_many(items[start : start + _BATCH]))
    return cards


def choose_corrections(
    tuning: Sequence[Example],
    cards: Sequence[ScoreCard],
    mode: str,
    n: int = CORRECTIONS,
    *,
    seed: int | None = None,
) -> list[Correction]:
    """The corrections a person would make on the tuning items (see the module docstring).

    :param seed: instead of the confirmations nearest the threshold, a seeded random draw of
        them among the decisions within :data:`NEAR` of it (another person, looking at the
        same near decisions, confirms others): for :func:`replay_draws`.
    """
    wrong: list[Correction] = []
    moves: list[Correction] = []
    confirm: list[tuple[float, str, Correction]] = []
    confirm_reject = "deleted the clipping" if mode == "clipper" else "`triage reject`"
    for x, card in zip(tuning, cards, strict=True):
        item = x.item(mode)  # type: ignore[arg-type]
        margin = abs(card.composite - 0.55)
        if card.passed and not x.file:
            wrong.append(Correction(item, False, None, "`triage reject`"))
        elif x.file and not card.passed:
            wrong.append(Correction(item, True, x.domain, "`triage accept`"))
        elif x.file and card.route.domain != x.domain:
            moves.append(Correction(item, True, x.domain, "moved the note"))
        elif x.file:
            confirm.append((margin, x.id, Correction(item, True, x.domain, "kept the note")))
        else:
            confirm.append((margin, x.id, Correction(item, False, None, confirm_reject)))
    chosen = [*wrong, *moves][:n]
    # The rest: the items nearest the threshold, which the triage report puts in front of the
    # person, confirmed as they are (kept, or thrown away).
    ordered = [c for _, _, c in sorted(confirm, key=lambda t: (t[0], t[1]))]
    if seed is not None:
        near = [c for margin, _, c in sorted(confirm, key=lambda t: (t[0], t[1])) if margin <= NEAR]
        ordered = random.Random(seed).sample(near, len(near)) + ordered[len(near) :]
    chosen += ordered[: n - len(chosen)]
    return chosen


@dataclass(slots=True)
class ReplayResult:
    """Held-out figures before and after the corrections, and whether undoing restores."""

    mode: str
    corrections: int
    kinds: dict[str, int]
    before: Agreement
    after: Agreement
    restored: bool
    changed: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "corrections": self.corrections,
            "kinds": self.kinds,
            "heldout_agreement_before": round(self.before.agreement, 4),
            "heldout_agreement_after": round(self.after.agreement, 4),
            "heldout_routing_before": round(self.before.routing, 4),
            "heldout_routing_after": round(self.after.routing, 4),
            "undo_restores_every_decision": self.restored,
            "changed": self.changed,
        }

    def describe(self) -> str:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.kinds.items()))
        lines = [
            f"{self.mode} mode, {self.corrections} corrections replayed from the tuning half "
            f"({kinds}): held-out agreement {self.before.agreement:.3f} -> "
            f"{self.after.agreement:.3f}, routing {self.before.routing:.3f} -> "
            f"{self.after.routing:.3f}; undoing them restores every decision: "
            f"{'yes' if self.restored else 'NO'}",
        ]
        lines += [f"    {line}" for line in self.changed]
        return "\n".join(lines)


def replay_corrections(examples: Sequence[Example], scorer: Scorer, mode: str) -> ReplayResult:
    """Score the held-out half without corrections, with 20 from tuning, and without again."""
    tuning = [x for x in examples if x.split == "tuning"]
    heldout = [x for x in examples if x.split == "heldout"]
    plain = Scorer(scorer.settings, scorer.embedder)
    corrections = choose_corrections(tuning, _score(plain, tuning, mode), mode)
    before = _score(plain, heldout, mode)
    learned = _score(
        Scorer(scorer.settings, scorer.embedder, corrections=corrections), heldout, mode
    )
    undone = _score(Scorer(scorer.settings, scorer.embedder), heldout, mode)

    def figures(cards: Sequence[ScoreCard]) -> Agreement:
        return measure(
            [x.file for x in heldout],
            [c.passed for c in cards],
            [c.composite for c in cards],
            domains=[x.domain for x in heldout],
            routes=[c.route.domain for c in cards],
        )

    changed = []
    for x, old, new in zip(heldout, before, learned, strict=True):
        if old.passed != new.passed or old.route.domain != new.route.domain:
            right = "right" if (new.passed == x.file) else "wrong"
            changed.append(
                f"{x.id}: {'filed' if old.passed else 'rejected'} {old.route.domain} -> "
                f"{'filed' if new.passed else 'rejected'} {new.route.domain} ({right}); "
                f"{new.learned.reason if new.learned else 'no learned shift'}"
            )
    kinds: dict[str, int] = {}
    for c in corrections:
        kinds[c.how] = kinds.get(c.how, 0) + 1
    restored = all(
        (a.passed, a.composite, a.route.domain) == (b.passed, b.composite, b.route.domain)
        for a, b in zip(before, undone, strict=True)
    )
    return ReplayResult(
        mode, len(corrections), kinds, figures(before), figures(learned), restored, changed
    )


def replay_draws(
    examples: Sequence[Example], scorer: Scorer, mode: str, draws: int
) -> tuple[float, list[float]]:
    """Held-out agreement before, and after each of ``draws`` other plausible sets of 20.

    Each set has the same mistakes and moves as :func:`replay_corrections`; the
    confirmations are drawn at random among the tuning decisions within :data:`NEAR` of the
    threshold. How much the one replayed set's figure owes to which items it confirms.
    """
    tuning = [x for x in examples if x.split == "tuning"]
    heldout = [x for x in examples if x.split == "heldout"]
    plain = Scorer(scorer.settings, scorer.embedder)
    tuning_cards = _score(plain, tuning, mode)
    labels = [x.file for x in heldout]

    def agreement(cards: Sequence[ScoreCard]) -> float:
        return statistics.fmean(c.passed == y for c, y in zip(cards, labels, strict=True))

    before = agreement(_score(plain, heldout, mode))
    after = []
    for seed in range(draws):
        corrections = choose_corrections(tuning, tuning_cards, mode, seed=seed)
        learned = Scorer(scorer.settings, scorer.embedder, corrections=corrections)
        after.append(agreement(_score(learned, heldout, mode)))
    return before, after
