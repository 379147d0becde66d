"""Scoring and routing benchmark: ``python -m bench.scoring``.

Scores the labelled set in ``tests/labelled/`` (one markdown file per item: the
frontmatter carries the item's fields and its labels, the body its text, or a
``ref`` to a real item in ``shared/data``) with the default settings, and prints:

- routing accuracy (predicted domain == labelled domain) and accept/reject
  agreement (``passed`` == labelled ``accept``), overall and per source;
- the domain confusion matrix (rows: labelled, columns: predicted);
- items scored per second, embeddings included (the item texts are embedded on
  every run; the one-off model load and the profile/domain description vectors are
  timed apart), with the command that reproduces it.

Options: ``--keyword-only`` scores without an embedder, ``--misses`` lists the items
where the scorer and the labels disagree, ``--throughput N`` scores N items for the
speed figure (the labelled set repeated), ``--json`` prints the figures as JSON,
``--shared PATH`` points at another copy of ``shared/data``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import frontmatter
from rich.console import Console
from rich.table import Table

from signaldesk.items import Item, SourceKind
from signaldesk.scoring import ScoreCard, Scorer, ScoringSettings
from signaldesk.vault import DOMAINS

__all__ = [
    "LABELLED_DIR",
    "LabelledItem",
    "Results",
    "evaluate",
    "load_labelled",
    "main",
]

_REPO = Path(__file__).resolve().parent.parent
LABELLED_DIR = _REPO / "tests" / "labelled"
_DEFAULT_SHARED = _REPO.parent / "shared" / "data"
_SHORT = ("ai", "sec", "sys", "prog", "web", "data", "ops", "dsgn", "mob", "car", "res", "oth")
_SOURCE_KINDS: tuple[SourceKind, ...] = ("rss", "clipper", "newsletter", "tool_output")


@dataclass(frozen=True, slots=True)
class LabelledItem:
    """One labelled example: the item as the pipeline would hand it over, and its labels."""

    key: str
    item: Item
    domain: str
    accept: bool
    prior: float | None
    origin: str
    note: str = ""


@cache
def _ground_truth(path: Path) -> dict[str, dict[str, str]]:
    data: dict[str, dict[str, str]] = json.loads(path.read_text(encoding="utf-8"))
    return data


@cache
def _feed_items(path: Path, url: str) -> tuple[Item, ...]:
    from signaldesk.sources.feed_parse import (
        parse_feed,  # the real parser: items shaped as intake makes them
    )

    return parse_feed(path.read_bytes(), url=url).items


def _resolve(meta: dict[str, Any], body: str, shared: Path | None, key: str) -> Item | None:
    ref = meta.get("ref")
    kind = meta.get("source_kind", "rss")
    if kind not in _SOURCE_KINDS:
        raise ValueError(f"{key}: unknown source_kind {kind!r}")
    tags = tuple(str(t) for t in meta.get("tags") or ())
    if ref is None:
        return Item(
            source_kind=kind,
            source_id=str(meta.get("source_id") or meta.get("url") or key),
            title=str(meta["title"]),
            text=body.strip(),
            url=meta.get("url"),
            author=meta.get("author"),
            site_name=meta.get("site"),
            tags=tags,
            guid=key,
        )
    if shared is None:
        return None
    if ref["dataset"] == "feeds":
        path = shared / "feeds" / ref["file"]
        if not path.is_file():
            return None
        found = _feed_items(path, str(ref["feed_url"]))[int(ref["entry"])]
        return found
    if ref["dataset"] == "articles":
        truth_path = shared / "articles" / "ground-truth.json"
        if not truth_path.is_file():
            return None
        truth = _ground_truth(truth_path)[str(ref["id"])]
        # Ground truth separates paragraphs with one newline; markdown needs a blank line.
        text = "\n\n".join(p.strip() for p in truth["articleBody"].split("\n") if p.strip())
        return Item(
            source_kind=kind,
            source_id=str(meta.get("source_id") or truth["url"]),
            title=str(meta["title"]),
            text=text,
            url=truth["url"],
            author=meta.get("author"),
            site_name=meta.get("site"),
            tags=tags,
            guid=str(ref["id"]),
        )
    raise ValueError(f"{key}: unknown ref dataset {ref['dataset']!r}")


def load_labelled(
    folder: Path = LABELLED_DIR, shared: Path | None = _DEFAULT_SHARED
) -> tuple[list[LabelledItem], list[str]]:
    """Read the labelled set; items whose ``ref`` cannot be resolved are skipped.

    :param shared: the ``shared/data`` folder real items are read from (None: skip them).
    :returns: the items (sorted by file name) and the keys of the skipped ones.
    """
    if shared is not None and not shared.is_dir():
        shared = None
    items: list[LabelledItem] = []
    skipped: list[str] = []
    for path in sorted(folder.glob("*/*.md")):
        post = frontmatter.load(str(path))
        meta: dict[str, Any] = dict(post.metadata)
        key = f"{path.parent.name}/{path.stem}"
        labels: dict[str, Any] = meta["labels"]
        if labels["domain"] not in DOMAINS:
            raise ValueError(f"{key}: unknown domain {labels['domain']!r}")
        item = _resolve(meta, post.content, shared, key)
        if item is None:
            skipped.append(key)
            continue
        items.append(
            LabelledItem(
                key=key,
                item=item,
                domain=str(labels["domain"]),
                accept=bool(labels["accept"]),
                prior=meta.get("prior"),
                origin=str(meta.get("origin", "written for signaldesk")),
                note=str(labels.get("why", "")),
            )
        )
    return items, skipped


@dataclass(slots=True)
class Results:
    """Agreement between the scorer and the labels."""

    total: int = 0
    routed_right: int = 0
    decided_right: int = 0
    confusion: Counter[tuple[str, str]] = field(default_factory=Counter)
    false_accepts: list[str] = field(default_factory=list)
    false_rejects: list[str] = field(default_factory=list)
    misrouted: list[str] = field(default_factory=list)

    @property
    def routing_accuracy(self) -> float:
        return self.routed_right / self.total if self.total else 0.0

    @property
    def decision_agreement(self) -> float:
        return self.decided_right / self.total if self.total else 0.0


def evaluate(labelled: Sequence[LabelledItem], cards: Sequence[ScoreCard]) -> Results:
    """Compare each card with its item's labels."""
    results = Results()
    for example, card in zip(labelled, cards, strict=True):
        results.total += 1
        results.confusion[(example.domain, card.route.domain)] += 1
        if card.route.domain == example.domain:
            results.routed_right += 1
        else:
            results.misrouted.append(
                f"{example.key}: labelled {example.domain}, routed {card.route.domain} "
                f"({card.route.reason})"
            )
        if card.passed == example.accept:
            results.decided_right += 1
        else:
            line = (
                f"{example.key}: composite {card.composite:.3f} "
                f"(rel {card.relevance.value:.2f}, act {card.actionability.value:.2f}, "
                f"depth {card.depth.value:.2f}, auth {card.authority.value:.2f})"
            )
            (results.false_rejects if example.accept else results.false_accepts).append(line)
    return results


