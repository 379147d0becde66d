"""Pipeline: configuration, the CLI, the staged intake pipeline, the ledger, the note
writer, the scheduler and the daily reports."""

from __future__ import annotations

from signaldesk.pipeline.config import (
    Config,
    ConfigError,
    Workspace,
    load_config,
    resolve_workspace,
)
from signaldesk.pipeline.settings import PipelineSettings, VaultSettings

__all__ = [
    "Config",
    "ConfigError",
    "PipelineSettings",
    "VaultSettings",
    "Workspace",
    "load_config",
    "resolve_workspace",
]
