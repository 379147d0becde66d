"""Fit the scores' calibration on the tuning halves: ``python -m bench.triage.calibrate``.

Each of relevance, actionability and depth gets a scale, ``value = min(1, scale x
measured)``, chosen so that "composite > threshold" under the default weights
is the curator's line on the tuning halves of both labelled sets, in both modes (the held-out
halves are never read). Authority keeps its measured value: on these sets a fitted weight
for it comes out negative (project blogs' community posts are rejects, unknown sites' guides
keepers), and a more authoritative source must never score lower.

A scale, not an affine map: a score that measured nothing stays 0 and one that measured
something stays above 0, so no reason ("1 sentence(s) saying what to do") sits beside a 0
(with offsets the fit agreed 0.904 on the tuning halves against 0.901 for scales alone).
The fit minimises the logistic loss of ``k x (composite - threshold)`` by gradient descent,
with a small pull towards leaving each score as measured and scales kept in [0.5, 2.5]. It
prints the values for ``ScoreCalibration`` and the tuning halves' agreement before and
after; the learned shift of corrections is not involved.
"""

from __future__ import annotations

import sys

import numpy as np
import numpy.typing as npt

from bench.scoring import score_examples
from bench.triage.corpus import MODES, SETS, Example, load_examples
from signaldesk.scoring import Scorer, ScoringSettings
from signaldesk.scoring.settings import ScoreCalibration

_FITTED = ("relevance", "actionability", "depth")
_SHARPNESS = 20.0  # k: how close to the line an item must be to still pull on the fit
_STEPS = 6000
_RATE = 0.5
_PULL = 0.01  # towards (1, 0): with no evidence, a score stays as measured
_SCALE = (0.5, 2.5)


def _measured(scorer: Scorer, examples: list[Example]) -> tuple[npt.NDArray[np.float64], ...]:
    """Per item and mode: the three fitted scores, authority's weighted part, the label."""
    weights = scorer.settings.weights
    total = weights.relevance + weights.actionability + weights.depth + weights.authority
    rows, rest, labels = [], [], []
    for mode in MODES:
        cards = score_examples(scorer, [x.item(mode) for x in examples])
        for x, card in zip(examples, cards, strict=True):
            rows.append([card.dimension(name).value for name in _FITTED])
            rest.append(weights.authority / total * card.authority.value)
            labels.append(float(x.file))
    return np.array(rows), np.array(rest), np.array(labels)


def fit(
    scores: npt.NDArray[np.float64],
    rest: npt.NDArray[np.float64],
    labels: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64],
    threshold: float,
) -> npt.NDArray[np.float64]:
    """The scales of the fitted scores."""
    scale = np.ones(scores.shape[1])
    for _ in range(_STEPS):
        mapped = scores * scale
        composite = np.clip(mapped, 0, 1) @ weights + rest
        p = 1 / (1 + np.exp(-_SHARPNESS * (composite - threshold)))
        pull = ((p - labels) * _SHARPNESS)[:, None] * weights * (mapped < 1)
        scale -= _RATE * ((pull * scores).mean(axis=0) + _PULL * (scale - 1))
        scale = np.clip(scale, *_SCALE)
    return scale


def main() -> int:
    examples, _ = load_examples(sets=SETS)
    tuning = [x for x in examples if x.split == "tuning"]
    if not tuning:
        print("no tuning items could be read (see bench/triage/corpus.py)")
        return 1
    from signaldesk.retrieval.embedder import LazyEmbedder
    from signaldesk.retrieval.settings import IndexSettings

    embedder = LazyEmbedder(IndexSettings())
    identity = ScoreCalibration(relevance=1.0, actionability=1.0, depth=1.0, authority=1.0)
    settings = ScoringSettings(calibration=identity)
    scorer = Scorer(settings, embedder)
    scores, rest, labels = _measured(scorer, tuning)
    w = settings.weights
    total = w.relevance + w.actionability + w.depth + w.authority
    weights = np.array([getattr(w, name) / total for name in _FITTED])
    scale = fit(scores, rest, labels, weights, settings.threshold)
    before = np.mean(((scores @ weights + rest) > settings.threshold) == labels)
    after = np.clip(scores * scale, 0, 1) @ weights + rest
    print(f"{len(tuning)} tuning items x {len(MODES)} modes")
    print(f"agreement on the tuning halves: {before:.3f} as measured, ", end="")
    print(f"{np.mean((after > settings.threshold) == labels):.3f} calibrated")
    for name, value in zip(_FITTED, scale, strict=True):
        print(f"{name} = {value:.3f}")
    print("reproduce: python -m bench.triage.calibrate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
