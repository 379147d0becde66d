"""Small numeric helpers shared by the scorers."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping

# A keyword in the title says more about what an item is than one in passing in the
# body; tags sit in between (the source chose them).
TITLE_WEIGHT = 2.5
TAG_WEIGHT = 1.5


def clamp(value: float, low: float = 0.0, high: float = 1.0) -> float:
    return max(low, min(high, value))


def ramp(value: float, low: float, high: float) -> float:
    """0 at or below ``low``, 1 at or above ``high``, linear in between."""
    if high <= low:
        return 1.0 if value >= high else 0.0
    return clamp((value - low) / (high - low))


def saturate(raw: float, scale: float) -> float:
    """Map evidence ``raw`` >= 0 onto [0, 1): diminishing returns, ``scale`` gives ~0.63."""
    return 1.0 - math.exp(-max(raw, 0.0) / scale)


def noisy_or(*values: float) -> float:
    """Combine independent pieces of evidence in [0, 1]: any one can carry the score."""
    remaining = 1.0
    for value in values:
        remaining *= 1.0 - clamp(value)
    return 1.0 - remaining


def length_norm(words: int) -> float:
    """Divide body keyword evidence by this: 1 up to 300 words, +1 per tenfold length.

    Why: a long article mentions many words in passing; without this, any 5,000-word
    piece would look relevant to everything.
    """
    return 1.0 + max(0.0, math.log10(max(words, 1) / 300.0))


def keyword_evidence(
    weights: Mapping[str, float],
    title: Counter[str],
    tags: Counter[str],
    body: Counter[str],
    words: int,
) -> tuple[float, list[str]]:
    """Weighted keyword evidence for one set of terms, and the terms found (best first).

    Each term counts ``TITLE_WEIGHT`` when in the title, ``TAG_WEIGHT`` when in the
    tags, plus ``log2(1 + n)`` for ``n`` body mentions (scaled down for long bodies).
    """
    norm = length_norm(words)
    raw = 0.0
    found: list[tuple[float, str]] = []
    # Walk the (few) terms present rather than every configured term.
    for term in {*title, *tags, *body}:
        weight = weights.get(term)
        if weight is None:
            continue
        in_title, in_tags, n_body = title.get(term, 0), tags.get(term, 0), body.get(term, 0)
        evidence = (
            TITLE_WEIGHT * (in_title > 0)
            + TAG_WEIGHT * (in_tags > 0)
            + math.log2(1 + n_body) / norm
        )
        raw += weight * evidence
        found.append((weight * evidence, term))
    found.sort(key=lambda pair: (-pair[0], pair[1]))
    return raw, [term for _, term in found]


def shown_terms(terms: list[str], limit: int = 4) -> str:
    """A short, readable list of matched terms (the ``*`` of prefix terms dropped)."""
    names = [t.rstrip("*") + ("…" if t.endswith("*") else "") for t in terms[:limit]]
    more = f" +{len(terms) - limit}" if len(terms) > limit else ""
    return ", ".join(names) + more
