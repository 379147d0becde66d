"""`signaldesk doctor`: check everything search depends on, and say how to fix what fails."""

from __future__ import annotations

import dataclasses
import os
import shlex
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import click
from rich.table import Table
from rich.text import Text

from signaldesk.errors import SignaldeskError
from signaldesk.pipeline.cli._context import AppContext
from signaldesk.pipeline.cli._hints import with_vault
from signaldesk.pipeline.cli._output import print_json
from signaldesk.pipeline.config import Workspace, load_config
from signaldesk.pipeline.config_location import locate
from signaldesk.pipeline.wording import plural
from signaldesk.retrieval.embedder import Embedder, load_embedder
from signaldesk.retrieval.ignore import (
    VaultFilter,
    iter_vault_notes,
    obsidian_excluded,
    template_folders,
)
from signaldesk.retrieval.settings import IndexSettings
from signaldesk.retrieval.status import index_status
from signaldesk.retrieval.store import capabilities, connect, get_meta, index_db_path, sqlite_module

Outcome = Literal["ok", "warn", "fail"]
# Also pyproject's requires-python; checked here because an older interpreter
# can still reach this code through an existing install.
_MIN_PYTHON = (3, 11)
_MARK = {"ok": "[green]✓[/]", "warn": "[yellow]![/]", "fail": "[red]✗[/]"}


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the doctor's table. ``fail`` on an essential check means exit code 1."""

    name: str
    outcome: Outcome
    detail: str
    fix: str = ""


def run_checks(app: AppContext) -> list[Check]:
    """Every check, in the order a person would fix them."""
    checks = [_python()]
    checks.extend(_sqlite())
    workspace: Workspace | None = None
    try:
        workspace = app.workspace()
        source = str(workspace.config_path) if workspace.config_path else "built-in defaults"
        checks.append(_config(workspace, source))
    except SignaldeskError:
        checks.append(_config_alone(app))
    config_ok = checks[-1].outcome == "ok"
    settings = workspace.config.index if workspace else IndexSettings()
    embedder, model_check = _model(settings)
    checks.append(model_check)
    if workspace is not None:
        checks.append(_vault(workspace))
        team = _postgres_components(workspace)
        if team:
            checks.extend(_postgres(workspace, team))
        if settings.backend == "sqlite":
            checks.append(_index(workspace, settings, embedder))
    else:
        checks.append(_vault_alone(app, config_ok=config_ok))
    return checks


def _config_alone(app: AppContext) -> Check:
    """The config file's own check when the workspace did not resolve: a vault that
    is missing is the vault's line, not the config's."""
    _, config_path = locate(app.vault_option, app.config_option)
    source = str(config_path) if config_path else "built-in defaults"
    try:
        load_config(config_path)
    except SignaldeskError as exc:
        return Check("config", "fail", exc.message, exc.hint or "fix the config file")
    return Check("config", "ok", f"valid ({source})")


def _vault_alone(app: AppContext, *, config_ok: bool) -> Check:
    """The vault's line when the workspace did not resolve: which vault was meant and
    what is wrong with it, or that it waits for the config to load."""
    vault, _ = locate(app.vault_option, app.config_option)
    if vault is None:
        return Check(
            "vault",
            "fail",
            "no vault given",
            "pass --vault PATH, set SIGNALDESK_VAULT, or run `signaldesk init PATH`",
        )
    vault = vault.expanduser().resolve()
    if vault.is_file():
        return Check(
            "vault",
            "fail",
            f"{vault} is a file, not a folder",
            "pass the vault's folder (the one that holds the notes) to --vault or SIGNALDESK_VAULT",
        )
    if not vault.is_dir():
        return Check(
            "vault",
            "fail",
            f"vault folder does not exist: {vault}",
            f"run `signaldesk init {shlex.quote(str(vault))}`",
        )
    # Here the config is what failed (an unreadable vault would have said so above).
    detail = f"{vault}; its folders are checked once the config loads"
    return Check("vault", "warn" if not config_ok else "ok", detail, "fix the config first")


