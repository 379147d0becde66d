"""Routing: which of the 12 domain folders an item belongs in.

Each domain (except ``other``) has weighted keyword rules and a description. The
keyword evidence for a domain is saturated into [0, 1]; with an embedder and a
``route_embedding_share`` above 0 (the default is 0: the bundled model's likeness to a
one-line description routed worse than the rules alone), it is blended with the item's
similarity to the domain description. The item's shape adds
keyword-equivalent evidence where it says more than words (a paper's abstract is research
whatever its topic; an advisory is security). The best domain's blended score is the
confidence; below ``route_min_confidence`` the item goes to ``other``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from signaldesk.scoring._calc import clamp, keyword_evidence, saturate, shown_terms
from signaldesk.scoring.catalogue import DomainRule
from signaldesk.scoring.keywords import FieldCounts
from signaldesk.scoring.records import RouteDecision
from signaldesk.scoring.text import TextView

__all__ = ["FALLBACK_DOMAIN", "Router"]

FALLBACK_DOMAIN = "other"
# Weighted keyword evidence that gives a domain ~0.63 (a title hit on a weight-3
# keyword plus a mention or two in the body).
_KEYWORD_SCALE = 7.0
_CANDIDATES = 3
# How shape evidence is named among the keywords in a route's reason.
_SHAPE_NAMES = {"research": "shaped like a paper", "security": "shaped like an advisory"}
# What an item is outranks what it is about: a decisive shape's domain (a paper's research,
# a security notice's security) wins over any domain less than this much ahead of it.
# Keyword evidence saturates, so a paper's topic can otherwise tie with research at 0.99.
_DECISIVE_MARGIN = 0.25
_DECISIVE_NAMES = {
    "research": "a paper goes under research before its topic",
    "security": "a title naming a security matter goes under security before its topic",
}


class Router:
    """Routes items by a fixed set of :class:`~scoring.catalogue.DomainRule`."""

    def __init__(
        self, rules: Sequence[DomainRule], *, embedding_share: float, min_confidence: float
    ) -> None:
        self.rules = tuple(rules)
        self._share = embedding_share
        self._min_confidence = min_confidence

    @property
    def terms(self) -> list[str]:
        """Every keyword of every rule."""
        return [t for rule in self.rules for t in rule.keywords]

    @property
    def anchors(self) -> list[str]:
        """Texts to embed: each rule's domain name and description, in rule order."""
        return [f"{r.domain}: {r.description}" if r.description else r.domain for r in self.rules]

    def route(
        self,
        view: TextView,
        counts: FieldCounts,
        similarities: Sequence[float] | None,
        *,
        shape: Mapping[str, float] | None = None,
        decisive: frozenset[str] = frozenset(),
    ) -> RouteDecision:
        """Route ``view``.

        :param counts: counts of :attr:`terms` in the item's fields.
        :param similarities: 0..1 similarities to :attr:`anchors`, or None (keyword-only).
        :param shape: extra keyword-equivalent evidence per domain from the item's shape
            (a paper's abstract for ``research``, an advisory for ``security``).
        :param decisive: domains whose shape says what the item is beyond doubt: each wins
            over any domain less than ``_DECISIVE_MARGIN`` ahead of it.
        """
        title, tags, body = counts.title, counts.tags, counts.body
        share = self._share if similarities is not None else 0.0
        shape = shape or {}
        scored: list[tuple[float, str, list[str], float, float]] = []
        for i, rule in enumerate(self.rules):
            raw, found = keyword_evidence(rule.keywords, title, tags, body, view.words)
            bonus = shape.get(rule.domain, 0.0)
            if bonus:
                found = [_SHAPE_NAMES[rule.domain], *found]
            keyword = saturate(raw + bonus, _KEYWORD_SCALE)
            semantic = similarities[i] if similarities is not None else 0.0
            combined = clamp((1.0 - share) * keyword + share * semantic)
            scored.append((combined, rule.domain, found, keyword, semantic))
        scored.sort(
            key=lambda entry: (-(entry[0] + _DECISIVE_MARGIN * (entry[1] in decisive)), entry[1])
        )
        candidates = tuple((domain, round(value, 4)) for value, domain, *_ in scored[:_CANDIDATES])
        if not scored or scored[0][0] < self._min_confidence:
            best = scored[0] if scored else None
            best_value = best[0] if best is not None else 0.0
            confidence = round(1.0 - best_value, 4)
            # The fallback's confidence is how clearly nothing fits: one minus the best.
            near = f"; the best, {best[1]}, has {best_value:.2f}" if best and best_value else ""
            return RouteDecision(
                domain=FALLBACK_DOMAIN,
                confidence=confidence,
                reason=(
                    f"{FALLBACK_DOMAIN} ({confidence:.2f}): no domain reached "
                    f"{self._min_confidence:.2f}{near}"
                ),
                candidates=candidates,
            )
        value, domain, found, keyword, semantic = scored[0]
        detail = []
        if found:
            detail.append(f"keywords {shown_terms(found)}")
        if share and round(semantic, 2) > 0:  # "similar ... (0.00)" would say the opposite
            detail.append(f"similar to its description ({semantic:.2f})")
        runner_up = ""
        # A runner-up the rules found nothing for ("next ai-tooling (0.00)") says nothing.
        if len(scored) > 1 and round(scored[1][0], 2) > 0:
            other_value, other = scored[1][0], scored[1][1]
            # "next ai-tooling (0.80)" beside "research (0.65)" would read as a mistake.
            lead = (
                f"{_DECISIVE_NAMES.get(domain, 'its shape decides')}, ahead of"
                if other_value > value
                else "next"
            )
            runner_up = f"; {lead} {other} ({other_value:.2f})"
        return RouteDecision(
            domain=domain,
            confidence=round(value, 4),
            reason=f"{domain} ({value:.2f}): {', '.join(detail) or 'weak match'}{runner_up}",
            candidates=candidates,
        )
