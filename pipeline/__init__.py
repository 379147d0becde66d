"""Pipeline: configuration, the CLI, the staged intake pipeline, the ledger, the note
writer, the scheduler and the daily reports."""

from __future__ import annotations

import typing

from signaldesk.lazy import lazy_attributes as _lazy_attributes

if typing.TYPE_CHECKING:
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

# Loaded on first use: every module of this package (the CLI's entry point among them)
# runs this file first, and the configuration imports every layer's settings.
_EXPORTS = {
    **{
        name: "signaldesk.pipeline.config"
        for name in ("Config", "ConfigError", "Workspace", "load_config", "resolve_workspace")
    },
    "PipelineSettings": "signaldesk.pipeline.settings",
    "VaultSettings": "signaldesk.pipeline.settings",
}
__getattr__ = _lazy_attributes(__name__, _EXPORTS)