def _config(workspace: Workspace, source: str) -> Check:
    """The config loaded; its time zone, which only serve, report and log resolve, too."""
    # Imported here: the scheduler module loads APScheduler, which nothing else here needs.
    from signaldesk.pipeline.service.scheduler import ScheduleError, resolve_timezone

    try:
        resolve_timezone(workspace.config.schedule.timezone)
    except ScheduleError as exc:
        return Check(
            "config",
            "fail",
            f"[schedule] timezone: {exc.message} ({source}); serve, report and log refuse it",
            'set [schedule] timezone to an IANA name such as "Europe/Madrid", or delete '
            "the line for the machine's zone",
        )
    return Check("config", "ok", f"valid ({source})")


def _python() -> Check:
    version = ".".join(str(v) for v in sys.version_info[:3])
    if sys.version_info[:2] >= _MIN_PYTHON:
        return Check("python", "ok", f"{version} ({sys.executable})")
    return Check(
        "python", "fail", f"{version}: signaldesk needs 3.11+", "install Python 3.11 or newer"
    )


def _sqlite() -> list[Check]:
    can_load = hasattr(sqlite3.Connection, "enable_load_extension")
    stdlib = f"stdlib sqlite3 {sqlite3.sqlite_version}, " + (
        "can load extensions" if can_load else "cannot load extensions"
    )
    try:
        module = sqlite_module()
        with tempfile.TemporaryDirectory(prefix="signaldesk-doctor-") as tmp:
            conn = connect(Path(tmp) / "probe.db")
            try:
                caps = capabilities(conn)
            finally:
                conn.close()
    except Exception as exc:
        return [
            Check("sqlite", "fail", f"{stdlib}; no usable SQLite: {exc}", "pip install sqlean-py")
        ]
    used = "stdlib sqlite3" if module is sqlite3 else f"sqlean-py ({module.__name__})"
    checks = [Check("sqlite", "ok", f"{stdlib}; using {used}, SQLite {caps.sqlite_version}")]
    checks.append(
        Check("fts5", "ok", "available")
        if caps.fts5
        else Check(
            "fts5",
            "fail",
            "this SQLite has no FTS5: keyword search is off",
            "pip install sqlean-py (its SQLite includes FTS5)",
        )
    )
    checks.append(
        Check("sqlite-vec", "ok", f"{caps.vec_version} loaded")
        if caps.vec
        else Check(
            "sqlite-vec",
            "warn",
            f"cannot load ({caps.vec_error}): search falls back to BM25 only",
            "pip install sqlite-vec sqlean-py",
        )
    )
    return checks


def _model(settings: IndexSettings) -> tuple[Embedder | None, Check]:
    try:
        embedder = load_embedder(settings)
        embedder.encode(["doctor"])
    except Exception as exc:
        message = exc.message if isinstance(exc, SignaldeskError) else str(exc)
        return None, Check(
            "model",
            "warn",
            f"no embedding model loads ({message}): search falls back to BM25 only",
            "reinstall signaldesk (it ships a model) or set [index] model to a Model2Vec folder",
        )
    detail = f"{embedder.name}, {embedder.dimensions} dims"
    if embedder.name not in (settings.model, str(Path(settings.model).expanduser().resolve())):
        detail += f" ({settings.model} is not available offline; using the bundled model)"
    return embedder, Check("model", "ok", detail)


def _vault(workspace: Workspace) -> Check:
    """The vault is a writable folder; where its inbox, signals and daily notes go."""
    vault = workspace.vault
    config = workspace.config
    if not os.access(vault, os.W_OK):
        return Check("vault", "fail", f"{vault} is not writable", f"chmod u+w {vault}")
    layout = {
        "inbox": config.vault.inbox_folder,
        "signals": config.triage.signals_folder,
        "daily notes": str(Path(config.report.path).parent),
    }
    missing = [name for name, folder in layout.items() if not workspace.resolve(folder).is_dir()]
    detail = f"{vault}; " + ", ".join(f"{name} {folder}/" for name, folder in layout.items())
    if missing:
        detail += f" ({', '.join(missing)}: made when first used)"
    templates = template_folders(vault)
    if templates:
        names = ", ".join(f"{folder}/" for folder in templates)
        detail += f"; templates {names} (Obsidian's templates setting): not indexed"
    prefixes, patterns = obsidian_excluded(vault)
    if prefixes or patterns:
        shown = [*prefixes, *(f"/{p.pattern}/" for p in patterns)]
        detail += f"; {', '.join(shown)} (Obsidian's excluded files): not indexed"
    return Check("vault", "ok", detail)


