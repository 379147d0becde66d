"""Where the vault and its config file are, found without reading the config.

Its own module, free of pydantic and the settings models, because the one-shot search
client (``pipeline/cli/_forward.py``) must find both in a few milliseconds before it
hands a search to a running `serve`; :func:`pipeline.config.resolve_workspace` asks it
too, so both find the same files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "CONFIG_FILENAME",
    "ENV_CONFIG",
    "ENV_VAULT",
    "ConfigStamp",
    "config_stamp",
    "configured_vault",
    "locate",
]

CONFIG_FILENAME = "signaldesk.toml"
ENV_VAULT = "SIGNALDESK_VAULT"
ENV_CONFIG = "SIGNALDESK_CONFIG"

ConfigStamp = tuple[int, int]
"""A config file's (mtime_ns, size): what tells an edited file from the one loaded."""


def locate(
    vault: Path | None, config_path: Path | None, environ: Mapping[str, str] | None = None
) -> tuple[Path | None, Path | None]:
    """The vault and config file as given: ``vault`` (``--vault``), else
    ``SIGNALDESK_VAULT``; ``config_path`` (``--config``), else ``SIGNALDESK_CONFIG``, else
    ``<vault>/signaldesk.toml`` when it exists; with no vault given, the config's
    ``[vault] path``. The vault is ``None`` when none of them names one."""
    env = os.environ if environ is None else environ
    if vault is None and env.get(ENV_VAULT):
        vault = Path(env[ENV_VAULT])
    if config_path is None and env.get(ENV_CONFIG):
        config_path = Path(env[ENV_CONFIG])
    if config_path is None and vault is not None and (vault / CONFIG_FILENAME).is_file():
        config_path = vault / CONFIG_FILENAME
    if vault is None and config_path is not None:
        vault = configured_vault(config_path)
    return vault, config_path


def configured_vault(path: Path) -> Path | None:
    """The config file's ``[vault] path`` as written, ``None`` when it names none or
    cannot be read (:func:`pipeline.config.load_config` then says what is wrong)."""
    import tomllib  # ~2 ms, and only for a vault named in the config alone

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    section = data.get("vault")
    value = section.get("path") if isinstance(section, dict) else None
    return Path(value) if isinstance(value, str) and value else None


def config_stamp(path: Path | None) -> ConfigStamp | None:
    """``path``'s (mtime_ns, size), ``None`` for no file (or one that cannot be read)."""
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)
