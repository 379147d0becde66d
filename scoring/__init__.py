"""Scoring: the four dimensions, the composite, the threshold and domain routing.

``Scorer(settings, embedder).score(item)`` gives a :class:`ScoreCard`: relevance,
actionability, depth and authority (each a :class:`DimensionScore` with a reason
and the features behind it), the weighted composite, whether it passes the
threshold, and the :class:`RouteDecision` naming the domain folder.
"""

from __future__ import annotations

import typing

from scoring.errors import DataFileError, EmbeddingFailed, ScoringError
from scoring.records import DIMENSIONS, DimensionScore, RouteDecision, ScoreCard
from signaldesk.lazy import lazy_attributes as _lazy_attributes

if typing.TYPE_CHECKING:
    from scoring.routing import FALLBACK_DOMAIN
    from scoring.scorer import Scorer
from scoring.settings import DomainRuleSettings, ScoreWeights, ScoringSettings, TopicSettings

__all__ = [
    "DIMENSIONS",
    "FALLBACK_DOMAIN",
    "DataFileError",
    "DimensionScore",
    "DomainRuleSettings",
    "EmbeddingFailed",
    "RouteDecision",
    "ScoreCard",
    "ScoreWeights",
    "Scorer",
    "ScoringError",
    "ScoringSettings",
    "TopicSettings",
]

# The scorer needs numpy and the embedder; load it when it is first used.
_EXPORTS = {"FALLBACK_DOMAIN": "scoring.routing", "Scorer": "scoring.scorer"}
__getattr__ = _lazy_attributes(__name__, _EXPORTS)