def _unindexed(workspace: Workspace, settings: IndexSettings) -> tuple[int, int, int, int]:
    """``(notes in the vault, new, changed, gone)`` compared with what the index holds."""
    known: dict[str, tuple[int, int]] = {}
    conn = connect(index_db_path(workspace.vault, settings), readonly=True)
    try:
        for table in ("notes", "skipped"):
            for path, mtime_ns, size in conn.execute(f"SELECT path, mtime_ns, size FROM {table}"):
                known[str(path)] = (int(mtime_ns), int(size))
    finally:
        conn.close()
    total = new = changed = 0
    seen: set[str] = set()
    for rel, stat in iter_vault_notes(workspace.vault, VaultFilter(workspace.vault)):
        total += 1
        seen.add(rel)
        entry = known.get(rel)
        if entry is None:
            new += 1
        elif entry != (stat.st_mtime_ns, stat.st_size):
            changed += 1
    return total, new, changed, len(set(known) - seen)


def _index(workspace: Workspace, settings: IndexSettings, embedder: Embedder | None) -> Check:
    status = index_status(workspace.vault, settings)
    if not status.exists:
        return Check("index", "warn", f"no index at {status.db_path}", "signaldesk index")
    if status.notes == 0 and status.degraded:
        # `index` checks the file and rebuilds a damaged one, as the detail says; a
        # second command in the fix column (--full) only made the person choose.
        return Check("index", "fail", "; ".join(status.degraded), "signaldesk index")
    detail = (
        f"{plural(status.notes, 'note')}, {plural(status.chunks, 'chunk')}, "
        f"{plural(status.vectors, 'vector')}"
    )
    if embedder is not None and status.model:
        try:
            conn = connect(index_db_path(workspace.vault, settings), readonly=True)
            try:
                stored = get_meta(conn, "model_fingerprint")
            finally:
                conn.close()
        except Exception:
            stored = None
        if stored and stored != embedder.fingerprint:
            return Check(
                "index",
                "warn",
                f"{detail}; built with {status.model}, not the current model {embedder.name}",
                "signaldesk index  (rebuilds for the new model by itself)",
            )
        detail += f"; model {status.model} matches"
    try:
        total, new, changed, gone = _unindexed(workspace, settings)
    except Exception as exc:  # an unreadable vault or index: say so, never crash doctor
        return Check("index", "warn", f"{detail}; cannot compare with the vault: {exc}", "")
    if new or changed or gone:
        behind = ", ".join(
            f"{n} {what}"
            for n, what in ((new, "new"), (changed, "changed"), (gone, "to remove"))
            if n
        )
        # Only removals (a note deleted, moved or now excluded): "0 of N notes not
        # indexed yet" would say nothing is wrong.
        lag = (
            f"{new + changed} of {plural(total, 'note')} not indexed yet ({behind})"
            if new or changed
            else f"{plural(gone, 'indexed note')} no longer among the vault's notes "
            "(deleted, moved or now excluded)"
        )
        return Check("index", "warn", f"{detail}; {lag}", "signaldesk index")
    if status.degraded:
        return Check("index", "warn", f"{detail}; {'; '.join(status.degraded)}", "signaldesk index")
    return Check("index", "ok", detail)


def _postgres_components(workspace: Workspace) -> dict[str, int]:
    """The components kept in the team database, each with the schema version this
    signaldesk expects."""
    config = workspace.config
    wanted: dict[str, int] = {}
    if config.index.backend == "postgres":
        from signaldesk.retrieval import pg_schema

        wanted[pg_schema.COMPONENT] = len(pg_schema.MIGRATIONS)
    if config.pipeline.ledger_backend == "postgres":
        from signaldesk.pipeline.ledger import pg_schema as ledger_schema

        wanted[ledger_schema.COMPONENT] = len(ledger_schema.MIGRATIONS)
    return wanted


