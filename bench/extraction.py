"""Article-extraction benchmark: ``python -m bench.extraction``.

Runs :func:`sources.fulltext.extract_article` over the 181 pages of the Zyte/Scrapinghub
article-extraction benchmark (``shared/data/articles``) and scores it with that
benchmark's metric: ``\\w+`` tokens, 4-token shingles, TP/FP/FN over shingle multisets
per page normalised to TP + FP + FN = 1, summed over pages, then precision, recall and
F1 from the sums (``--baseline NAME`` scores a stored upstream output). Markdown syntax is
stripped to plain text first (the ground truth is plain text).

Options: ``--mode balanced|precision|recall`` compares trafilatura's settings,
``--limit N`` runs on the first N pages, ``--data PATH`` points elsewhere.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from signaldesk.sources.fulltext import ExtractionMode, extract_article

__all__ = ["main", "markdown_to_plain", "page_counts", "scores", "shingles"]

_DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "articles"
_TOKEN = re.compile(r"\w+", re.UNICODE)


def shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    """The multiset of ``n``-token shingles of ``text`` (fewer tokens: one short shingle)."""
    tokens = _TOKEN.findall(text)
    if len(tokens) < n:
        return Counter([tuple(tokens)]) if tokens else Counter()
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def page_counts(predicted: str, truth: str) -> tuple[float, float, float]:
    """One page's shingle TP, FP, FN, normalised so that TP + FP + FN = 1."""
    pred, true = shingles(predicted), shingles(truth)
    tp = sum((pred & true).values())
    fp = sum(pred.values()) - tp
    fn = sum(true.values()) - tp
    total = tp + fp + fn
    if total == 0:  # both empty: a perfect (empty) answer
        return 1.0, 0.0, 0.0
    return tp / total, fp / total, fn / total


def scores(counts: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Precision, recall, F1 from the per-page normalised counts, summed over pages.

    This is the upstream benchmark's aggregation: it reproduces the published figures
    from the stored baseline outputs (trafilatura F1 0.958, html-text 0.665).
    """
    tp = sum(c[0] for c in counts)
    fp = sum(c[1] for c in counts)
    fn = sum(c[2] for c in counts)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def markdown_to_plain(markdown: str) -> str:
    """Drop link targets (their URLs are not article words); keep every visible word."""
    return _MD_LINK.sub(r"\1", _MD_IMAGE.sub(r"\1", markdown))


def _extractor(mode: ExtractionMode) -> Callable[[bytes, str | None], str | None]:
    def run(html: bytes, url: str | None) -> str | None:
        article = extract_article(html, url, mode=mode)
        return article.text_markdown if article else None

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=_DEFAULT_DATA)
    parser.add_argument("--mode", choices=["balanced", "precision", "recall"], default="precision")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--baseline", help="score a stored upstream output instead")
    args = parser.parse_args(argv)

    truth = json.loads((args.data / "ground-truth.json").read_text(encoding="utf-8"))
    ids = sorted(truth)[: args.limit or None]
    counts: list[tuple[float, float, float]] = []
    empty = 0
    elapsed = 0.0
    if args.baseline:
        stored = json.loads(
            (args.data / "baseline_outputs" / f"{args.baseline}.json").read_text(encoding="utf-8")
        )["output"]
        for page_id in ids:
            predicted = stored.get(page_id, {}).get("articleBody") or ""
            counts.append(page_counts(predicted, truth[page_id]["articleBody"]))
        precision, recall, f1 = scores(counts)
        sys.stdout.write(
            f"baseline={args.baseline} pages={len(ids)}\n"
            f"precision={precision:.3f} recall={recall:.3f} F1={f1:.3f}\n"
        )
        return 0
    extract = _extractor(args.mode)
    for page_id in ids:
        html = gzip.decompress((args.data / "html" / f"{page_id}.html.gz").read_bytes())
        started = time.perf_counter()
        predicted = extract(html, truth[page_id].get("url"))
        elapsed += time.perf_counter() - started
        if not predicted:
            empty += 1
        counts.append(
            page_counts(markdown_to_plain(predicted or ""), truth[page_id]["articleBody"])
        )
    n = len(ids)
    precision, recall, f1 = scores(counts)
    sys.stdout.write(
        f"mode={args.mode} pages={n} empty={empty}\n"
        f"precision={precision:.3f} recall={recall:.3f} F1={f1:.3f}\n"
        f"extraction time {elapsed:.1f} s = {n / elapsed:.1f} pages/s\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
