"""Settings for the index and the retriever (the `[index]` and `[search]` TOML sections)."""

from __future__ import annotations

from pydantic import Field

from signaldesk.settings import SettingsModel


class IndexSettings(SettingsModel):
    """How the vault is chunked, embedded and stored."""

    model: str = Field(
        "minishlab/potion-base-8M",
        description=(
            "Model2Vec model name or local folder. When it cannot be loaded (offline, not "
            "cached) the model bundled with signaldesk is used; the index records which."
        ),
    )
    allow_download: bool = Field(
        False,
        description=(
            "Let the embedding library download `model` from the Hugging Face hub when it is "
            "not cached. Off by default: signaldesk makes no network calls of its own."
        ),
    )
    batch_size: int = Field(64, ge=1, description="Chunks embedded per batch.")
    chunk_max_chars: int = Field(
        1800,
        ge=200,
        description="Sections longer than this are split at paragraph boundaries.",
    )
    chunk_min_chars: int = Field(
        200,
        ge=0,
        description="Fragments shorter than this are merged into a neighbouring chunk.",
    )
    db_path: str = Field(
        ".signaldesk/index.db",
        description="Index database, relative to the vault root (or absolute).",
    )


class SearchSettings(SettingsModel):
    """How a query is ranked."""

    limit: int = Field(5, ge=1, description="Results returned when no limit is given.")
    max_tokens: int = Field(
        2000, ge=50, description="Token budget for returned text (about 4 characters a token)."
    )
