"""Errors raised by scoring and routing."""

from __future__ import annotations

from signaldesk.errors import SignaldeskError


class ScoringError(SignaldeskError):
    """Base class for errors raised by scoring and routing."""
