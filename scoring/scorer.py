"""The scorer: four dimensions, the composite, the threshold and the route for each item.

Built once from :class:`~scoring.settings.ScoringSettings` and an optional embedder.
With an embedder, relevance adds the similarity between an item and each topic
description (and routing each domain description's, when ``route_embedding_share`` asks
for it: by default the rules route alone); without one (``embedder=None``) both use
keyword evidence only, which is fully deterministic and needs no model. Either way the
same item and settings always give the same card: nothing here reads the clock.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from signaldesk.errors import SignaldeskError
from signaldesk.items import Item
from signaldesk.scoring._calc import clamp, noisy_or
from signaldesk.scoring.actionability import is_advisory, score_actionability
from signaldesk.scoring.authority import AuthorityModel
from signaldesk.scoring.catalogue import build_domain_rules, build_profile, build_reputation
from signaldesk.scoring.depth import score_depth
from signaldesk.scoring.errors import EmbeddingFailed
from signaldesk.scoring.feedback import Correction, Feedback, feed_of, text_vector
from signaldesk.scoring.keywords import FieldCounts, KeywordMatcher
from signaldesk.scoring.records import DIMENSIONS, TEASER_NOTE, DimensionScore, ScoreCard
from signaldesk.scoring.relevance import RelevanceModel
from signaldesk.scoring.resemblance import Resemblance, with_resemblance
from signaldesk.scoring.routing import Router
from signaldesk.scoring.settings import ScoringSettings
from signaldesk.scoring.text import TextView, analyse

if TYPE_CHECKING:
    from signaldesk.retrieval.embedder import Embedder

__all__ = ["Scorer"]

logger = logging.getLogger(__name__)

# Characters of the body embedded with the title: the opening says what an item is
# about, and a bounded input keeps embedding cost flat for long articles.
_EMBED_CHARS = 600


class Scorer:
    """Scores and routes :class:`~signaldesk.items.Item` records.

    :param settings: the ``[scoring]`` section.
    :param embedder: an embedding model (``retrieval.LazyEmbedder``), or ``None`` for
        keyword-only mode: relevance and routing then use keyword evidence alone.
    :param corrections: this vault's corrections (:mod:`scoring.feedback`): the composite
        and the route follow what the person did with related items (the card's
        ``learned``). Empty: the shipped behaviour.
    :raises DataFileError: a shipped default list is missing or malformed.
    """

    def __init__(
        self,
        settings: ScoringSettings,
        embedder: Embedder | None,
        *,
        corrections: Sequence[Correction] = (),
    ) -> None:
        self.settings = settings
        self._embedder = embedder
        self._relevance = RelevanceModel(
            build_profile(settings), embedding_share=settings.embedding_share
        )
        self._authority = AuthorityModel(build_reputation(settings))
        self._router = Router(
            build_domain_rules(settings),
            embedding_share=settings.route_embedding_share,
            min_confidence=settings.route_min_confidence,
        )
        # One matcher for every keyword list: each item's fields are scanned once.
        self._matcher = KeywordMatcher([*self._relevance.terms, *self._router.terms])
        weights = settings.weights
        total = weights.relevance + weights.actionability + weights.depth + weights.authority
        self._weights = {name: getattr(weights, name) / total for name in DIMENSIONS}
        self._anchors: npt.NDArray[np.float32] | None = None
        self._anchor_lock = threading.Lock()
        self._corrections = tuple(corrections)
        self._feedback: Feedback | None = None
        self._resemblance: Resemblance | None = (
            Resemblance.shipped() if settings.resemblance and embedder is not None else None
        )
        self._resemblance_checked = False

    @property
    def keyword_only(self) -> bool:
        """True when no embedder was given (relevance and routing use keywords alone)."""
        return self._embedder is None

    def score(self, item: Item, *, source_prior: float | None = None) -> ScoreCard:
        """Score and route one item.

        :param source_prior: the user's prior for the item's source (feed, sender, site), 0..1.
        :raises EmbeddingFailed: the embedder failed.
        """
        return self.score_many([item], priors=[source_prior])[0]

    def score_many(
        self, items: Sequence[Item], *, priors: Sequence[float | None] | None = None
    ) -> list[ScoreCard]:
        """Score and route many items, embedding them in one batch.

        :param priors: one source prior (or ``None``) per item, in the same order.
        :raises ValueError: ``priors`` has a different length, or a prior is outside 0..1.
        :raises EmbeddingFailed: the embedder failed.
        """
        if priors is None:
            priors = [None] * len(items)
        if len(priors) != len(items):
            raise ValueError(f"{len(priors)} priors for {len(items)} items")
        for prior in priors:
            if prior is not None and not 0.0 <= prior <= 1.0:
                raise ValueError(f"source prior {prior} is outside 0..1")
        if not items:
            return []
        views = [analyse(item, max_chars=self.settings.max_chars) for item in items]
        vectors = self.item_vectors(items)
        cards = self._plain_cards(items, views, vectors, priors)
        feedback = self._feedback_model()
        if feedback is None:
            return cards
        return [
            self._with_feedback(
                card,
                feedback,
                vectors[i] if vectors is not None else text_vector(item),
                item,
            )
            for i, (card, item) in enumerate(zip(cards, items, strict=True))
        ]

    def _plain_cards(
        self,
        items: Sequence[Item],
        views: Sequence[TextView],
        vectors: npt.NDArray[np.float32] | None,
        priors: Sequence[float | None],
    ) -> list[ScoreCard]:
        """The cards of the shipped rules (and direction), before any correction."""
        similarities = self._similarities(vectors)
        resemblance = self._resemblance_model()
        shifts = None if vectors is None or resemblance is None else resemblance.shifts(vectors)
        n_topics = len(self._relevance.anchors)
        cards = []
        for i, (item, view, prior) in enumerate(zip(items, views, priors, strict=True)):
            row = similarities[i] if similarities is not None else None
            cards.append(
                self._card(
                    item,
                    view,
                    prior,
                    None if row is None else row[:n_topics].tolist(),
                    None if row is None else row[n_topics:].tolist(),
                    None if shifts is None else float(shifts[i]),
                )
            )
        return cards

    @property
    def embedder(self) -> Embedder | None:
        """The embedding model (None: keyword-only)."""
        return self._embedder

    @property
    def corrections(self) -> tuple[Correction, ...]:
        """The corrections this scorer learns from."""
        return self._corrections

    def learned_line(self) -> tuple[float, int]:
        """The person's line (:func:`~scoring.feedback.fit_line`: what every composite gets
        from where this vault's corrections put the line) and how many corrections it reads."""
        feedback = self._feedback_model()
        return (0.0, 0) if feedback is None else (feedback.line, feedback.line_corrections)

    def item_vectors(self, items: Sequence[Item]) -> npt.NDArray[np.float32] | None:
        """Unit embeddings of the items' opening text, as scoring reads them (None in
        keyword-only mode)."""
        if self._embedder is None:
            return None
        vectors = self._encode([_embedding_text(item) for item in items])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = np.divide(
            vectors, norms, out=np.zeros_like(vectors), where=norms > 0
        )
        return unit

    def _resemblance_model(self) -> Resemblance | None:
        """The shipped direction, if it was fitted on this scorer's embedding model."""
        if self._resemblance is not None and not self._resemblance_checked:
            assert self._embedder is not None
            if not self._resemblance.fits(self._embedder.fingerprint, self._embedder.dimensions):
                logger.debug("resemblance off: fitted on another embedding model")
                self._resemblance = None
            self._resemblance_checked = True
        return self._resemblance

    def _feedback_model(self) -> Feedback | None:
        """The corrections as a :class:`Feedback` (their items embedded once per scorer)."""
        if not self._corrections:
            return None
        if self._feedback is None:
            items = [c.item for c in self._corrections]
            views = [analyse(item, max_chars=self.settings.max_chars) for item in items]
            vectors = self.item_vectors(items)
            # What triage gave the corrected items itself: where the person's line sits.
            composites = [
                card.composite
                for card in self._plain_cards(
                    items, views, vectors, [c.prior for c in self._corrections]
                )
            ]
            background = None
            if vectors is None:
                vectors = np.stack([text_vector(item) for item in items])
            else:
                background = self._anchor_matrix().mean(axis=0)
            self._feedback = Feedback(
                self._corrections,
                vectors,
                background,
                composites=composites,
                threshold=self.settings.threshold,
            )
        return self._feedback

    def _with_feedback(
        self,
        card: ScoreCard,
        feedback: Feedback,
        vector: npt.NDArray[np.float32],
        item: Item,
    ) -> ScoreCard:
        learned, route = feedback.adjust(
            card.route, vector, item.url, feed_of(item), card.composite
        )
        if learned is None and route is card.route:
            return card
        composite = card.composite
        if learned is not None:
            weighted = sum(self._weights[name] * card.dimension(name).value for name in DIMENSIONS)
            composite = round(clamp(weighted + learned.value), 4)
        return replace(
            card,
            composite=composite,
            passed=composite > self.settings.threshold,
            route=route,
            learned=learned,
        )

    def _card(
        self,
        item: Item,
        view: TextView,
        prior: float | None,
        topic_similarities: list[float] | None,
        domain_similarities: list[float] | None,
        resemblance: float | None,
    ) -> ScoreCard:
        counts = FieldCounts(
            title=self._matcher.count_tokens(view.title_tokens),
            tags=self._matcher.count_tokens(view.tag_tokens),
            body=self._matcher.count_tokens(view.body_tokens),
        )
        relevance = self._relevance.score(view, counts, topic_similarities)
        if item.source_kind == "clipper" and self.settings.clipping_intent > 0:
            relevance = _with_clipping_intent(relevance, self.settings.clipping_intent)
        dims: dict[str, DimensionScore] = {
            "relevance": relevance,
            "actionability": score_actionability(view),
            "depth": score_depth(view, self._authority.is_primary),
            "authority": self._authority.score(
                view,
                url=item.url,
                site_name=item.site_name,
                author=item.author,
                prior=prior,
                feed_url=item.source_id if item.source_kind == "rss" else None,
            ),
        }
        dims = {name: self._calibrated(name, dim) for name, dim in dims.items()}
        if resemblance is not None:
            dims["depth"] = with_resemblance(dims["depth"], resemblance)
        if item.teaser:
            depth = dims["depth"]
            dims["depth"] = DimensionScore(
                value=depth.value,
                reason=f"{depth.reason}; {TEASER_NOTE}",
                features={**depth.features, "teaser": 1.0},
            )
        composite = round(sum(self._weights[name] * dims[name].value for name in DIMENSIONS), 4)
        return ScoreCard(
            teaser=item.teaser,
            relevance=dims["relevance"],
            actionability=dims["actionability"],
            depth=dims["depth"],
            authority=dims["authority"],
            composite=composite,
            passed=composite > self.settings.threshold,
            route=self._router.route(
                view, counts, domain_similarities, shape=_shape(view), decisive=_decisive(view)
            ),
        )

    def _calibrated(self, name: str, dim: DimensionScore) -> DimensionScore:
        """``dim`` mapped into the composite's scale (settings.calibration); what was
        measured stays among its features."""
        value = round(self.settings.calibration.apply(name, dim.value), 4)
        if value == dim.value:
            return dim
        return DimensionScore(
            value=value, reason=dim.reason, features={**dim.features, "measured": dim.value}
        )

    def _encode(self, texts: list[str]) -> npt.NDArray[np.float32]:
        assert self._embedder is not None
        try:
            return np.asarray(self._embedder.encode(texts), dtype=np.float32)
        except SignaldeskError:
            raise  # already says what to do (e.g. the model cannot be loaded)
        except Exception as exc:
            raise EmbeddingFailed(f"embedding items for scoring failed: {exc}") from exc

    def _anchor_matrix(self) -> npt.NDArray[np.float32]:
        """Embeddings of the topic, muted-topic and domain descriptions (computed once)."""
        anchors = self._anchors
        if anchors is None:
            with self._anchor_lock:
                anchors = self._anchors
                if anchors is None:
                    texts = [*self._relevance.anchors, *self._router.anchors]
                    anchors = self._anchors = self._encode(texts)
        return anchors

    def _similarities(
        self, vectors: npt.NDArray[np.float32] | None
    ) -> npt.NDArray[np.float64] | None:
        """Per item, 0..1 similarities to every anchor (topics, muted topics, domains).

        Trigger: small static embedding models give every pair of English texts a
        cosine of 0.2-0.5, so a raw cosine says little. Why: what separates "about
        this topic" from "about something else" is how much closer the item is to one
        description than to the others. Outcome: each cosine is centred on the
        item's mean cosine within its group (the profile's anchors, the domains'
        anchors) before ``similarity_range`` maps it onto 0..1.
        """
        if vectors is None:
            return None
        anchors = self._anchor_matrix()
        cosines = (vectors @ anchors.T).astype(np.float64)
        split = len(self._relevance.anchors)
        for group in (slice(0, split), slice(split, cosines.shape[1])):
            block = cosines[:, group]
            if block.shape[1]:
                block -= block.mean(axis=1, keepdims=True)
        low, high = self.settings.similarity_range
        mapped = np.clip((cosines - low) / (high - low), 0.0, 1.0)
        return np.round(mapped, 4)


