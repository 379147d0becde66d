"""Triage quality benchmark: ``python -m bench.scoring``.

Scores the labelled set in ``bench/triage/`` (real items, labelled by
``bench/triage/LABELLING.md`` before any scoring, split once into a tuning and a held-out
half) with the default settings and the configured embedding model, in both of the modes the
pipeline has (an RSS entry whose page is fetched; a Web Clipper note), and prints, for each
half side by side:

- agreement with the curator, precision and recall of "file", the AUC of the composite,
  routing accuracy on the items both the curator and triage file, recall per domain;
- the same figures for two threshold-free baselines trained on the tuning half: a logistic
  regression over the scorer's own explained features, and one over a bag of words;
- the held-out items where triage and the curator disagree most, with their reasons, and
  every reason of a held-out card that contradicts its number or the decision;
- what 20 corrections replayed from the tuning half do to the held-out half, and that
  undoing them restores every decision; beside it, the same with other draws of the
  confirmations among the decisions near the threshold (``--draws``);
- items scored per second with embeddings, and the peak memory of scoring N and 4N items.

Options: ``--set fresh`` / ``fresh2`` / ``fresh3`` / ``fresh4`` (the later labelled sets, each from
sources the sets before it do not use, labelled after their figures were known, and split once
on its own), ``--keyword-only`` (no embedder),
``--mode`` (one mode only), ``--worst N``,
``--throughput N``, ``--draws N``, ``--json``, ``--shared PATH`` (another copy of ``shared/data``).
Items whose text is not here (the local page cache of ``python -m bench.triage.build_cache``,
or ``shared/data``) are skipped and counted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.triage.corpus import MODES, SETS, Example, load_examples
from bench.triage.metrics import (
    Agreement,
    LogisticBaseline,
    bag_of_words,
    card_features,
    measure,
)
from bench.triage.reasons import contradictions
from signaldesk.items import Item
from signaldesk.scoring import ScoreCard, Scorer, ScoringSettings
from signaldesk.vault import DOMAINS

__all__ = ["ModeResult", "evaluate_mode", "main", "score_examples"]

_REPO = Path(__file__).resolve().parent.parent
_DEFAULT_SHARED = _REPO.parent / "shared" / "data"
_HALVES = ("tuning", "heldout")
_BATCH = 64  # triage's default batch


def score_examples(scorer: Scorer, items: Sequence[Item]) -> list[ScoreCard]:
    """Score in triage's batch size (one embedding call per batch)."""
    cards: list[ScoreCard] = []
    for start in range(0, len(items), _BATCH):
        cards.extend(scorer.score_many(items[start : start + _BATCH]))
    return cards


@dataclass(slots=True)
class ModeResult:
    """Triage and the baselines on both halves for one mode."""

    mode: str
    triage: dict[str, Agreement]
    features_lr: dict[str, Agreement]
    words_lr: dict[str, Agreement]
    cards: list[ScoreCard]


def evaluate_mode(examples: Sequence[Example], cards: Sequence[ScoreCard], mode: str) -> ModeResult:
    """Measure triage's cards and both baselines on each half."""
    index = {half: [i for i, x in enumerate(examples) if x.split == half] for half in _HALVES}
    labels = [x.file for x in examples]
    domains = [x.domain for x in examples]

    def agreement(idx: list[int], decided: list[bool], scores: list[float]) -> Agreement:
        return measure(
            [labels[i] for i in idx],
            decided,
            scores,
            domains=[domains[i] for i in idx],
            routes=[cards[i].route.domain for i in idx],
        )

    triage = {
        half: agreement(idx, [cards[i].passed for i in idx], [cards[i].composite for i in idx])
        for half, idx in index.items()
    }
    baselines: list[dict[str, Agreement]] = []
    for featurize in (
        lambda i: card_features(cards[i]),
        lambda i: bag_of_words(examples[i].item(mode)),  # type: ignore[arg-type]
    ):
        model = LogisticBaseline(featurize).fit(
            index["tuning"], [labels[i] for i in index["tuning"]]
        )
        results = {}
        for half, idx in index.items():
            p = model.predict(idx)
            results[half] = agreement(idx, [v > 0.5 for v in p], p)
        baselines.append(results)
    return ModeResult(mode, triage, baselines[0], baselines[1], list(cards))


def _fmt(value: float) -> str:
    return "—" if value != value else f"{value:.3f}"


