"""The root of every error signaldesk raises on purpose.

Each layer subclasses :class:`SignaldeskError` (``retrieval.RetrievalError``,
``sources.SourceError``, ...) and converts third-party exceptions at its
boundary with ``raise ... from exc``, so callers catch one family.
"""

from __future__ import annotations


class SignaldeskError(Exception):
    """Base class for all signaldesk errors.

    ``hint`` tells a person what to do next (for example the command that fixes
    it); the CLI and the MCP server show it beside the message.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message
