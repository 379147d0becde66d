"""Errors raised by the MCP server."""

from __future__ import annotations

from signaldesk.errors import SignaldeskError


class McpServerError(SignaldeskError):
    """Base class for errors raised by the MCP server."""
