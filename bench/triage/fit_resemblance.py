"""Fit the resemblance direction on the tuning halves: ``python -m bench.triage.fit_resemblance``.

What is fitted (``scoring/resemblance.py`` says why): the logistic fit of the curator's
labels on ``k x (composite - threshold) + u . z + b``, where the composite is the calibrated
one signaldesk computes without resemblance and ``z`` the standardised unit embedding of the
item's opening, as scoring reads it. ``k`` is free (it says how sharp the line is), ``u`` has
an L2 penalty; both modes of every item of every set's tuning half are fitted together. The
penalty is chosen by repeated cross-validation on the same items (folds by source, so the
two modes of an item, and one blog's posts, are never on both sides), scored as the product
applies it: the shift goes into depth and depth stays in 0..1. The held-out halves are never
read.

The result is written to ``scoring/data/resemblance.toml`` in depth units, the
standardisation folded into the weights, so the product needs only ``vector . w + bias``.
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.scoring import score_examples
from bench.triage.corpus import MODES, SETS, load_examples, split_of
from signaldesk.scoring import Scorer, ScoringSettings
from signaldesk.scoring.resemblance import DATA_FILE

_OUT = Path(__file__).resolve().parents[2] / "scoring" / "data" / DATA_FILE
_GRID = (50.0, 100.0, 150.0, 200.0, 300.0, 500.0, 800.0)
_SEEDS = 8
_FOLDS = 5
_STEPS = 3000
_RATE = 0.1
_K_RATE = 10.0  # k's gradient is small next to u's: a larger step keeps them in pace
_K_START = 20.0  # bench/triage/calibrate.py's sharpness


@dataclass(frozen=True, slots=True)
class Rows:
    """One row per item and mode of the tuning halves."""

    ids: list[str]
    groups: list[str]  # the item's source (site, else the item): the folds keep one together
    sets: list[str]  # the labelled set it belongs to
    composite: npt.NDArray[np.float64]
    depth: npt.NDArray[np.float64]
    vectors: npt.NDArray[np.float64]
    labels: npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Fit:
    """``k``, ``u`` and ``b`` over embeddings standardised by ``mu`` and ``sd``."""

    k: float
    u: npt.NDArray[np.float64]
    b: float
    mu: npt.NDArray[np.float64]
    sd: npt.NDArray[np.float64]

    def composite_shift(self, vectors: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """How far the composite moves for the fitted line."""
        z = (vectors - self.mu) / self.sd
        return (z @ self.u + self.b) / self.k


def _rows(scorer: Scorer, sets: tuple[str, ...]) -> Rows:
    tuning = [(s, x) for s in sets for x in split_of(load_examples(sets=(s,))[0], "tuning")]
    ids: list[str] = []
    groups: list[str] = []
    names: list[str] = []
    composite, depth, labels = [], [], []
    vectors = []
    for mode in MODES:
        items = [x.item(mode) for _, x in tuning]
        cards = score_examples(scorer, items)
        unit = scorer.item_vectors(items)
        if unit is None:
            raise SystemExit("the fit needs the embedding model")
        vectors.append(unit.astype(np.float64))
        for (which, x), card in zip(tuning, cards, strict=True):
            ids.append(x.id)
            groups.append(x.site or x.id)
            names.append(which)
            composite.append(card.composite)
            depth.append(card.depth.value)
            labels.append(float(x.file))
    return Rows(
        ids,
        groups,
        names,
        np.array(composite),
        np.array(depth),
        np.vstack(vectors),
        np.array(labels),
    )


def fit(rows: Rows, mask: npt.NDArray[np.bool_], l2: float, threshold: float) -> Fit:
    """The penalised logistic fit on the rows in ``mask``."""
    v = rows.vectors[mask]
    mu = v.mean(axis=0)
    sd = v.std(axis=0) + 1e-9
    z = (v - mu) / sd
    c = rows.composite[mask] - threshold
    y = rows.labels[mask]
    n = len(y)
    k, b, u = _K_START, 0.0, np.zeros(z.shape[1])
    for _ in range(_STEPS):
        p = 1 / (1 + np.exp(-(k * c + z @ u + b)))
        err = p - y
        u -= _RATE * ((z.T @ err) + l2 * u) / n
        b -= _RATE * err.mean()
        k -= _RATE * _K_RATE * (err @ c) / n
    return Fit(k, u, b, mu, sd)


def applied_composite(rows: Rows, f: Fit, depth_weight: float) -> npt.NDArray[np.float64]:
    """The composite as the product computes it: the shift in depth, depth kept in 0..1."""
    moved = np.clip(rows.depth + f.composite_shift(rows.vectors) / depth_weight, 0, 1)
    return rows.composite + depth_weight * (moved - rows.depth)


def cross_validated(rows: Rows, l2: float, threshold: float, depth_weight: float) -> float:
    """Mean agreement over ``_SEEDS`` x ``_FOLDS`` folds by source (site, else item)."""
    scores = []
    for seed in range(_SEEDS):
        fold = np.array([zlib.crc32(f"{seed}:{g}".encode()) % _FOLDS for g in rows.groups])
        right = np.zeros(len(rows.ids), dtype=bool)
        for k in range(_FOLDS):
            test = fold == k
            f = fit(rows, ~test, l2, threshold)
            moved = applied_composite(rows, f, depth_weight)
            right[test] = (moved[test] > threshold) == (rows.labels[test] > 0.5)
        scores.append(right.mean())
    return float(np.mean(scores))


def left_out_sets(rows: Rows, l2: float, threshold: float, depth_weight: float) -> dict[str, float]:
    """Agreement on each set's tuning half with the direction fitted on the other sets'."""
    which = np.array(rows.sets)
    out = {}
    for name in dict.fromkeys(rows.sets):
        test = which == name
        moved = applied_composite(rows, fit(rows, ~test, l2, threshold), depth_weight)
        out[name] = float(np.mean((moved[test] > threshold) == (rows.labels[test] > 0.5)))
    return out


def write(
    f: Fit,
    *,
    depth_weight: float,
    l2: float,
    rows: Rows,
    fingerprint: str,
    model: str,
    out: Path = _OUT,
) -> None:
    """The fit in depth units, as ``scoring/resemblance.py`` reads it."""
    # Depth units over raw unit vectors: shift = (((v - mu) / sd) . u + b) / (k x weight).
    scale = f.k * depth_weight
    weights = f.u / f.sd / scale
    bias = (f.b - float((f.u / f.sd) @ f.mu)) / scale
    numbers = ",\n".join(
        "  " + ", ".join(f"{w:.6g}" for w in weights[i : i + 8]) for i in range(0, len(weights), 8)
    )
    out.write_text(
        "# The resemblance direction (scoring/resemblance.py): depth shift = vector . weights +\n"
        "# bias, for unit embeddings of the bundled model. Fitted on the tuning halves of the\n"
        "# labelled triage sets named below; do not edit, reproduce with\n"
        f"#   python -m bench.triage.fit_resemblance --sets {','.join(dict.fromkeys(rows.sets))}\n"
        f'model = "{model}"\n'
        f'fingerprint = "{fingerprint}"\n'
        f"l2 = {l2:g}\n"
        f"sets = {json.dumps(list(dict.fromkeys(rows.sets)))}\n"
        f"rows = {len(rows.ids)}\n"
        f"bias = {bias:.6g}\n"
        f"weights = [\n{numbers},\n]\n",
        encoding="utf-8",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.triage.fit_resemblance")
    parser.add_argument("--l2", type=float, help="skip the grid and fit with this penalty")
    parser.add_argument(
        "--sets",
        default=",".join(SETS),
        help="the labelled sets whose tuning halves are fitted (comma-separated; default all)",
    )
    args = parser.parse_args(argv)
    from signaldesk.retrieval.embedder import LazyEmbedder
    from signaldesk.retrieval.settings import IndexSettings

    embedder = LazyEmbedder(IndexSettings())
    settings = ScoringSettings(resemblance=False)
    scorer = Scorer(settings, embedder)
    rows = _rows(scorer, tuple(args.sets.split(",")))
    if not len(rows.ids):
        print("no tuning items could be read (see bench/triage/corpus.py)")
        return 1
    w = settings.weights
    depth_weight = w.depth / (w.relevance + w.actionability + w.depth + w.authority)
    threshold = settings.threshold
    base = float(np.mean((rows.composite > threshold) == (rows.labels > 0.5)))
    print(f"{len(set(rows.ids))} tuning items x {len(MODES)} modes = {len(rows.ids)} rows")
    print(f"agreement without resemblance: {base:.4f}")
    which = np.array(rows.sets)
    right = (rows.composite > threshold) == (rows.labels > 0.5)
    names = list(dict.fromkeys(rows.sets))
    print("  per set: " + ", ".join(f"{n} {right[which == n].mean():.3f}" for n in names))
    l2 = args.l2
    if l2 is None:
        print(
            f"cross-validated agreement ({_SEEDS} seeds x {_FOLDS} folds by source), and on each"
            " set's tuning half fitted on the other sets' (not used to choose):"
        )
        grid = {}
        for value in _GRID:
            grid[value] = cross_validated(rows, value, threshold, depth_weight)
            apart = left_out_sets(rows, value, threshold, depth_weight)
            print(
                f"  l2 {value:g}: {grid[value]:.4f}; sets left out: mean "
                f"{np.mean(list(apart.values())):.4f} ("
                + ", ".join(f"{n} {v:.3f}" for n, v in apart.items())
                + ")"
            )
        l2 = max(grid, key=lambda value: grid[value])
    everything = np.ones(len(rows.ids), dtype=bool)
    f = fit(rows, everything, l2, threshold)
    fitted = applied_composite(rows, f, depth_weight)
    print(f"l2 = {l2:g}, k = {f.k:.2f}; agreement on the rows it was fitted on:", end=" ")
    print(f"{np.mean((fitted > threshold) == (rows.labels > 0.5)):.4f}")
    write(
        f,
        depth_weight=depth_weight,
        l2=l2,
        rows=rows,
        fingerprint=embedder.fingerprint,
        model=embedder.name,
    )
    print(f"wrote {_OUT}")
    print(f"reproduce: python -m bench.triage.fit_resemblance --sets {args.sets}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
