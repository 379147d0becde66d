"""Errors raised by scoring and routing."""

from __future__ import annotations

from signaldesk.errors import SignaldeskError

__all__ = ["DataFileError", "EmbeddingFailed", "ScoringError"]


class ScoringError(SignaldeskError):
    """Base class for errors raised by scoring and routing."""


class DataFileError(ScoringError):
    """A default list shipped in ``scoring/data`` is missing or malformed (a broken install)."""


class EmbeddingFailed(ScoringError):
    """The embedder raised while encoding items or profile descriptions."""
