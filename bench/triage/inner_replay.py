"""Replay corrections inside the tuning half: ``python -m bench.triage.inner_replay``.

How the constants of :mod:`signaldesk.scoring.feedback` were chosen without the held-out
half. The tuning half is split in two (stratified by label, by a hash of the id and a seed);
corrections are drawn from one part by the same rule the held-out replay uses
(:func:`bench.triage.replay.choose_corrections`: the scorer's mistakes, then the decisions
nearest the threshold) and the other part is measured before and after. Ten seeds, both
directions, both modes; ``--corrections`` sets how many are drawn from a part (10 keeps the
held-out replay's ratio of 20 corrections to 117 items; 20 is the same count).

Prints the mean change of agreement and of routing (on the keepers both filed) with its
standard error, and per replay how many of the other part's wrong decisions the corrections
put right and how many right ones they turned wrong. When nearly every wrong decision is
already put right, this replay can no longer tell two models apart; and what it puts right
are the mistakes the tuned rules left on the tuning half, which come in pairs (two career
guides of one site, two papers), so its gain can overstate what corrections do for items
the rules were never tuned on. Nothing here reads the held-out half.

Two more protocols (``--protocol``), closer to the held-out replay's proportions (20
corrections drawn from 116 items): ``leave-one-out`` measures each tuning item with the
corrections drawn from all the others; ``other-sources`` draws them only from the items of
other feeds and sites, so an item's own source cannot vote for it: what is left is what
similar text and a shared kind carry to an item whose source the person never corrected.
Each prints how many of the tuning half's wrong decisions the corrections put right, and
how many right ones they turned wrong.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
from collections.abc import Sequence

from bench.triage.corpus import MODES, SETS, Example, load_examples
from bench.triage.metrics import Agreement, measure
from bench.triage.replay import choose_corrections
from signaldesk.scoring import ScoreCard, Scorer, ScoringSettings
from signaldesk.scoring.feedback import same_source

__all__ = ["folds", "main", "one_out"]

_BATCH = 64


def folds(tuning: Sequence[Example], seed: int) -> tuple[list[Example], list[Example]]:
    """Two halves of ``tuning``, each label dealt alternately in the order of a seeded hash."""
    parts: tuple[list[Example], list[Example]] = ([], [])
    for label in (True, False):
        group = sorted(
            (x for x in tuning if x.file is label),
            key=lambda x: hashlib.sha256(f"{x.id}{seed}".encode()).hexdigest(),
        )
        for k, x in enumerate(group):
            parts[k % 2].append(x)
    return parts


def _score(scorer: Scorer, examples: Sequence[Example], mode: str) -> list[ScoreCard]:
    items = [x.item(mode) for x in examples]  # type: ignore[arg-type]
    cards: list[ScoreCard] = []
    for start in range(0, len(items), _BATCH):
        cards.extend(scorer.score_many(items[start : start + _BATCH]))
    return cards


def _measure(examples: Sequence[Example], cards: Sequence[ScoreCard]) -> Agreement:
    return measure(
        [x.file for x in examples],
        [c.passed for c in cards],
        [c.composite for c in cards],
        domains=[x.domain for x in examples],
        routes=[c.route.domain for c in cards],
    )


def one_out(
    tuning: Sequence[Example],
    plain: Scorer,
    mode: str,
    n: int,
    *,
    other_sources: bool,
) -> tuple[int, int, int]:
    """Each item scored with ``n`` corrections drawn from the others (of other sources).

    :returns: (wrong decisions before, of them put right, right ones turned wrong).
    """
    cards = _score(plain, tuning, mode)
    items = [x.item(mode) for x in tuning]  # type: ignore[arg-type]
    wrong = fixed = broken = 0
    for k, (x, item, old) in enumerate(zip(tuning, items, cards, strict=True)):
        rest = [
            j
            for j in range(len(tuning))
            if j != k and not (other_sources and same_source(item, items[j]))
        ]
        corrections = choose_corrections(
            [tuning[j] for j in rest], [cards[j] for j in rest], mode, n
        )
        learned = Scorer(plain.settings, plain.embedder, corrections=corrections)
        new = learned.score(item)
        wrong += old.passed != x.file
        fixed += old.passed != x.file and new.passed == x.file
        broken += old.passed == x.file and new.passed != x.file
    return wrong, fixed, broken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.triage.inner_replay")
    parser.add_argument(
        "--protocol", choices=("halves", "leave-one-out", "other-sources"), default="halves"
    )
    parser.add_argument(
        "--corrections", type=int, help="how many are drawn (halves: 10 from each part; else 20)"
    )
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--keyword-only", action="store_true", help="score without an embedder")
    parser.add_argument("--set", dest="which", choices=SETS, default="first")
    parser.add_argument(
        "--whole-set",
        action="store_true",
        help="replay inside the whole set, both halves (for a set whose held-out half has "
        "been read, as the fresh set was in stop 24)",
    )
    args = parser.parse_args(argv)
    examples, _ = load_examples(sets=(args.which,))
    tuning = [x for x in examples if args.whole_set or x.split == "tuning"]
    embedder = None
    if not args.keyword_only:
        from signaldesk.retrieval.embedder import LazyEmbedder
        from signaldesk.retrieval.settings import IndexSettings

        embedder = LazyEmbedder(IndexSettings())
    settings = ScoringSettings()
    plain = Scorer(settings, embedder)
    if args.protocol != "halves":
        n = args.corrections or 20
        for mode in MODES:
            wrong, fixed, broken = one_out(
                tuning, plain, mode, n, other_sources=args.protocol == "other-sources"
            )
            print(
                f"{mode}: each of {len(tuning)} tuning items with {n} corrections drawn from "
                f"the {'items of other sources' if args.protocol == 'other-sources' else 'others'}"
                f": {fixed} of {wrong} wrong decisions put right, {broken} right decisions turned "
                f"wrong (agreement {(fixed - broken) / len(tuning):+.4f})"
            )
        command = f"python -m bench.triage.inner_replay --protocol {args.protocol}"
        print(f"reproduce: {command}{_which(args)}")
        return 0
    args.corrections = args.corrections or 10
    for mode in MODES:
        gains: list[float] = []
        routing: list[float] = []
        wrong = fixed = broken = 0
        for seed in range(args.seeds):
            a, b = folds(tuning, seed)
            for source, target in ((a, b), (b, a)):
                corrections = choose_corrections(
                    source, _score(plain, source, mode), mode, args.corrections
                )
                learned = Scorer(settings, embedder, corrections=corrections)
                plain_cards = _score(plain, target, mode)
                learned_cards = _score(learned, target, mode)
                before = _measure(target, plain_cards)
                after = _measure(target, learned_cards)
                for x, old, new in zip(target, plain_cards, learned_cards, strict=True):
                    wrong += old.passed != x.file
                    fixed += old.passed != x.file and new.passed == x.file
                    broken += old.passed == x.file and new.passed != x.file
                gains.append(after.agreement - before.agreement)
                routing.append(after.routing - before.routing)
        error = statistics.stdev(gains) / len(gains) ** 0.5
        print(
            f"{mode}: {args.corrections} corrections from one part of the tuning half, "
            f"agreement on the other part {statistics.mean(gains):+.4f} (±{error:.4f}), "
            f"routing {statistics.mean(routing):+.4f}, over {len(gains)} replays; per replay "
            f"{fixed / len(gains):.2f} of {wrong / len(gains):.2f} wrong decisions put right, "
            f"{broken / len(gains):.2f} right ones turned wrong"
        )
    print(
        "reproduce: python -m bench.triage.inner_replay --corrections "
        f"{args.corrections} --seeds {args.seeds}{_which(args)}"
    )
    return 0


def _which(args: argparse.Namespace) -> str:
    return (f" --set {args.which}" if args.which != "first" else "") + (
        " --whole-set" if args.whole_set else ""
    )


if __name__ == "__main__":
    sys.exit(main())