def _confusion_table(results: Results) -> Table:
    short = dict(zip(DOMAINS, _SHORT, strict=True))
    table = Table(title="Domain confusion (rows: labelled, columns: routed)")
    table.add_column("labelled", no_wrap=True)
    for domain in DOMAINS:
        table.add_column(short[domain], justify="right", no_wrap=True)
    for truth in DOMAINS:
        row = []
        for predicted in DOMAINS:
            n = results.confusion[(truth, predicted)]
            cell = str(n) if n else "."
            row.append(f"[bold green]{cell}[/]" if truth == predicted and n else cell)
        table.add_row(truth, *row)
    return table


def _throughput(scorer: Scorer, labelled: Sequence[LabelledItem], n: int) -> float:
    items = [labelled[i % len(labelled)].item for i in range(n)]
    priors = [labelled[i % len(labelled)].prior for i in range(n)]
    start = time.perf_counter()
    scorer.score_many(items, priors=priors)
    return n / (time.perf_counter() - start)


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scoring", description=__doc__)
    parser.add_argument("--keyword-only", action="store_true", help="score without an embedder")
    parser.add_argument("--misses", action="store_true", help="list disagreements")
    parser.add_argument("--throughput", type=int, default=1000, help="items for the speed run")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--shared", type=Path, default=_DEFAULT_SHARED, help="shared/data folder")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    # The confusion matrix needs ~100 columns; a pipe gets 80 by default.
    console = Console(stderr=args.json, width=max(Console().width, 110))
    labelled, skipped = load_labelled(shared=args.shared)
    if not labelled:
        console.print("no labelled items found")
        return 1
    embedder = None
    load_seconds = 0.0
    if not args.keyword_only:
        from signaldesk.retrieval.embedder import LazyEmbedder
        from signaldesk.retrieval.settings import IndexSettings

        embedder = LazyEmbedder(IndexSettings())
        start = time.perf_counter()
        embedder.warm_up()
        load_seconds = time.perf_counter() - start
    scorer = Scorer(ScoringSettings(), embedder)
    start = time.perf_counter()
    scorer.score(labelled[0].item)  # embeds the profile and domain descriptions once
    first_seconds = time.perf_counter() - start
    cards = scorer.score_many([x.item for x in labelled], priors=[x.prior for x in labelled])
    results = evaluate(labelled, cards)
    per_second = _throughput(scorer, labelled, max(args.throughput, 1))
    command = "python -m bench.scoring" + (" --keyword-only" if args.keyword_only else "")
    if args.throughput != 1000:
        command += f" --throughput {args.throughput}"
    accepts = sum(x.accept for x in labelled)
    figures: dict[str, Any] = {
        "items": results.total,
        "skipped": skipped,
        "accept_labels": accepts,
        "reject_labels": results.total - accepts,
        "routing_accuracy": round(results.routing_accuracy, 4),
        "decision_agreement": round(results.decision_agreement, 4),
        "false_accepts": len(results.false_accepts),
        "false_rejects": len(results.false_rejects),
        "embedder": None if embedder is None else embedder.name,
        "model_load_seconds": round(load_seconds, 3),
        "first_score_seconds": round(first_seconds, 3),
        "items_per_second": round(per_second, 1),
        "throughput_items": args.throughput,
        "command": command,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    console.print(_confusion_table(results))
    summary = Table(title="Scoring benchmark")
    summary.add_column("figure")
    summary.add_column("value", justify="right")
    summary.add_row(
        "labelled items (accept / reject)",
        f"{results.total} ({accepts} / {results.total - accepts})",
    )
    summary.add_row("routing accuracy", f"{results.routing_accuracy:.1%}")
    summary.add_row("accept/reject agreement", f"{results.decision_agreement:.1%}")
    summary.add_row(
        "false accepts / false rejects",
        f"{len(results.false_accepts)} / {len(results.false_rejects)}",
    )
    summary.add_row("embedder", figures["embedder"] or "none (keyword-only)")
    summary.add_row("model load (once)", f"{load_seconds:.2f} s")
    summary.add_row("first score (embeds descriptions)", f"{first_seconds:.2f} s")
    summary.add_row(f"items scored per second ({args.throughput} items)", f"{per_second:.0f}")
    console.print(summary)
    if skipped:
        console.print(f"skipped {len(skipped)} items whose shared data is missing")
    console.print(f"reproduce: [bold]{shlex.quote(sys.executable)} -m {command[10:]}[/]")
    if args.misses:
        for title, lines in (
            ("misrouted", results.misrouted),
            ("false accepts", results.false_accepts),
            ("false rejects", results.false_rejects),
        ):
            console.print(f"[bold]{title}[/] ({len(lines)})")
            for line in lines:
                console.print(f"  {line}", markup=False, highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
