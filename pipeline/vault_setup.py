"""Creating a vault's folder convention, its `.indexignore` and its config.

A new (or empty) folder gets the whole convention of SPEC section 2. A vault that
already holds a person's notes (an Obsidian vault with its own ``00 - …`` folders, say)
gets only what signaldesk needs to run: its config, ``.indexignore`` and its state
folder; the other folders are made when first used (the first filed signal, the first
daily report, the first capture), and the config can point the inbox, the signals
and the daily notes at folders the person already has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signaldesk.pipeline.config import CONFIG_FILENAME, Config, load_config, render_default_config
from signaldesk.vault import (
    DAILY_FOLDER,
    DOMAINS,
    INBOX_FOLDER,
    SIGNALS_FOLDER,
    STATE_DIR,
    VAULT_FOLDERS,
    atomic_write_text,
)

DEFAULT_INDEXIGNORE = """\
# Paths matching these patterns (gitignore syntax) are never chunked, embedded or
# returned by search. .obsidian/, 07-templates/, 08-attachments/, .git/, .trash/
# and .signaldesk/ are always excluded and need no line here, and so is the
# templates folder set in Obsidian (Templates core plugin, Templater).
#
# Examples:
# private/
# **/*.secret.md
# 04-archive/old-journal/
"""


@dataclass
class InitReport:
    """What `init` created; existing files are listed as kept, never overwritten.

    :param existing_vault: the folder already held a person's notes, so only what
        signaldesk needs was created (the rest comes when first used).
    :param layout_ignored: folders were asked for, but the config existed and was kept.
    """

    vault: Path
    created: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    existing_vault: bool = False
    layout_ignored: bool = False


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a vault keeps its inbox, its filed signals and its daily notes
    (vault-relative folders; ``None``: the convention's)."""

    inbox: str | None = None
    signals: str | None = None
    daily: str | None = None

    def overrides(self) -> dict[str, dict[str, Any]]:
        """The config settings that point signaldesk at these folders."""
        out: dict[str, dict[str, Any]] = {}
        if self.inbox:
            out["vault"] = {"inbox_folder": self.inbox}
            out["newsletter"] = {"drop_folder": f"{self.inbox}/newsletters"}
            out["tool_output"] = {"drop_folder": f"{self.inbox}/tool-output"}
        if self.signals:
            out["triage"] = {"signals_folder": self.signals}
        if self.daily:
            out["report"] = {"path": f"{self.daily}/{{date}}-triage.md"}
            out["captains_log"] = {"path": f"{self.daily}/{{date}}-captains-log.md"}
        return out


def holds_notes(vault: Path) -> bool:
    """Whether ``vault`` is already someone's vault: an ``.obsidian`` or ``.git`` folder,
    or anything at its top other than signaldesk's own files and the convention's folders."""
    if not vault.is_dir():
        return False
    own = {CONFIG_FILENAME, ".indexignore", STATE_DIR, *VAULT_FOLDERS, Config().clipper.folder}
    for entry in vault.iterdir():
        if entry.name in (".obsidian", ".git"):
            return True
        if not entry.name.startswith(".") and entry.name not in own:
            return True
    return False


def init_vault(
    vault: Path, *, layout: Layout | None = None, folders: bool | None = None
) -> InitReport:
    """Create `signaldesk.toml`, `.indexignore` and the state folder; on a new or empty
    folder also the folder convention, the domain folders and the drop folders.

    Safe to run again and on an existing vault: nothing that exists is touched.

    :param layout: folders the config should use for the inbox, signals and daily notes
        (only when the config is written now; an existing config is kept as it is).
    :param folders: create the whole convention (``True``), only what signaldesk needs
        (``False``), or decide by whether the folder already holds notes (``None``).
    """
    vault = vault.expanduser().resolve()
    layout = layout or Layout()
    existing = holds_notes(vault)
    report = InitReport(vault=vault, existing_vault=existing)
    vault.mkdir(parents=True, exist_ok=True)
    config_path = vault / CONFIG_FILENAME
    overrides: dict[str, dict[str, Any]] = {"vault": {"path": str(vault)}}
    for section, values in layout.overrides().items():
        overrides.setdefault(section, {}).update(values)
    files = {
        ".indexignore": DEFAULT_INDEXIGNORE,
        CONFIG_FILENAME: render_default_config(overrides),
    }
    config = Config.model_validate({k: v for k, v in overrides.items() if k != "vault"})
    if config_path.is_file():
        config = load_config(config_path)
        report.layout_ignored = bool(layout.overrides())
    wanted = [STATE_DIR]
    if folders or (folders is None and not existing):
        signals = config.triage.signals_folder
        # The convention's folders, with the configured ones in place of the defaults.
        configured = {
            INBOX_FOLDER: config.vault.inbox_folder,
            SIGNALS_FOLDER: signals,
            DAILY_FOLDER: config.layout.reports,
        }
        wanted += [
            *(configured.get(f, f) for f in VAULT_FOLDERS),
            *(f"{signals}/{domain}" for domain in DOMAINS),
            config.clipper.folder,
            config.newsletter.drop_folder,
            config.tool_output.drop_folder,
        ]
    for folder in dict.fromkeys(wanted):
        path = vault / folder
        if path.is_dir():
            report.kept.append(folder + "/")
        else:
            path.mkdir(parents=True)
            report.created.append(folder + "/")
    for name, text in files.items():
        path = vault / name
        if path.exists():
            report.kept.append(name)
        else:
            atomic_write_text(path, text)
            report.created.append(name)
    return report
