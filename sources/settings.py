"""Settings for the intake adapters (the `[http]`, `[rss]`, `[clipper]`, `[newsletter]`
and `[tool_output]` TOML sections)."""

from __future__ import annotations

from pydantic import Field

from signaldesk.settings import SettingsModel
from signaldesk.vault import INBOX_FOLDER


class HttpSettings(SettingsModel):
    """How signaldesk talks to the web: one shared client for feeds and pages."""

    user_agent: str = Field(
        "signaldesk/0.1 (self-hosted feed reader; one request per feed per interval)",
        description="User-Agent sent with every request.",
    )
    connect_timeout: float = Field(10.0, gt=0, description="Seconds to wait for a connection.")
    total_timeout: float = Field(
        30.0, gt=0, description="Seconds one whole request for a feed may take."
    )
    page_connect_timeout: float = Field(
        4.0, gt=0, description="Seconds to wait for a connection to an article page's host."
    )
    page_first_byte_timeout: float = Field(
        5.0,
        gt=0,
        description=(
            "Seconds an article page's host may stay silent (before the first byte, and "
            "between two reads) before the fetch gives up."
        ),
    )
    page_total_timeout: float = Field(
        20.0, gt=0, description="Seconds one whole article page fetch may take."
    )
    max_bytes: int = Field(
        10_000_000, gt=0, description="Largest response body read; bigger ones are cut off."
    )
    per_host: int = Field(2, ge=1, description="Requests in flight to one host at once.")
    max_redirects: int = Field(
        5, ge=0, le=20, description="Redirects followed per request before giving up."
    )
    max_connections: int = Field(
        20, ge=1, description="Connections the shared client keeps open across all hosts."
    )


class RssSettings(SettingsModel):
    """Feed polling."""

    full_text: bool = Field(
        True, description="Fetch the article page for teaser entries (per-feed opt-out too)."
    )
    teaser_min_words: int = Field(
        150,
        ge=0,
        description="Feed content shorter than this many words counts as a teaser "
        "(worth fetching the full article).",
    )
    default_interval: float = Field(
        3600.0, gt=0, description="Seconds between polls of a feed whose posting rhythm is unknown."
    )
    min_interval: float = Field(
        900.0, gt=0, description="Shortest adaptive polling interval, in seconds (15 min)."
    )
    max_interval: float = Field(
        86400.0, gt=0, description="Longest adaptive polling interval, in seconds (24 h)."
    )
    interval_sample: int = Field(
        20,
        ge=2,
        description="Newest entries whose median publication gap sets the adaptive interval.",
    )
    max_server_delay: float = Field(
        604800.0,
        gt=0,
        description="Cap, in seconds, on the delay a feed may ask for through <ttl>, "
        "Cache-Control max-age or Retry-After (7 days).",
    )
    backoff_base: float = Field(
        900.0,
        gt=0,
        description="Seconds to wait after a feed's (or an article page's) first failure (15 min).",
    )
    backoff_factor: float = Field(
        2.0, ge=1, description="Multiplier on the wait after each further consecutive failure."
    )
    backoff_max: float = Field(
        86400.0, gt=0, description="Longest wait between retries of a failing feed (24 h)."
    )
    backoff_jitter: float = Field(
        0.2,
        ge=0,
        lt=1,
        description="Random fraction shaved off each backoff wait so failing feeds spread out.",
    )
    disable_after_days: float = Field(
        30.0,
        gt=0,
        description="A feed failing without a single success for this many days is disabled "
        "(and reported), never dropped silently.",
    )
    redirect_threshold: int = Field(
        3,
        ge=1,
        description="Consecutive polls permanently redirected (301/308) to the same URL "
        "before the stored feed URL is changed.",
    )


class ClipperSettings(SettingsModel):
    """Obsidian Web Clipper drops."""

    folder: str = Field("Clippings", description="Vault-relative folder the Web Clipper writes to.")
    max_bytes: int = Field(
        5_000_000, gt=0, description="Largest clipping read, in bytes; bigger files are reported."
    )


class NewsletterSettings(SettingsModel):
    """E-mail newsletters."""

    drop_folder: str = Field(
        f"{INBOX_FOLDER}/newsletters",
        description=(
            "Vault-relative (or absolute) folder scanned for .eml files, Maildirs and mboxes."
        ),
    )
    accept_all: bool = Field(
        False,
        description=(
            "Ingest every message found, not only those with newsletter headers "
            "(List-Unsubscribe, List-Id, Precedence: bulk). Bounces and auto-replies are "
            "always skipped."
        ),
    )
    max_message_bytes: int = Field(
        25_000_000, gt=0, description="Largest single message read, in bytes; bigger are reported."
    )
    imap_host: str = Field("", description="IMAP server (SSL). Empty turns IMAP intake off.")
    imap_port: int = Field(993, gt=0, lt=65536, description="IMAP SSL port.")
    imap_folder: str = Field("INBOX", description="IMAP folder read (never modified).")
    imap_user_env: str = Field(
        "SIGNALDESK_IMAP_USER",
        description="Name of the environment variable holding the IMAP user name.",
    )
    imap_password_env: str = Field(
        "SIGNALDESK_IMAP_PASSWORD",
        description=(
            "Name of the environment variable holding the IMAP password (credentials are "
            "never read from this file)."
        ),
    )
    imap_since_days: int = Field(
        14, ge=1, description="Only messages received in the last this many days are fetched."
    )
    imap_max_messages: int = Field(
        200, ge=1, description="Most messages fetched in one IMAP run (newest first)."
    )
    imap_timeout: float = Field(30.0, gt=0, description="Seconds one IMAP network step may take.")


class ToolOutputSettings(SettingsModel):
    """Captured output of AI tools and scripts."""

    drop_folder: str = Field(
        f"{INBOX_FOLDER}/tool-output",
        description="Vault-relative (or absolute) folder scanned for .md, .txt and .json drops.",
    )
    max_bytes: int = Field(
        5_000_000, gt=0, description="Largest drop file read, in bytes; bigger files are reported."
    )