def _summary_table(result: ModeResult) -> Table:
    table = Table(title=f"{result.mode} mode: triage vs curator (baselines trained on tuning)")
    table.add_column("figure")
    for who in ("triage", "LR features", "LR words"):
        for half in _HALVES:
            table.add_column(f"{who}\n{half}", justify="right")
    rows = {
        "items": lambda a: str(a.n),
        "agreement": lambda a: _fmt(a.agreement),
        "precision (file)": lambda a: _fmt(a.precision),
        "recall (file)": lambda a: _fmt(a.recall),
        "AUC": lambda a: _fmt(a.auc),
        "routing (both filed)": lambda a: f"{_fmt(a.routing)} ({a.both_filed})",
    }
    for name, get in rows.items():
        cells = [
            get(group[half])
            for group in (result.triage, result.features_lr, result.words_lr)
            for half in _HALVES
        ]
        table.add_row(name, *cells)
    return table


def _domain_table(result: ModeResult) -> Table:
    table = Table(title=f"{result.mode} mode: recall of 'file' per domain (triage)")
    table.add_column("domain")
    for half in _HALVES:
        table.add_column(half, justify="right")
    for domain in DOMAINS:
        cells = []
        for half in _HALVES:
            a = result.triage[half]
            n = a.domain_keepers[domain]
            cells.append(f"{a.domain_found[domain]}/{n}" if n else "—")
        table.add_row(domain, *cells)
    return table


def _worst(
    examples: Sequence[Example], result: ModeResult, threshold: float, limit: int
) -> list[str]:
    lines = []
    scored = [
        (abs(card.composite - threshold), x, card)
        for x, card in zip(examples, result.cards, strict=True)
        if x.split == "heldout" and card.passed != x.file
    ]
    scored.sort(key=lambda t: -t[0])
    for _, x, card in scored[:limit]:
        verdict = "filed, curator rejects" if card.passed else "rejected, curator files"
        lines.append(
            f"{x.id}: {verdict} — composite {card.composite:.3f}; curator: {x.why}\n"
            f"    relevance {card.relevance.value:.2f}: {card.relevance.reason}\n"
            f"    actionability {card.actionability.value:.2f}: {card.actionability.reason}\n"
            f"    depth {card.depth.value:.2f}: {card.depth.reason}\n"
            f"    authority {card.authority.value:.2f}: {card.authority.reason}"
        )
    return lines


def _throughput(scorer: Scorer, items: Sequence[Item], n: int) -> tuple[float, float, int, int]:
    """Items/s over ``n`` items (wall clock, and CPU time of this process, which a loaded
    machine disturbs less); tracemalloc peaks scoring ``n`` and ``4n`` items."""
    batch = [items[i % len(items)] for i in range(n)]
    start, cpu = time.perf_counter(), time.process_time()
    score_examples(scorer, batch)
    per_second = n / (time.perf_counter() - start)
    per_cpu_second = n / max(time.process_time() - cpu, 1e-9)
    peaks = []
    for size in (n, 4 * n):
        work = [items[i % len(items)] for i in range(size)]
        tracemalloc.start()
        for begin in range(0, size, _BATCH):
            scorer.score_many(work[begin : begin + _BATCH])  # results dropped, as triage does
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    return per_second, per_cpu_second, peaks[0], peaks[1]


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scoring", description=__doc__)
    parser.add_argument("--keyword-only", action="store_true", help="score without an embedder")
    parser.add_argument("--mode", choices=MODES, help="only this mode")
    parser.add_argument(
        "--no-resemblance",
        action="store_true",
        help="score without the shipped resemblance direction (what it adds, side by side)",
    )
    parser.add_argument("--worst", type=int, default=8, help="held-out disagreements to list")
    parser.add_argument("--throughput", type=int, default=1000, help="items for the speed run")
    parser.add_argument(
        "--draws",
        type=int,
        default=10,
        help="other draws of the replay's confirmations (near the threshold) to print beside it",
    )
    parser.add_argument(
        "--set",
        dest="which",
        choices=SETS,
        default="first",
        help="the labelled set: the first one, or a later one labelled after the figures of "
        "those before it were known, from other sources (each is split once into its own "
        "halves)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--shared", type=Path, default=_DEFAULT_SHARED, help="shared/data folder")
    return parser.parse_args(argv)


