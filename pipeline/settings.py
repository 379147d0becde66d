"""Settings owned by the pipeline (the `[pipeline]`, `[schedule]`, `[report]` and
`[captains_log]` TOML sections)."""

from __future__ import annotations

from pydantic import Field

from signaldesk.settings import SettingsModel


class VaultSettings(SettingsModel):
    """Where the vault is."""

    path: str | None = Field(
        None,
        description=(
            "The vault folder. --vault and SIGNALDESK_VAULT take precedence; `signaldesk init` "
            "fills this in."
        ),
    )


class PipelineSettings(SettingsModel):
    """The staged intake pipeline."""

    ledger_path: str = Field(
        ".signaldesk/ledger.db", description="Item ledger database, relative to the vault root."
    )
    feed_concurrency: int = Field(
        8,
        ge=1,
        description="Feeds polled at once during a scan (the per-host limit still applies).",
    )
    extract_concurrency: int = Field(
        8, ge=1, description="Article pages fetched for full text at once during a scan."
    )
    queue_size: int = Field(
        64,
        ge=1,
        description=(
            "Items buffered between two pipeline stages; a full buffer slows the stage before it."
        ),
    )
    retry_attempts: int = Field(
        3, ge=1, description="Tries within one scan for a transient error (timeout, 5xx, 429)."
    )
    retry_backoff: float = Field(
        0.5, ge=0, description="Seconds before the first retry; doubled each time, with jitter."
    )
    max_attempts: int = Field(
        5,
        ge=1,
        description=(
            "Scans an item may fail transiently before intake gives up on its full text "
            "(it keeps the feed's content, or is parked when there is none)."
        ),
    )
    stage_timeout: float = Field(
        120.0, gt=0, description="Seconds one item or feed may spend in one stage before it fails."
    )


class CaptainsLogSettings(SettingsModel):
    """The daily captain's log built from local git and the day's notes."""

    repos: list[str] = Field(
        default_factory=list, description="Git repositories whose commits go into the log."
    )
    repo_roots: list[str] = Field(
        default_factory=list,
        description="Folders searched (three levels deep) for more git repositories.",
    )
    path: str = Field(
        "06-daily/{date}-captains-log.md",
        description="Where the log is written, relative to the vault; {date} is YYYY-MM-DD.",
    )
    covers: str = Field(
        "previous_day",
        pattern="^(previous_day|same_day)$",
        description=(
            "`previous_day`: the log dated D covers D-1 (a morning log), and Monday's covers "
            "Friday to Sunday. `same_day`: it covers D itself, and Monday's covers Saturday too."
        ),
    )
    top_signals: int = Field(5, ge=0, description="How many of the period's top signals to list.")