# A paper with three of its four marks (an abstract, "we propose" or the like, a result, an
# arXiv id) is one beyond doubt and goes under research whatever its topic; an "Abstract"
# heading and one more mark is also what a PEP or a design document has, and those belong
# with their topic, so they get no research evidence from their shape either. (The domain
# descriptions' embedding used to pull such a PEP back to programming; routing by the rules
# alone, stop 35, it tied with research. No tuning-half route moved with this.)
_DECISIVE_PAPER_MARKS = 3
_PAPER_DECIDES = frozenset({"research"})
# Keyword-equivalent routing evidence from an item's shape (one title keyword is ~2.5-7.5).
_PAPER_EVIDENCE = 8.0
_ADVISORY_EVIDENCE = 6.0


def _is_paper(view: TextView) -> bool:
    return view.prose.paper >= _DECISIVE_PAPER_MARKS


def _shape(view: TextView) -> dict[str, float]:
    shape = {}
    if _is_paper(view):
        shape["research"] = _PAPER_EVIDENCE
    if is_advisory(view):
        shape["security"] = _ADVISORY_EVIDENCE
    return shape


# A title that names a security matter (a notice, a vulnerability, malicious packages, a
# compromise) says what the item is for, whatever ecosystem it happens in (LABELLING.md: "what
# the item is for decides"): "crates.io: Malicious crates ..." is security, not programming.
# On the tuning halves it routed 3 keepers from web, programming and devops to security and
# moved no other keeper; it moved nothing on the held-out halves (stop 35). Not "leak" or
# "exploit": a memory leak and exploiting parallelism are not security matters.
_SECURITY_TITLE = re.compile(
    r"\b(?:security|vulnerab\w*|cve-\d+|malicious|malware|compromised?|supply[- ]chain)\b",
    re.IGNORECASE,
)
_SECURITY_DECIDES = frozenset({"security"})


def _decisive(view: TextView) -> frozenset[str]:
    decisive = _PAPER_DECIDES if _is_paper(view) else frozenset()
    if _SECURITY_TITLE.search(view.title):
        decisive |= _SECURITY_DECIDES
    return decisive


def _with_clipping_intent(score: DimensionScore, intent: float) -> DimensionScore:
    """A page the user chose to clip is evidence of interest the text alone cannot show."""
    return DimensionScore(
        value=round(noisy_or(score.value, intent), 4),
        reason=f"{score.reason}; clipped by you",
        features={**score.features, "clipping_intent": intent},
    )


def _embedding_text(item: Item) -> str:
    body = item.text if item.text.strip() else (item.summary or "")
    tags = f"\n{', '.join(item.tags)}" if item.tags else ""
    return f"{item.title}{tags}\n{body[:_EMBED_CHARS]}"