def _agreement_json(a: Agreement) -> dict[str, Any]:
    return {
        "items": a.n,
        "agreement": round(a.agreement, 4),
        "precision": round(a.precision, 4),
        "recall": round(a.recall, 4),
        "auc": round(a.auc, 4),
        "routing": round(a.routing, 4),
        "both_filed": a.both_filed,
        "domain_recall": {
            d: [a.domain_found[d], a.domain_keepers[d]] for d in DOMAINS if a.domain_keepers[d]
        },
    }


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    console = Console(stderr=args.json, width=max(Console().width, 130))
    examples, missing = load_examples(shared=args.shared, sets=(args.which,))
    if not examples:
        console.print("no labelled items could be read (see bench/triage/corpus.py)")
        return 1
    embedder = None
    if not args.keyword_only:
        from signaldesk.retrieval.embedder import LazyEmbedder
        from signaldesk.retrieval.settings import IndexSettings

        embedder = LazyEmbedder(IndexSettings())
        embedder.warm_up()
    settings = ScoringSettings(resemblance=not args.no_resemblance)
    scorer = Scorer(settings, embedder)
    scorer.score(examples[0].item("feed"))  # embeds the profile and domain descriptions once
    modes = [args.mode] if args.mode else list(MODES)
    figures: dict[str, Any] = {
        "set": args.which,
        "items": len(examples),
        "missing": len(missing),
        "by_source": {
            s: sum(1 for x in examples if x.source == s)
            for s in sorted({x.source for x in examples})
        },
        "embedder": None if embedder is None else embedder.name,
        "modes": {},
    }
    results = {}
    contradicted: dict[str, list[str]] = {}
    for mode in modes:
        cards = score_examples(scorer, [x.item(mode) for x in examples])
        result = results[mode] = evaluate_mode(examples, cards, mode)
        contradicted[mode] = [
            f"{x.id}: {problem}"
            for x, card in zip(examples, cards, strict=True)
            if x.split == "heldout"
            for problem in contradictions(card, x.item(mode), settings.threshold)
        ]
        figures["modes"][mode] = {
            who: {half: _agreement_json(group[half]) for half in _HALVES}
            for who, group in (
                ("triage", result.triage),
                ("lr_features", result.features_lr),
                ("lr_words", result.words_lr),
            )
        }
        figures["modes"][mode]["heldout_reason_contradictions"] = contradicted[mode]
    from bench.triage.replay import replay_corrections, replay_draws

    replay = {mode: replay_corrections(examples, scorer, mode) for mode in modes}
    figures["corrections"] = {mode: r.as_json() for mode, r in replay.items()}
    draws = {mode: replay_draws(examples, scorer, mode, args.draws) for mode in modes}
    for mode, (_, after) in draws.items():
        figures["corrections"][mode]["heldout_agreement_after_other_draws"] = [
            round(a, 4) for a in after
        ]
    per_second, per_cpu_second, peak_n, peak_4n = _throughput(
        scorer, [x.item(modes[0]) for x in examples], max(args.throughput, 64)
    )
    load = os.getloadavg()
    figures.update(
        {
            "items_per_second": round(per_second, 1),
            "items_per_cpu_second": round(per_cpu_second, 1),
            "throughput_items": args.throughput,
            "peak_bytes": {str(args.throughput): peak_n, str(4 * args.throughput): peak_4n},
            "loadavg": [round(v, 2) for v in load],
        }
    )
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    console.print(
        f"{args.which} set: {len(examples)} labelled items "
        f"({', '.join(f'{n} {s}' for s, n in figures['by_source'].items())}); "
        f"{len(missing)} not readable here"
    )
    for mode in modes:
        console.print(_summary_table(results[mode]))
        console.print(_domain_table(results[mode]))
        held = sum(1 for x in examples if x.split == "heldout")
        console.print(
            f"reasons: {len(contradicted[mode])} contradiction(s) of a score or the decision "
            f"over the {held} held-out cards"
            + "".join(f"\n    {line}" for line in contradicted[mode]),
            markup=False,
            highlight=False,
        )
        console.print(replay[mode].describe(), highlight=False)
        before, after = draws[mode]
        if after:
            console.print(
                f"    the same mistakes and moves with {len(after)} other draws of the "
                f"confirmations (at random within 0.1 of the threshold): held-out agreement "
                f"{before:.3f} -> mean {sum(after) / len(after):.3f} "
                f"(lowest {min(after):.3f}, highest {max(after):.3f}; "
                f"{sum(a - before >= 0.05 or a >= 0.95 for a in after)} of {len(after)} "
                "meet the bar)",
                highlight=False,
            )
    worst_mode = modes[0]
    console.print(f"[bold]held-out disagreements, largest margin first ({worst_mode} mode)[/]")
    for line in _worst(examples, results[worst_mode], settings.threshold, args.worst):
        console.print(line, markup=False, highlight=False)
    console.print(
        f"speed: {per_second:.0f} items/s ({per_cpu_second:.0f} per CPU second) over "
        f"{args.throughput} items "
        f"({figures['embedder'] or 'keyword-only'}); peak traced memory "
        f"{peak_n / 1e6:.1f} MB for {args.throughput} items, {peak_4n / 1e6:.1f} MB for "
        f"{4 * args.throughput}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
        highlight=False,
    )
    command = "python -m bench.scoring" + (" --keyword-only" if args.keyword_only else "")
    command += f" --set {args.which}" if args.which != "first" else ""
    console.print(f"reproduce: [bold]{command}[/]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