def _postgres(workspace: Workspace, components: dict[str, int]) -> list[Check]:
    """Team mode: the server, pgvector, each component's schema version, this vault's index."""
    from signaldesk.postgres import PostgresError, connect, schema_version, server_info

    settings = workspace.config.postgres
    try:
        with connect(settings, autocommit=True) as conn:
            info = server_info(conn)
            versions = {name: schema_version(conn, name) for name in components}
    except PostgresError as exc:
        return [Check("postgres", "fail", exc.message, exc.hint or "")]
    except Exception as exc:  # the server answered but a query failed: say so, never crash
        return [Check("postgres", "fail", f"{settings.dsn}: {exc}", "check the server's log")]
    checks = [Check("postgres", "ok", f"PostgreSQL {info.server_version} at {settings.dsn}")]
    if info.vector_installed:
        checks.append(Check("pgvector", "ok", f"{info.vector_installed} installed"))
    elif info.vector_available:
        checks.append(
            Check(
                "pgvector",
                "warn",
                f"{info.vector_available} available, not installed in this database",
                "signaldesk index installs it (needs the CREATE privilege), or run "
                "CREATE EXTENSION vector as the database owner",
            )
        )
    else:
        checks.append(
            Check(
                "pgvector",
                "fail",
                "the server has no pgvector extension",
                "use a server with pgvector (the pgvector/pgvector:pg16 image)",
            )
        )
    for name, expected in components.items():
        found = versions[name]
        if found == expected:
            checks.append(Check(f"{name} schema", "ok", f"version {found}"))
        elif found > expected:
            checks.append(
                Check(
                    f"{name} schema",
                    "fail",
                    f"version {found}, newer than this signaldesk ({expected})",
                    "upgrade signaldesk on this machine",
                )
            )
        else:
            run = "signaldesk index" if name == "index" else "signaldesk scan"
            state = "not created yet" if found == 0 else f"version {found} of {expected}"
            checks.append(Check(f"{name} schema", "warn", state, f"{run} migrates it"))
    if "index" in components and versions.get("index"):
        checks.append(_team_index(workspace))
    return checks


def _team_index(workspace: Workspace) -> Check:
    """This vault's part of the team index."""
    from signaldesk.postgres import connect
    from signaldesk.retrieval.pg_status import read_pg_status

    name = workspace.vault_name
    settings = workspace.config.postgres
    with connect(settings, autocommit=True) as conn:
        status = read_pg_status(conn, frozenset({name}), settings.dsn)
    if not status.exists:
        return Check("index", "warn", f"vault {name!r} is not indexed yet", "signaldesk index")
    detail = (
        f"vault {name!r}: {plural(status.notes, 'note')}, {plural(status.chunks, 'chunk')}, "
        f"{plural(status.vectors, 'vector')}"
    )
    if status.degraded:
        return Check("index", "warn", f"{detail}; {'; '.join(status.degraded)}", "signaldesk index")
    return Check("index", "ok", detail)


# An index, a model or sqlite-vec that is missing degrades search; these break it.
_ESSENTIAL = {"python", "sqlite", "fts5", "config", "vault", "postgres", "pgvector"}


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@click.pass_obj
def doctor(app: AppContext, as_json: bool) -> None:
    """Check Python's SQLite, FTS5, sqlite-vec, the model, the config, the vault and the index."""
    vault = app.vault_argument
    checks = [
        dataclasses.replace(c, detail=with_vault(c.detail, vault), fix=with_vault(c.fix, vault))
        for c in run_checks(app)
    ]
    failed = any(c.outcome == "fail" and c.name in _ESSENTIAL for c in checks)
    if as_json:
        print_json({"ok": not failed, "checks": checks})
    else:
        table = Table(title="signaldesk doctor", title_justify="left")
        table.add_column("")
        table.add_column("check", style="bold")
        # Folded, never cut short with an ellipsis: a path or a command must read whole.
        table.add_column("result", overflow="fold")
        table.add_column("fix", overflow="fold")
        for check in checks:
            table.add_row(_MARK[check.outcome], check.name, Text(check.detail), Text(check.fix))
        app.console.print(table)
    if failed:
        raise SystemExit(1)  # not click's Exit, which main() would swallow (see index.py)
