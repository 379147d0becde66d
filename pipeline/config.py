"""The one TOML configuration file: loading it, resolving the vault, writing the
commented default.

Each layer owns its section's model; this module only composes them, so a
setting is declared (with its help text) exactly once, next to the code that
uses it.
"""

from __future__ import annotations

import difflib
import shlex
import textwrap
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from signaldesk.errors import SignaldeskError
from signaldesk.mcp_server.settings import McpSettings
from signaldesk.pipeline.config_location import (
    CONFIG_FILENAME,
    ENV_CONFIG,
    ENV_VAULT,
    ConfigStamp,
    config_stamp,
    locate,
)
from signaldesk.pipeline.settings import (
    CaptainsLogSettings,
    PipelineSettings,
    ReportSettings,
    ScheduleSettings,
    TriageSettings,
    VaultSettings,
)
from signaldesk.postgres import PostgresSettings
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.scoring.settings import ScoringSettings
from signaldesk.settings import SettingsModel
from signaldesk.sources.settings import (
    ClipperSettings,
    HttpSettings,
    NewsletterSettings,
    RssSettings,
    ToolOutputSettings,
)
from signaldesk.vault import STATE_DIR, SignalLayout

__all__ = [
    "CONFIG_FILENAME",
    "ENV_CONFIG",
    "ENV_VAULT",
    "Config",
    "ConfigError",
    "Workspace",
    "load_config",
    "render_default_config",
    "resolve_workspace",
]


class ConfigError(SignaldeskError):
    """The configuration file is missing, unreadable or invalid."""


class Config(SettingsModel):
    """Everything signaldesk can be told, one section per TOML table."""

    vault: VaultSettings = Field(default_factory=VaultSettings, description="The vault.")
    index: IndexSettings = Field(default_factory=IndexSettings, description="The search index.")
    search: SearchSettings = Field(
        default_factory=SearchSettings, description="How search results are ranked."
    )
    http: HttpSettings = Field(default_factory=HttpSettings, description="Fetching from the web.")
    rss: RssSettings = Field(default_factory=RssSettings, description="Feed polling.")
    clipper: ClipperSettings = Field(default_factory=ClipperSettings, description="Web Clipper.")
    newsletter: NewsletterSettings = Field(
        default_factory=NewsletterSettings, description="E-mail newsletters."
    )
    tool_output: ToolOutputSettings = Field(
        default_factory=ToolOutputSettings, description="Captured AI tool output."
    )
    scoring: ScoringSettings = Field(
        default_factory=ScoringSettings, description="Scoring and routing."
    )
    pipeline: PipelineSettings = Field(
        default_factory=PipelineSettings, description="The intake pipeline."
    )
    triage: TriageSettings = Field(
        default_factory=TriageSettings, description="Triage: filing signal notes."
    )
    mcp: McpSettings = Field(default_factory=McpSettings, description="The MCP server.")
    captains_log: CaptainsLogSettings = Field(
        default_factory=CaptainsLogSettings, description="The daily captain's log."
    )
    schedule: ScheduleSettings = Field(
        default_factory=ScheduleSettings, description="What `signaldesk serve` runs and when."
    )
    report: ReportSettings = Field(
        default_factory=ReportSettings, description="The daily triage report."
    )
    postgres: PostgresSettings = Field(
        default_factory=PostgresSettings,
        description="Team mode: the shared PostgreSQL database (a backend set to `postgres`).",
    )

    @property
    def layout(self) -> SignalLayout:
        """Where filed signals and triage reports are, for readers such as the MCP server."""
        return SignalLayout(signals=self.triage.signals_folder, report_path=self.report.path)


@dataclass(frozen=True, slots=True)
class Workspace:
    """A resolved vault and the configuration that applies to it."""

    vault: Path
    config: Config
    config_path: Path | None
    config_stamp: ConfigStamp | None = None
    """The config file's (mtime_ns, size) when it was read (``None``: not known)."""

    def resolve(self, relative: str) -> Path:
        """A configured path: absolute as given, otherwise relative to the vault root."""
        path = Path(relative).expanduser()
        return path if path.is_absolute() else self.vault / path

    @property
    def state_dir(self) -> Path:
        return self.vault / STATE_DIR

    @property
    def vault_name(self) -> str:
        """This vault's name in a shared team database: `[vault] name`, else its folder's."""
        return self.config.vault.name or self.vault.name


