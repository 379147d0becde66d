"""Errors raised by the pipeline."""

from __future__ import annotations

from signaldesk.errors import SignaldeskError


class PipelineError(SignaldeskError):
    """Base class for errors raised by the pipeline."""


class LedgerError(PipelineError):
    """The item ledger cannot be opened, migrated or queried."""


class FeedRegistryError(PipelineError):
    """A feed subscription cannot be added, found or changed (unknown URL, bad OPML)."""


class IntakeError(PipelineError):
    """An intake run cannot start or a stage failed in a way the run cannot absorb."""
