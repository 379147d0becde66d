"""Agreement between triage and the curator, and two baselines that need no threshold.

Pure arithmetic over (label, decision, score) triples, so the tests can check it on
hand-made numbers and the bench prints it for both halves.
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from signaldesk.items import Item
from signaldesk.scoring import DIMENSIONS, ScoreCard

__all__ = [
    "Agreement",
    "LogisticBaseline",
    "auc",
    "bag_of_words",
    "card_features",
    "measure",
]


def auc(labels: Sequence[bool], scores: Sequence[float]) -> float:
    """Probability that a random keeper scores above a random reject (ties count half)."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return float("nan")
    wins = 0.0
    for p in pos:
        for n in neg:
            wins += 1.0 if p > n else 0.5 if p == n else 0.0
    return wins / (len(pos) * len(neg))


@dataclass(slots=True)
class Agreement:
    """How far decisions agree with labels on one set of items."""

    n: int = 0
    agree: int = 0
    true_pos: int = 0
    false_pos: int = 0
    false_neg: int = 0
    auc: float = float("nan")
    both_filed: int = 0
    routed_right: int = 0
    domain_keepers: Counter[str] = field(default_factory=Counter)
    domain_found: Counter[str] = field(default_factory=Counter)

    @property
    def agreement(self) -> float:
        return self.agree / self.n if self.n else float("nan")

    @property
    def precision(self) -> float:
        filed = self.true_pos + self.false_pos
        return self.true_pos / filed if filed else float("nan")

    @property
    def recall(self) -> float:
        keepers = self.true_pos + self.false_neg
        return self.true_pos / keepers if keepers else float("nan")

    @property
    def routing(self) -> float:
        return self.routed_right / self.both_filed if self.both_filed else float("nan")

    def domain_recall(self, domain: str) -> float:
        n = self.domain_keepers[domain]
        return self.domain_found[domain] / n if n else float("nan")


def measure(
    labels: Sequence[bool],
    decisions: Sequence[bool],
    scores: Sequence[float],
    *,
    domains: Sequence[str] | None = None,
    routes: Sequence[str] | None = None,
) -> Agreement:
    """Agreement of ``decisions`` with ``labels``; AUC of ``scores``; routing where both filed."""
    out = Agreement(n=len(labels))
    for i, (label, decided) in enumerate(zip(labels, decisions, strict=True)):
        out.agree += label == decided
        out.true_pos += label and decided
        out.false_pos += decided and not label
        out.false_neg += label and not decided
        if domains is not None and label:
            out.domain_keepers[domains[i]] += 1
            out.domain_found[domains[i]] += decided
        if domains is not None and routes is not None and label and decided:
            out.both_filed += 1
            out.routed_right += routes[i] == domains[i]
    out.auc = auc(labels, scores)
    return out


def card_features(card: ScoreCard) -> dict[str, float]:
    """Every explained feature of a card, flattened (the baseline's input)."""
    row: dict[str, float] = {}
    for name in DIMENSIONS:
        dim = card.dimension(name)
        row[name] = dim.value
        for key, value in dim.features.items():
            row[f"{name}.{key}"] = float(value)
    return row


_WORD = re.compile(r"[a-z][a-z0-9+#]{1,30}")
_BUCKETS = 4096


def bag_of_words(item: Item) -> dict[str, float]:
    """Hashed binary bag of words over the title and the first 4,000 characters."""
    text = f"{item.title}\n{item.text[:4000]}".lower()
    words = set(_WORD.findall(text))
    return {f"w{zlib.crc32(w.encode()) % _BUCKETS}": 1.0 for w in words}


class LogisticBaseline:
    """L2-regularised logistic regression by gradient descent (no threshold to tune:
    it decides at probability 0.5), trained on the tuning half only."""

    def __init__(self, featurize: Callable[[int], dict[str, float]], l2: float = 1.0) -> None:
        self._featurize = featurize
        self._l2 = l2
        self._names: list[str] = []
        self._mean: npt.NDArray[np.float64] | None = None
        self._std: npt.NDArray[np.float64] | None = None
        self._w: npt.NDArray[np.float64] | None = None
        self._b = 0.0

    def _matrix(self, indices: Sequence[int]) -> npt.NDArray[np.float64]:
        rows = [self._featurize(i) for i in indices]
        x = np.zeros((len(rows), len(self._names)))
        position = {name: j for j, name in enumerate(self._names)}
        for r, row in enumerate(rows):
            for name, value in row.items():
                j = position.get(name)
                if j is not None:
                    x[r, j] = value
        return x

    def fit(self, indices: Sequence[int], labels: Sequence[bool]) -> LogisticBaseline:
        names: set[str] = set()
        for i in indices:
            names.update(self._featurize(i))
        self._names = sorted(names)
        x = self._matrix(indices)
        self._mean = x.mean(axis=0)
        self._std = x.std(axis=0) + 1e-6
        z = (x - self._mean) / self._std
        y = np.asarray(labels, dtype=np.float64)
        w = np.zeros(z.shape[1])
        b = 0.0
        rate = 0.1
        for _ in range(800):
            p = 1.0 / (1.0 + np.exp(-(z @ w + b)))
            grad_w = z.T @ (p - y) / len(y) + self._l2 * w / len(y)
            grad_b = float(np.mean(p - y))
            w -= rate * grad_w
            b -= rate * grad_b
        self._w, self._b = w, b
        return self

    def predict(self, indices: Sequence[int]) -> list[float]:
        assert self._w is not None and self._mean is not None and self._std is not None
        z = (self._matrix(indices) - self._mean) / self._std
        logits = z @ self._w + self._b
        return [1.0 / (1.0 + math.exp(-float(v))) for v in logits]