def load_config(path: Path | None) -> Config:
    """Read and validate a config file; ``None`` gives the defaults.

    :raises ConfigError: the file cannot be read, is not TOML, or has an invalid value.
    """
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"config file not found: {path}", hint="run `signaldesk init`") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        problems = [_problem(err) for err in exc.errors()]
        raise ConfigError(
            f"{len(problems)} invalid setting(s) in {path}:\n" + "\n".join(problems),
            hint="fix or delete those lines (a deleted line is back to its default); "
            "every setting is listed with its help in the file `signaldesk init` writes",
        ) from exc


def _problem(err: Mapping[str, Any]) -> str:
    """One line for one of pydantic's errors: where, what was given, what is wrong."""
    loc = tuple(err["loc"])
    where = ".".join(str(part) for part in loc)
    if err["type"] == "extra_forbidden":
        name = str(loc[-1])
        close = difflib.get_close_matches(name, _known_names(loc[:-1]), n=1)
        if close:
            return f"  {where}: not a setting (did you mean {close[0]}?)"
        # `threshold` under [triage] is a [scoring] setting: say where the closest one is.
        homes: dict[str, list[str]] = {}
        for section in Config.model_fields if len(loc) == 2 else ():
            for known in _known_names((section,)):
                homes.setdefault(known, []).append(f"{section}.{known}")
        best = difflib.get_close_matches(name, list(homes), n=1)
        also = f" (did you mean {' or '.join(homes[best[0]][:2])}?)" if best else ""
        return f"  {where}: not a setting{also}"
    given = err.get("input")
    shown = f" = {given!r}" if isinstance(given, str | int | float | bool) else ""
    return f"  {where}{shown}: {err['msg']}"


def _known_names(loc: tuple[Any, ...]) -> list[str]:
    """The setting (or section) names at ``loc`` in :class:`Config` (empty: not a model)."""
    model: Any = Config
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        model = field.annotation if field is not None else None
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
    return list(model.model_fields)


def resolve_workspace(
    vault: Path | None = None,
    config_path: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Workspace:
    """Find the vault and its config.

    The vault comes from ``vault`` (``--vault``), then ``SIGNALDESK_VAULT``, then the
    config's ``vault.path``. The config comes from ``config_path`` (``--config``),
    then ``SIGNALDESK_CONFIG``, then ``<vault>/signaldesk.toml`` when it exists.

    :raises ConfigError: no vault could be found, or the config is invalid.
    """
    vault, config_path = locate(vault, config_path, environ)
    # Stamped before it is read: an edit while it is read makes the stamp stale, never
    # the other way round (a running serve compares it with the file's, issue 15).
    stamp = config_stamp(config_path)
    config = load_config(config_path)
    if vault is None:
        raise ConfigError(
            "no vault given",
            hint="pass --vault PATH, set SIGNALDESK_VAULT, or run `signaldesk init PATH`",
        )
    vault = vault.expanduser().resolve()
    if not vault.is_dir():
        raise ConfigError(
            f"vault folder does not exist: {vault}",
            hint=f"run `signaldesk init {shlex.quote(str(vault))}`",
        )
    return Workspace(vault=vault, config=config, config_path=config_path, config_stamp=stamp)


def render_default_config(overrides: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The commented default config file, generated from the settings models.

    Every setting appears with its help text and default, so the file documents
    itself and cannot drift from the code. ``overrides`` sets values per section
    (``{"vault": {"path": "/x"}}``).
    """
    overrides = overrides or {}
    lines = [
        "# signaldesk configuration.",
        "# Every setting is listed with its default; delete a line to go back to the default.",
        "",
    ]
    for section, field in Config.model_fields.items():
        model = field.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        lines.append(f"# {field.description}")
        lines.append(f"[{section}]")
        defaults = model()
        section_overrides = overrides.get(section, {})
        for name, sub in model.model_fields.items():
            for text_line in textwrap.wrap(sub.description or "", width=86):
                lines.append(f"# {text_line}")
            value = section_overrides.get(name, getattr(defaults, name))
            rendered = _toml_value(value)
            if rendered is None:
                lines.append(f"# {name} =")
            elif name in section_overrides:
                lines.append(f"{name} = {rendered}")
            else:
                lines.append(f"# {name} = {rendered}")
        lines.append("")
    return "\n".join(lines)


def _toml_value(value: Any) -> str | None:
    """Render a default as TOML; ``None`` for "not set" (TOML has no null)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        rendered = [_toml_value(v) for v in value]
        return "[" + ", ".join(r for r in rendered if r is not None) + "]"
    if isinstance(value, dict):
        items = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items() if v is not None]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    raise TypeError(f"cannot render {type(value).__name__} as TOML")


def _toml_key(key: str) -> str:
    return key if key.replace("-", "").replace("_", "").isalnum() else _toml_value(key) or '""'
