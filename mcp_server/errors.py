"""Errors raised by the MCP server.

Tool calls never let these escape to the protocol layer: each one becomes an
``isError`` tool result whose text gives the ``code``, the ``message`` and the
``hint`` (see :mod:`mcp_server.results`).
"""

from __future__ import annotations

from signaldesk.errors import SignaldeskError


class McpServerError(SignaldeskError):
    """Base class for errors raised by the MCP server."""

    code: str = "server_error"


class PathRefusedError(McpServerError):
    """A path given by a client is outside the vault, excluded, or not a note."""

    code = "path_refused"


class NoteNotFoundError(McpServerError):
    """A path is well formed and inside the vault, but no such note exists."""

    code = "not_found"


class InvalidArgumentError(McpServerError):
    """A tool argument is well typed but cannot be used (a bad date, an empty query)."""

    code = "invalid_argument"


class UnknownToolError(McpServerError):
    """A client called a tool this server does not have."""

    code = "unknown_tool"


class TransportConfigError(McpServerError):
    """The HTTP transport cannot be started safely as configured (for example a
    non-loopback address with no token)."""

    code = "transport_config"
