"""Scoring: the four dimensions, the composite, the threshold and domain routing.

``Scorer(settings, embedder).score(item)`` gives a :class:`ScoreCard`: relevance,
actionability, depth and authority (each a :class:`DimensionScore` with a reason
and the features behind it), the weighted composite, whether it passes the
threshold, and the :class:`RouteDecision` naming the domain folder.
"""

from __future__ import annotations

import typing

from signaldesk.lazy import lazy_attributes as _lazy_attributes
from signaldesk.scoring.errors import DataFileError, EmbeddingFailed, ScoringError
from signaldesk.scoring.records import (
    DIMENSIONS,
    DimensionScore,
    LearnedShift,
    RouteDecision,
    ScoreCard,
)

if typing.TYPE_CHECKING:
    from signaldesk.scoring.routing import FALLBACK_DOMAIN
    from signaldesk.scoring.scorer import Scorer
from signaldesk.scoring.settings import (
    DomainRuleSettings,
    ScoreWeights,
    ScoringSettings,
    TopicSettings,
)

__all__ = [
    "DIMENSIONS",
    "FALLBACK_DOMAIN",
    "DataFileError",
    "DimensionScore",
    "DomainRuleSettings",
    "EmbeddingFailed",
    "LearnedShift",
    "RouteDecision",
    "ScoreCard",
    "ScoreWeights",
    "Scorer",
    "ScoringError",
    "ScoringSettings",
    "TopicSettings",
]

# The scorer needs numpy and the embedder; load it when it is first used.
_EXPORTS = {"FALLBACK_DOMAIN": "signaldesk.scoring.routing", "Scorer": "signaldesk.scoring.scorer"}
__getattr__ = _lazy_attributes(__name__, _EXPORTS)
