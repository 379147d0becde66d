"""The MCP server: a thin, read-only layer over ``retrieval``."""

from __future__ import annotations

from mcp_server.settings import McpSettings

__all__ = ["McpSettings"]
