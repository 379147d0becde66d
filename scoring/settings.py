"""Settings for scoring and routing (the `[scoring]` TOML section)."""

from __future__ import annotations

from pydantic import Field

from signaldesk.settings import SettingsModel


class ScoringSettings(SettingsModel):
    """The composite score and the filing threshold."""

    threshold: float = Field(
        0.55, ge=0, le=1, description="Items whose composite score is above this are filed."
    )
