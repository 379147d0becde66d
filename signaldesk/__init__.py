"""The foundations every signaldesk layer shares: the error root, the item record
and the vault's layout. Nothing in here imports any of the layers."""

from __future__ import annotations

import typing as _typing

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

if _typing.TYPE_CHECKING:
    __version__: str


def __getattr__(name: str) -> _typing.Any:
    # ``__version__`` is looked up on first use: importlib.metadata costs ~30-70 ms
    # at every start, which a one-shot `signaldesk search` should not pay.
    if name == "__version__":
        from importlib import metadata

        version = metadata.version("signaldesk")
        globals()["__version__"] = version
        return version
    raise AttributeError(f"module 'signaldesk' has no attribute {name!r}")


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
