"""What every command gets: the global options and a lazily resolved workspace."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from signaldesk.pipeline.config import Workspace
    from signaldesk.pipeline.config_snapshot import SearchSetup


@dataclass
class AppContext:
    """Carried in ``click.Context.obj``; the workspace is resolved on first use so that
    `init` and `--help` work without a vault."""

    vault_option: Path | None
    config_option: Path | None
    _workspace: Workspace | None = None
    _console: list[Console] = field(default_factory=list)

    @property
    def console(self) -> Console:
        """The console for people (made on first use: `search --json` never draws one,
        and importing rich costs a one-shot search ~40 ms)."""
        if not self._console:
            from rich.console import Console

            self._console.append(Console())
        return self._console[0]

    @property
    def vault_argument(self) -> str | None:
        """``--vault`` as typed, for the commands a hint quotes (``_hints.with_vault``)."""
        return None if self.vault_option is None else str(self.vault_option)

    def workspace(self) -> Workspace:
        if self._workspace is None:
            # Imported here: the configuration builds every layer's settings (pydantic),
            # which `--help`, `--version` and a search handed to `serve` never need.
            from signaldesk.pipeline.config import resolve_workspace

            self._workspace = resolve_workspace(self.vault_option, self.config_option)
        return self._workspace

    def search_setup(self) -> SearchSetup:
        """The vault and the settings a search needs: saved by an earlier search when the
        config has not changed since (``pipeline/config_snapshot.py``, no pydantic), else
        from the workspace (the config loaded and validated), saved for the next one."""
        from signaldesk.pipeline.config_snapshot import SearchSetup, read_snapshot, write_snapshot

        if self._workspace is None:
            saved = read_snapshot(self.vault_option, self.config_option)
            if saved is not None:
                return saved
        workspace = self.workspace()
        write_snapshot(workspace)
        return SearchSetup(workspace.vault, workspace.config.index, workspace.config.search)
