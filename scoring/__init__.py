"""Scoring: the four dimensions, the composite, the threshold and domain routing."""

from __future__ import annotations

from scoring.settings import ScoringSettings

__all__ = ["ScoringSettings"]
