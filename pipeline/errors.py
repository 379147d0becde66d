"""Errors raised by the pipeline."""

from __future__ import annotations

from signaldesk.errors import SignaldeskError


class PipelineError(SignaldeskError):
    """Base class for errors raised by the pipeline."""
