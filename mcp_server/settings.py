"""Settings for the MCP server (the `[mcp]` TOML section)."""

from __future__ import annotations

from pydantic import Field

from signaldesk.settings import SettingsModel


class McpSettings(SettingsModel):
    """How the MCP server is reached."""

    host: str = Field("127.0.0.1", description="Address the HTTP transport binds to.")
    port: int = Field(8765, ge=1, le=65535, description="Port the HTTP transport listens on.")
