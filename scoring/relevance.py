"""Relevance: how well an item matches the interest profile.

For each topic, keyword evidence (title above tags above body) is saturated into
[0, 1] and combined by noisy-OR with the embedding similarity between the item and
the topic's description; the best topic sets the score, a second matching topic
adds a little. Muted words and muted topics then pull the score down.
"""

from __future__ import annotations

from collections.abc import Sequence

from signaldesk.scoring._calc import clamp, keyword_evidence, noisy_or, saturate, shown_terms
from signaldesk.scoring.catalogue import Profile
from signaldesk.scoring.keywords import FieldCounts, normalise_term
from signaldesk.scoring.records import DimensionScore
from signaldesk.scoring.settings import TopicSettings
from signaldesk.scoring.text import TextView

__all__ = ["RelevanceModel"]

# Keyword evidence that gives a topic ~0.63: one title hit plus a body mention.
_KEYWORD_SCALE = 3.0
# Share of the runner-up topic added to the best one (an item at the crossing of two
# interests is a little more relevant than one squarely inside a single interest).
_SECOND_TOPIC_SHARE = 0.25
# Each muted-word mention keeps this fraction of relevance (title mentions count twice).
_MUTED_WORD_KEEP = 0.6
_MUTED_WORD_CAP = 5
# A perfect muted-topic match removes this fraction of relevance.
_MUTED_TOPIC_PULL = 0.7


def _terms(topic: TopicSettings) -> dict[str, float]:
    return {normalise_term(k): 1.0 for k in topic.keywords if k.strip("* ")}


class RelevanceModel:
    """Scores items against one :class:`~scoring.catalogue.Profile`.

    Anchor texts (the topic and muted-topic descriptions) are exposed so the
    scorer can embed them once; similarities come back in the same order.
    """

    def __init__(self, profile: Profile, *, embedding_share: float) -> None:
        self.profile = profile
        self._share = embedding_share
        self._topic_terms = [_terms(t) for t in profile.topics]
        self._muted_terms = [_terms(t) for t in profile.muted_topics]
        self._muted_words = {normalise_term(w): 1.0 for w in profile.muted_words}

    @property
    def terms(self) -> list[str]:
        """Every keyword the model reads counts of (topics, muted topics, muted words)."""
        every = [t for terms in (*self._topic_terms, *self._muted_terms) for t in terms]
        return [*every, *self._muted_words]

    @property
    def anchors(self) -> list[str]:
        """Texts to embed: each topic's then each muted topic's name and description."""
        return [
            f"{t.name}: {t.description}" if t.description else t.name
            for t in (*self.profile.topics, *self.profile.muted_topics)
        ]

    def score(
        self, view: TextView, counts: FieldCounts, similarities: Sequence[float] | None
    ) -> DimensionScore:
        """Relevance of ``view``.

        :param counts: counts of :attr:`terms` in the item's fields.
        :param similarities: 0..1 similarities to :attr:`anchors`, or None (keyword-only).
        """
        title, tags, body = counts.title, counts.tags, counts.body
        share = self._share if similarities is not None else 0.0
        n_topics = len(self.profile.topics)
        features: dict[str, float] = {}

        topic_scores: list[tuple[float, int, list[str], float, float]] = []
        for i, topic in enumerate(self.profile.topics):
            raw, found = keyword_evidence(self._topic_terms[i], title, tags, body, view.words)
            keyword = saturate(raw, _KEYWORD_SCALE)
            semantic = similarities[i] if similarities is not None else 0.0
            combined = topic.weight * noisy_or(keyword, share * semantic)
            topic_scores.append((combined, i, found, keyword, semantic))
            features[f"topic:{topic.name}"] = round(combined, 4)
        topic_scores.sort(key=lambda entry: (-entry[0], entry[1]))

        best, second = (topic_scores + [(0.0, -1, [], 0.0, 0.0)] * 2)[:2]
        value = best[0] + _SECOND_TOPIC_SHARE * second[0] * (1.0 - best[0])

        muted_title = sum(title[w] for w in self._muted_words)
        muted_rest = sum(body[w] + tags[w] for w in self._muted_words)
        muted_hits = min(2 * muted_title + muted_rest, _MUTED_WORD_CAP)
        muted_found = sorted(w for w in self._muted_words if title[w] or body[w] or tags[w])

        muted_topic, muted_name = 0.0, ""
        for j, topic in enumerate(self.profile.muted_topics):
            raw, _ = keyword_evidence(self._muted_terms[j], title, tags, body, view.words)
            if raw <= 0:
                # Similarity alone does not mute: a salary negotiation reads "like" shopping
                # deals to a small embedding model. A muted word of the topic must be there.
                continue
            semantic = similarities[n_topics + j] if similarities is not None else 0.0
            pull = topic.weight * noisy_or(saturate(raw, _KEYWORD_SCALE), share * semantic)
            if pull > muted_topic:
                muted_topic, muted_name = pull, topic.name

        keep = (_MUTED_WORD_KEEP**muted_hits) * (1.0 - _MUTED_TOPIC_PULL * muted_topic)
        value = clamp(value * keep)

        features.update(
            {
                "best_topic_keywords": round(best[3], 4),
                "best_topic_similarity": round(best[4], 4),
                "muted_word_hits": float(muted_hits),
                "muted_topic": round(muted_topic, 4),
            }
        )
        return DimensionScore(
            value=round(value, 4),
            reason=self._reason(best, second, muted_found, muted_topic, muted_name, share > 0),
            features=features,
        )

    def _reason(
        self,
        best: tuple[float, int, list[str], float, float],
        second: tuple[float, int, list[str], float, float],
        muted: list[str],
        muted_topic: float,
        muted_name: str,
        semantic: bool,
    ) -> str:
        parts: list[str] = []
        if best[1] < 0 or best[0] < 0.05:
            parts.append("matches no interest topic")
        else:
            topic = self.profile.topics[best[1]].name
            detail = []
            if best[2]:
                detail.append(f"keywords {shown_terms(best[2])}")
            if semantic and round(best[4], 2) > 0:  # "similarity 0.00" says the opposite
                detail.append(f"similarity {best[4]:.2f}")
            parts.append(f"topic {topic} ({'; '.join(detail) or 'weak'})")
            if second[1] >= 0 and second[0] >= 0.2:
                parts.append(f"also {self.profile.topics[second[1]].name}")
        if muted:
            parts.append(f"muted words: {shown_terms(muted, 3)}")
        if muted_topic >= 0.2:
            parts.append(f"looks like muted topic {muted_name} ({muted_topic:.2f})")
        return "; ".join(parts)
