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
