"""Errors raised by the intake adapters."""

from __future__ import annotations

from signaldesk.errors import SignaldeskError


class SourceError(SignaldeskError):
    """Base class for errors raised by the intake adapters."""
