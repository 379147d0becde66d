"""The base for every layer's settings section.

Each layer declares its own frozen pydantic model (``retrieval.IndexSettings``,
``sources.RssSettings``, ...). ``pipeline.config`` composes them into the one
TOML file, writes the commented default from the field descriptions, and a test
checks that every field has one.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SettingsModel(BaseModel):
    """Immutable, unknown keys rejected (a typo in the TOML is an error, not a silent default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
