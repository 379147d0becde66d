"""Settings for the intake adapters (the `[http]`, `[rss]`, `[clipper]`, `[newsletter]`
and `[tool_output]` TOML sections)."""

from __future__ import annotations

from pydantic import Field

from signaldesk.settings import SettingsModel


class HttpSettings(SettingsModel):
    """How signaldesk talks to the web: one shared client for feeds and pages."""

    user_agent: str = Field(
        "signaldesk/0.1 (+https://github.com/signaldesk/signaldesk; local feed reader)",
        description="User-Agent sent with every request.",
    )
    connect_timeout: float = Field(10.0, gt=0, description="Seconds to wait for a connection.")
    total_timeout: float = Field(30.0, gt=0, description="Seconds one whole request may take.")
    max_bytes: int = Field(
        10_000_000, gt=0, description="Largest response body read; bigger ones are cut off."
    )
    per_host: int = Field(2, ge=1, description="Requests in flight to one host at once.")


class RssSettings(SettingsModel):
    """Feed polling."""

    full_text: bool = Field(
        True, description="Fetch the article page for teaser entries (per-feed opt-out too)."
    )


class ClipperSettings(SettingsModel):
    """Obsidian Web Clipper drops."""

    folder: str = Field("Clippings", description="Vault-relative folder the Web Clipper writes to.")


class NewsletterSettings(SettingsModel):
    """E-mail newsletters."""

    drop_folder: str = Field(
        "00-inbox/newsletters",
        description="Vault-relative (or absolute) folder scanned for .eml files, Maildirs and mboxes.",
    )


class ToolOutputSettings(SettingsModel):
    """Captured output of AI tools and scripts."""

    drop_folder: str = Field(
        "00-inbox/tool-output",
        description="Vault-relative (or absolute) folder scanned for .md, .txt and .json drops.",
    )
