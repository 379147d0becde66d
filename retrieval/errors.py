"""Errors raised by the retrieval layer."""

from __future__ import annotations

from signaldesk.errors import SignaldeskError


class RetrievalError(SignaldeskError):
    """Base class for retrieval errors."""


class StoreError(RetrievalError):
    """The index database cannot be opened, migrated or written."""


class IndexUnavailableError(RetrievalError):
    """There is no index yet (or it cannot be read); search cannot run."""


class IndexLockedError(RetrievalError):
    """Another process is writing the index right now."""


class QueryError(RetrievalError):
    """The query cannot be searched (for example, it is empty)."""


class ModelError(RetrievalError):
    """No embedding model could be loaded."""
