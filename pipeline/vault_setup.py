"""Creating a vault's folder convention, its `.indexignore` and its config."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from signaldesk.pipeline.config import CONFIG_FILENAME, Config, render_default_config
from signaldesk.vault import DOMAINS, VAULT_FOLDERS, atomic_write_text

DEFAULT_INDEXIGNORE = """\
# Paths matching these patterns (gitignore syntax) are never chunked, embedded or
# returned by search. .obsidian/, 07-templates/, 08-attachments/, .git/, .trash/
# and .signaldesk/ are always excluded and need no line here.
#
# Examples:
# private/
# **/*.secret.md
# 04-archive/old-journal/
"""


@dataclass
class InitReport:
    """What `init` created; existing files are listed as kept, never overwritten."""

    vault: Path
    created: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def init_vault(vault: Path) -> InitReport:
    """Create the folder convention, the drop folders, `.indexignore` and `signaldesk.toml`.

    Safe to run on an existing vault: folders are added, files that exist are kept.
    """
    vault = vault.expanduser().resolve()
    report = InitReport(vault=vault)
    vault.mkdir(parents=True, exist_ok=True)
    defaults = Config()
    drop_folders = (
        defaults.clipper.folder,
        defaults.newsletter.drop_folder,
        defaults.tool_output.drop_folder,
    )
    folders = [*VAULT_FOLDERS, *(f"05-signals/{domain}" for domain in DOMAINS), *drop_folders]
    for folder in folders:
        path = vault / folder
        if path.is_dir():
            report.kept.append(folder + "/")
        else:
            path.mkdir(parents=True)
            report.created.append(folder + "/")
    files = {
        ".indexignore": DEFAULT_INDEXIGNORE,
        CONFIG_FILENAME: render_default_config({"vault": {"path": str(vault)}}),
    }
    for name, text in files.items():
        path = vault / name
        if path.exists():
            report.kept.append(name)
        else:
            atomic_write_text(path, text)
            report.created.append(name)
    return report
