"""Opening the index database: the right SQLite, its extensions, its pragmas, its schema.

The machine's default Python (and macOS's) often cannot load SQLite extensions.
sqlean-py ships an SQLite that can, so it is used whenever the standard module
cannot load extensions or is too old for contentless-delete FTS5 (3.43).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import aiosqlite

from retrieval.errors import IndexUnavailableError, StoreError
from retrieval.schema import MIGRATIONS, SCHEMA_VERSION

logger = logging.getLogger(__name__)

_MIN_SQLITE = (3, 43, 0)
BUSY_TIMEOUT_MS = 5000


@dataclass(frozen=True, slots=True)
class SqliteCapabilities:
    """What the chosen SQLite can do; missing pieces turn into degraded search modes."""

    module_name: str
    sqlite_version: str
    fts5: bool
    vec: bool
    vec_version: str | None
    vec_error: str | None


def sqlite_module() -> ModuleType:
    """The ``sqlite3``-compatible module to use (the standard one, or sqlean's)."""
    can_load = hasattr(sqlite3.Connection, "enable_load_extension")
    if can_load and sqlite3.sqlite_version_info >= _MIN_SQLITE:
        return sqlite3
    try:
        import sqlean
    except ImportError as exc:  # pragma: no cover - sqlean-py is a dependency
        raise StoreError(
            "this Python's sqlite3 cannot load extensions and sqlean-py is not installed",
            hint="pip install sqlean-py",
        ) from exc
    return sqlean


def _load_vec(conn: Any) -> str | None:
    """Load sqlite-vec; return the reason it failed, or ``None``."""
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except Exception as exc:  # any failure here means "no vectors", never a crash
        return f"{type(exc).__name__}: {exc}"
    return None


def connect(path: Path, *, readonly: bool = False) -> Any:
    """A configured synchronous connection (WAL, busy timeout, sqlite-vec when loadable).

    :raises IndexUnavailableError: ``readonly`` and the database does not exist.
    """
    module = sqlite_module()
    if readonly and not path.exists():
        raise IndexUnavailableError(
            f"no index at {path}", hint="run `signaldesk index` to build it"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = module.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    if not readonly:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    error = _load_vec(conn)
    if error:
        logger.warning("sqlite-vec unavailable, vector search disabled: %s", error)
    return conn


def connector(path: Path, *, readonly: bool = False) -> Callable[[], Any]:
    """A zero-argument factory for :class:`aiosqlite.Connection` (it accepts any connector)."""
    return lambda: connect(path, readonly=readonly)


async def connect_async(path: Path, *, readonly: bool = False) -> aiosqlite.Connection:
    """An aiosqlite connection over the same configured SQLite as :func:`connect`."""
    conn = aiosqlite.Connection(connector(path, readonly=readonly), iter_chunk_size=256)
    return await conn


def capabilities(conn: Any) -> SqliteCapabilities:
    """Probe a connection for FTS5 and sqlite-vec."""
    version = conn.execute("SELECT sqlite_version()").fetchone()[0]
    try:
        conn.execute("CREATE VIRTUAL TABLE temp._probe USING fts5(x)")
        conn.execute("DROP TABLE temp._probe")
        fts5 = True
    except Exception:
        fts5 = False
    try:
        vec_version = conn.execute("SELECT vec_version()").fetchone()[0]
        vec_error = None
    except Exception as exc:
        vec_version, vec_error = None, str(exc)
    return SqliteCapabilities(
        module_name=type(conn).__module__.split(".")[0],
        sqlite_version=version,
        fts5=fts5,
        vec=vec_version is not None,
        vec_version=vec_version,
        vec_error=vec_error,
    )


def migrate(conn: Any) -> int:
    """Bring the schema to :data:`SCHEMA_VERSION`, one explicit step at a time.

    :returns: the version the database was at before.
    :raises StoreError: the database is newer than this signaldesk.
    """
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current > SCHEMA_VERSION:
        raise StoreError(
            f"index schema v{current} is newer than this signaldesk (v{SCHEMA_VERSION})",
            hint="upgrade signaldesk, or delete the index and run `signaldesk index --full`",
        )
    for version in range(current, SCHEMA_VERSION):
        conn.executescript(
            f"BEGIN; {MIGRATIONS[version]} PRAGMA user_version = {version + 1}; COMMIT;"
        )
    return int(current)


def get_meta(conn: Any, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: Any, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
