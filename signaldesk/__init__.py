"""The foundations every signaldesk layer shares: the error root, the item record
and the vault's layout. Nothing in here imports any of the layers."""

from __future__ import annotations

import os as _os
import sys as _sys
import typing as _typing

# The vector scan runs beside SQLite's keyword lists, each on one core (retrieval/
# vector_matrix.py): OpenBLAS's default of a thread per core, read when numpy loads, would
# spin on the core the SQL needs. Set only where numpy has not loaded yet, so that what the
# variable says is what OpenBLAS runs with; a value the user set is left alone.
if "OPENBLAS_NUM_THREADS" not in _os.environ and "numpy" not in _sys.modules:
    _os.environ["OPENBLAS_NUM_THREADS"] = "1"

from signaldesk.lazy import lazy_attributes as _lazy_attributes

if _typing.TYPE_CHECKING:
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

    __version__: str

# Every name loads on first use: importing any signaldesk module runs this file first,
# and the settings base imports pydantic (~70 ms), which a one-shot search handed to a
# running `serve` never needs.
_EXPORTS = {
    "SignaldeskError": "signaldesk.errors",
    "Item": "signaldesk.items",
    "SourceKind": "signaldesk.items",
    "SettingsModel": "signaldesk.settings",
    **{
        name: "signaldesk.vault"
        for name in (
            "ALWAYS_EXCLUDED",
            "DOMAINS",
            "STATE_DIR",
            "VAULT_FOLDERS",
            "atomic_write_bytes",
            "atomic_write_text",
            "sweep_temp_files",
            "write_new_file",
        )
    },
}
_exported = _lazy_attributes(__name__, _EXPORTS)


def __getattr__(name: str) -> _typing.Any:
    # ``__version__`` is looked up on first use: importlib.metadata costs ~30-70 ms
    # at every start, which a one-shot `signaldesk search` should not pay.
    if name == "__version__":
        from importlib import metadata

        version = metadata.version("signaldesk")
        globals()["__version__"] = version
        return version
    return _exported(name)


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
