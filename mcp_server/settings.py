"""Settings for the MCP server (the `[mcp]` TOML section)."""

from __future__ import annotations

import re

from pydantic import Field, model_validator

from signaldesk.settings import SettingsModel

_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


class McpToken(SettingsModel):
    """One bearer token of a team's HTTP server and the vaults it may read."""

    name: str = Field(
        min_length=1,
        max_length=100,
        description="Who holds the token (shown in the log, never the token itself).",
    )
    token_env: str | None = Field(
        None,
        description="Name of the environment variable holding this token (the token itself "
        "never sits in the file).",
    )
    token_sha256: str | None = Field(
        None,
        description="Or: the token's SHA-256 in hex (`signaldesk mcp --new-token NAME` prints "
        "a new token and this line), safe to keep in a shared file.",
    )
    vaults: list[str] = Field(
        min_length=1,
        description='The vaults (by `[vault] name`) this token may search and read; ["*"]: all.',
    )

    @model_validator(mode="after")
    def _one_source(self) -> McpToken:
        if (self.token_env is None) == (self.token_sha256 is None):
            raise ValueError(f"token {self.name!r}: give exactly one of token_env, token_sha256")
        if self.token_sha256 is not None and not _SHA256_HEX.match(self.token_sha256):
            raise ValueError(f"token {self.name!r}: token_sha256 must be 64 lower-case hex digits")
        return self


class McpSettings(SettingsModel):
    """How the MCP server is reached and how much it may return."""

    host: str = Field(default="127.0.0.1", description="Address the HTTP transport binds to.")
    port: int = Field(
        default=8765, ge=0, le=65535, description="Port the HTTP transport listens on."
    )
    path: str = Field(
        default="/mcp", pattern=r"^/[A-Za-z0-9/_.-]*$", description="URL path of the HTTP endpoint."
    )
    token_env: str | None = Field(
        default=None,
        description=(
            "Name of an environment variable that holds the bearer token HTTP clients must "
            "send (`Authorization: Bearer <token>`). Required to bind a non-loopback address. "
            "Put the name here, never the token itself."
        ),
    )
    tokens: list[McpToken] = Field(
        default_factory=list,
        description=(
            "Bearer tokens for the HTTP transport, each allowed a set of vaults (team mode; "
            "as `[[mcp.tokens]]` tables: name, token_env or token_sha256, vaults). Every "
            "tool answers only from the vaults of the token a request carries."
        ),
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description=(
            "Extra Host header values the HTTP transport accepts besides loopback and the "
            'bound address ("name:port", or "name:*" for any port). DNS-rebinding protection.'
        ),
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description=(
            "Extra browser Origin values the HTTP transport accepts besides loopback origins "
            '("https://example.org", or "http://name:*"). Requests without Origin are allowed.'
        ),
    )
    http_request_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description=(
            "Seconds an HTTP client has to send a whole request (headers and body), counted "
            "from when it connects or gets its previous response; a connection whose request "
            "is still incomplete then is closed (slow or stalled clients, slowloris). A "
            "request that has arrived may take as long as the tool needs."
        ),
    )
    http_max_sessions: int = Field(
        default=100,
        ge=1,
        description=(
            "Most MCP sessions the HTTP transport keeps. A new client beyond this closes the "
            "session idle longest (its client gets 404 and starts a new session); only while "
            "every session has a request in flight is a new client refused (503)."
        ),
    )
    http_session_idle_seconds: float = Field(
        default=1800.0,
        gt=0,
        description=(
            "An HTTP session with no request in flight for this long is closed (its client "
            "gets 404 and starts a new session)."
        ),
    )
    search_max_tokens: int = Field(
        default=8000,
        ge=100,
        description=(
            "Upper bound a client may ask for in `search` / `get_context` max_tokens "
            "(about 4 characters a token)."
        ),
    )
    read_max_tokens: int = Field(
        default=8000,
        ge=100,
        description=(
            "Most text `read_note` returns in one call; longer notes are returned a page at a "
            "time with the line to continue from."
        ),
    )
    list_max_tokens: int = Field(
        default=6000,
        ge=100,
        description="Most text `list_notes` and `recent_signals` return in one call.",
    )
    report_max_tokens: int = Field(
        default=6000, ge=100, description="Most text `latest_report` returns in one call."
    )
    tool_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="A tool call that takes longer than this fails with a timeout.",
    )
    max_note_bytes: int = Field(
        default=5_000_000, ge=1024, description="Notes larger than this are refused by `read_note`."
    )
