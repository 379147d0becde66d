"""What every command gets: the global options and a lazily resolved workspace."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from signaldesk.pipeline.config import Workspace, resolve_workspace


@dataclass
class AppContext:
    """Carried in ``click.Context.obj``; the workspace is resolved on first use so that
    `init` and `--help` work without a vault."""

    vault_option: Path | None
    config_option: Path | None
    console: Console = field(default_factory=Console)
    _workspace: Workspace | None = None

    def workspace(self) -> Workspace:
        if self._workspace is None:
            self._workspace = resolve_workspace(self.vault_option, self.config_option)
        return self._workspace
