"""The foundations every signaldesk layer shares: the error root, the item record
and the vault's layout. Nothing in here imports any of the layers."""

from __future__ import annotations

from importlib import metadata

from signaldesk.errors import SignaldeskError
from signaldesk.items import Item, SourceKind
from signaldesk.settings import SettingsModel
from signaldesk.vault import (
    ALWAYS_EXCLUDED,
    DOMAINS,
    STATE_DIR,
    VAULT_FOLDERS,
    atomic_write_bytes,
    atomic_write_text,
    sweep_temp_files,
    write_new_file,
)

__version__ = metadata.version("signaldesk")

__all__ = [
    "ALWAYS_EXCLUDED",
    "DOMAINS",
    "STATE_DIR",
    "VAULT_FOLDERS",
    "Item",
    "SettingsModel",
    "SignaldeskError",
    "SourceKind",
    "__version__",
    "atomic_write_bytes",
    "atomic_write_text",
    "sweep_temp_files",
    "write_new_file",
]
