"""Learning from the user: this vault's corrections adjust relevance and routing.

A correction says what the person did with one item: kept it (accepted, or moved a filed
note somewhere they keep things), threw it away (rejected, archived, deleted), or put it
under another domain. :class:`Feedback` remembers each corrected item by a vector (its
embedding when the scorer has a model, else a hashed bag of its words) and its site, and for
every new item:

- **relevance** moves by a bounded amount, the weighted vote of the corrected items most
  similar to it (a similarity below ``_SIMILAR`` does not vote) and of the corrected items
  from its own site ("you kept 3 similar items and 1 other item from this site (+0.18)");
- **routing** follows the domain the person chose for similar items, when their weighted
  vote is strong enough ("you filed 2 similar items under design").

Nothing here is stored: the pipeline keeps the corrections in its ledger and builds a
:class:`Feedback` from them for each run, so undoing corrections (or resetting them all)
brings back exactly the scores and routes of before.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from signaldesk.items import Item
from signaldesk.scoring._calc import clamp
from signaldesk.scoring.records import DimensionScore, RouteDecision
from signaldesk.scoring.text import TextView, host_of

__all__ = ["Correction", "Feedback", "item_kind", "text_vector"]

# Cosine similarity (of centred vectors) from which a corrected item votes, and at which its
# vote is full. Centred cosines above 0.4 join tuning-half items of one label 74 % of the
# time, above 0.5 93 %; the thresholds and shares here were chosen by replaying corrections
# across two halves of the tuning half, never the held-out one.
_SIMILAR = 0.45
_SAME = 0.65
# Corrections needed before their own mean centres the vectors; fewer borrow the
# background mean the scorer passes in (its anchors').
_OWN_CENTRE = 8
# A corrected item from the same site votes this much even when its text is unlike; one of
# the same distinctive kind (a paper, an advisory, release notes, a bare announcement) too.
_SITE_VOTE = 0.15
_KIND_VOTE = 0.35
# Largest move of relevance, reached smoothly (tanh) as votes add up.
_MAX_SHIFT = 0.5
_SHIFT_SCALE = 1.2
# Weighted domain votes needed before routing follows the person's choice.
_ROUTE_VOTES = 1.0
_BOW_DIMS = 1024


@dataclass(frozen=True, slots=True)
class Correction:
    """What the person did with one item.

    :param accept: True (kept), False (thrown away) or None (only moved to ``domain``).
    :param domain: the domain folder the person put it in, if they chose one.
    :param how: how it was recorded ("moved the note", "archived", "`triage reject`", ...).
    """

    item: Item
    accept: bool | None
    domain: str | None
    how: str


def item_kind(view: TextView) -> str | None:
    """The distinctive kind of an item, if it has one (votes go to items of its kind)."""
    from signaldesk.scoring.actionability import is_advisory, is_bare_announcement, is_release

    if view.prose.paper_shaped:
        return "paper"
    if is_advisory(view):
        return "advisory"
    if is_release(view):
        return "release notes"
    if is_bare_announcement(view):
        return "announcement"
    return None


def text_vector(item: Item) -> npt.NDArray[np.float32]:
    """A unit vector of hashed words (title weighted up), for keyword-only similarity."""
    vector = np.zeros(_BOW_DIMS, dtype=np.float32)
    words = Counter(w for w in item.text[:4000].lower().split() if len(w) > 2)
    for word, n in words.items():
        vector[zlib.crc32(word.encode()) % _BOW_DIMS] += 1.0 + math.log(n)
    for word in item.title.lower().split():
        vector[zlib.crc32(word.encode()) % _BOW_DIMS] += 3.0
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def _weight(similarity: float) -> float:
    return clamp((similarity - _SIMILAR) / (_SAME - _SIMILAR))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class Feedback:
    """The corrections of one vault, ready to adjust cards.

    :param corrections: the corrections in force (undone ones left out).
    :param vectors: one unit vector per correction, in the same order, from the same
        source (embedding or :func:`text_vector`) the new items' vectors will come from.
    :param background: a mean vector to centre on while there are few corrections.
    :param kinds: each corrected item's :func:`item_kind`, in the same order.

    Why centre: a small static embedding model gives any two English texts a cosine of
    0.3-0.6, so raw cosines hardly tell a similar item from another; what the texts share
    with every text is removed by subtracting a mean vector (the corrections' own, once
    there are enough of them, so the result depends on nothing but the corrections).
    """

    def __init__(
        self,
        corrections: Sequence[Correction],
        vectors: npt.NDArray[np.float32],
        background: npt.NDArray[np.float32] | None = None,
        kinds: Sequence[str | None] | None = None,
    ) -> None:
        if len(corrections) != len(vectors):
            raise ValueError(f"{len(vectors)} vectors for {len(corrections)} corrections")
        self.corrections = tuple(corrections)
        raw = np.asarray(vectors, dtype=np.float32).reshape(len(corrections), -1)
        if len(raw) >= _OWN_CENTRE or background is None:
            centre = raw.mean(axis=0) if len(raw) else np.zeros(raw.shape[1], np.float32)
        else:
            centre = np.asarray(background, dtype=np.float32)
        self._centre = centre
        self._vectors = self._centred(raw)
        self._sites = [host_of(c.item.url) for c in self.corrections]
        self._kinds = list(kinds) if kinds is not None else [None] * len(self.corrections)
        if len(self._kinds) != len(self.corrections):
            raise ValueError(f"{len(self._kinds)} kinds for {len(corrections)} corrections")

    def _centred(self, vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        shifted = vectors - self._centre
        norms = np.linalg.norm(shifted, axis=-1, keepdims=True)
        out: npt.NDArray[np.float32] = np.divide(
            shifted, norms, out=np.zeros_like(shifted), where=norms > 0
        )
        return out

    def __len__(self) -> int:
        return len(self.corrections)

    def _similarity_votes(self, vector: npt.NDArray[np.float32] | None) -> list[float]:
        """Each correction's weight for this item by the similarity of their texts."""
        if vector is None or not self.corrections:
            return [0.0] * len(self.corrections)
        centred = self._centred(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]
        return [_weight(float(sim)) for sim in (self._vectors @ centred).tolist()]

    def adjust(
        self,
        relevance: DimensionScore,
        route: RouteDecision,
        vector: npt.NDArray[np.float32] | None,
        url: str | None,
        kind: str | None = None,
    ) -> tuple[DimensionScore, RouteDecision]:
        """``relevance`` and ``route`` moved by the corrections similar to this item."""
        if not self.corrections:
            return relevance, route
        similar = self._similarity_votes(vector)
        site = host_of(url)
        # Relevance: similar items vote, and (less) the other corrected items of the same site
        # or of the same distinctive kind.
        votes: list[tuple[float, Correction, str]] = []
        for weight, correction, other, other_kind in zip(
            similar, self.corrections, self._sites, self._kinds, strict=True
        ):
            if correction.accept is None:
                continue
            if weight > 0:
                votes.append((weight, correction, "similar"))
            elif kind is not None and kind == other_kind:
                votes.append((_KIND_VOTE, correction, kind))
            elif site and site == other:
                votes.append((_SITE_VOTE, correction, "site"))
        evidence = sum(w if c.accept else -w for w, c, _ in votes)
        shift = round(_MAX_SHIFT * math.tanh(evidence / _SHIFT_SCALE), 4)
        if abs(shift) >= 0.005:
            relevance = self._shifted(relevance, shift, votes)
        # Routing: only similar items vote (a site publishes about many domains).
        return relevance, self._rerouted(route, list(zip(similar, self.corrections, strict=True)))

    @staticmethod
    def _shifted(
        relevance: DimensionScore, shift: float, votes: list[tuple[float, Correction, str]]
    ) -> DimensionScore:
        positive = shift > 0
        why = Counter(by for _, c, by in votes if c.accept is positive)
        similar, site = why.pop("similar", 0), why.pop("site", 0)
        parts = []
        if similar:
            parts.append(_plural(similar, "similar item"))
        for kind, n in sorted(why.items()):
            parts.append(
                f"{n} other {kind}" if n == 1 or kind.endswith("s") else f"{n} other {kind}s"
            )
        if site:
            parts.append(f"{_plural(site, 'other item')} from this site")
        verb = "kept" if positive else "rejected"
        value = round(clamp(relevance.value + shift), 4)
        return DimensionScore(
            value=value,
            reason=f"{relevance.reason}; you {verb} {' and '.join(parts)} ({shift:+.2f})",
            features={
                **relevance.features,
                "feedback_shift": shift,
                "feedback_similar": float(similar),
                "feedback_same_kind": float(sum(why.values())),
                "feedback_same_site": float(site),
            },
        )

    @staticmethod
    def _rerouted(route: RouteDecision, votes: list[tuple[float, Correction]]) -> RouteDecision:
        tally: dict[str, float] = {}
        counts: Counter[str] = Counter()
        for weight, correction in votes:
            if weight > 0 and correction.domain and correction.accept is not False:
                tally[correction.domain] = tally.get(correction.domain, 0.0) + weight
                counts[correction.domain] += 1
        if not tally:
            return route
        domain, total = max(tally.items(), key=lambda kv: (kv[1], kv[0]))
        if total < _ROUTE_VOTES or domain == route.domain:
            return route
        confidence = round(clamp(total / (total + 1.0)), 4)
        return RouteDecision(
            domain=domain,
            confidence=confidence,
            reason=(
                f"{domain} ({confidence:.2f}): you filed {_plural(counts[domain], 'similar item')} "
                f"under {domain}; the rules said {route.domain} ({route.confidence:.2f})"
            ),
            candidates=((domain, confidence), *route.candidates[:2]),
        )
