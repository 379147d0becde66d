"""The settings a one-shot search needs, saved from the validated config and read back
without pydantic.

Trigger: `signaldesk search QUERY --json` runs from editor hooks and agents, and its
whole process is their latency; validating the configuration imports pydantic and
builds every layer's settings models, ~0.1 s of a ~0.3 s search (issue 15), to read
the two sections a search uses. Why it may: those sections are the validated models'
values, and they cannot change while the config file, the code that declares them and
the vault stay the same. Outcome: when a search loads the full configuration it writes
the ``[index]`` and ``[search]`` sections, as the models dumped them, to
``<vault>/.signaldesk/search-settings.json``, keyed by the config file's path and
(mtime_ns, size), the package version and the settings module's own stamp; the next
search whose key matches reads them back as read-only attribute views. Anything else (no
snapshot, another key, an unreadable or foreign file, a team backend) loads and
validates the config as before, so an invalid config is reported exactly as without
a snapshot: one is written only after the whole config validated.

The values are the models' serialisation, not a second list of settings: the view has
the attributes the model had, with the values it had (a round trip is checked before a
snapshot is written; a value JSON cannot carry back equal means no snapshot).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from signaldesk._version import __version__
from signaldesk.pipeline.config_location import ConfigStamp, config_stamp, locate
from signaldesk.vault import STATE_DIR

if TYPE_CHECKING:
    from pydantic import BaseModel

    from signaldesk.pipeline.config import Workspace
    from signaldesk.retrieval.settings import IndexSettings, SearchSettings

__all__ = ["SNAPSHOT_NAME", "SearchSetup", "SettingsView", "read_snapshot", "write_snapshot"]

logger = logging.getLogger(__name__)

SNAPSHOT_NAME = "search-settings.json"
_FORMAT = 1


class SettingsView:
    """A settings section's values, read-only, read as the model's attributes are.

    Sequences come back as tuples (the models' sequence fields are tuples, and a JSON
    array loads as a list); equal and hashed by its values, as a frozen model is.
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_values", {k: _frozen(v) for k, v in values.items()})

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"settings snapshot has no setting {name!r}") from None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("settings are read-only")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SettingsView) and self._values == other._values

    def __hash__(self) -> int:
        return hash(tuple(self._values.items()))

    def __repr__(self) -> str:
        return f"SettingsView({self._values!r})"


def _frozen(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


@dataclass(frozen=True, slots=True)
class SearchSetup:
    """What a search needs from the workspace: the vault and two settings sections
    (the validated models, or their :class:`SettingsView` from a snapshot)."""

    vault: Path
    index: IndexSettings
    search: SearchSettings


def _settings_stamp() -> ConfigStamp | None:
    """The stamp of the module that declares the two sections: an edited model (a field
    added, a default changed) without a new version makes an old snapshot stale."""
    import signaldesk.retrieval

    return config_stamp(Path(signaldesk.retrieval.__file__).with_name("settings.py"))


def _key(vault: Path, config: Path | None, stamp: ConfigStamp | None) -> dict[str, Any]:
    settings = _settings_stamp()
    return {
        "format": _FORMAT,
        "version": __version__,
        "settings_module": list(settings) if settings is not None else None,
        "vault": str(vault),
        "config": os.path.realpath(config) if config is not None else None,
        "config_stamp": list(stamp) if stamp is not None else None,
    }


def read_snapshot(
    vault_option: Path | None,
    config_option: Path | None,
    environ: Mapping[str, str] | None = None,
) -> SearchSetup | None:
    """The search settings saved for this vault and config, ``None`` when there are none
    that still apply (the caller then loads the config, which says what is wrong)."""
    vault, config = locate(vault_option, config_option, environ)
    if vault is None:
        return None
    vault = vault.expanduser().resolve()
    stamp = config_stamp(config)
    if config is not None and stamp is None:
        return None  # a config that cannot be read: loading it says why
    try:
        data = json.loads((vault / STATE_DIR / SNAPSHOT_NAME).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != _key(vault, config, stamp):
        return None
    index, search = data.get("index"), data.get("search")
    if not (isinstance(index, dict) and isinstance(search, dict)):
        return None
    return SearchSetup(
        vault,
        cast("IndexSettings", SettingsView(index)),
        cast("SearchSettings", SettingsView(search)),
    )


def write_snapshot(workspace: Workspace) -> None:
    """Save ``workspace``'s search settings for the next search (never raises: without a
    snapshot a search loads the config, as it always did)."""
    config = workspace.config
    if config.index.backend != "sqlite":
        return  # the team backend needs `[postgres]` too: it loads the whole config
    state = workspace.state_dir
    if not state.is_dir():
        return  # no index either: nothing to search, and the vault is not ours to fill
    sections = {"index": _dump(config.index), "search": _dump(config.search)}
    if any(section is None for section in sections.values()):
        return
    data = {
        "key": _key(workspace.vault, workspace.config_path, workspace.config_stamp),
        **sections,
    }
    from signaldesk.vault import atomic_write_text

    try:
        atomic_write_text(state / SNAPSHOT_NAME, json.dumps(data, indent=1) + "\n")
    except OSError as exc:  # a read-only vault: searches load the config each time
        logger.debug("search settings not saved: %s", exc)


def _dump(model: BaseModel) -> dict[str, Any] | None:
    """``model``'s values as JSON, ``None`` when reading them back would not give every
    field's value again (equal and of the same type)."""
    values: dict[str, Any] = model.model_dump(mode="json")
    view = SettingsView(json.loads(json.dumps(values)))
    for name in type(model).model_fields:
        given, back = getattr(model, name), getattr(view, name, None)
        if type(given) is not type(back) or given != back:
            return None
    return values
