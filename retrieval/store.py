"""Opening the index database: the right SQLite, its extensions, its pragmas, its schema.

The machine's default Python (and macOS's) often cannot load SQLite extensions.
sqlean-py ships an SQLite that can, so it is used whenever the standard module
cannot load extensions or is too old for contentless-delete FTS5 (3.43).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from signaldesk.faults import (
    cannot_write_in,
    is_corruption_error,
    is_disk_full_error,
    is_read_only_error,
)
from signaldesk.retrieval.errors import IndexUnavailableError, StoreError
from signaldesk.retrieval.generations import read_pointer
from signaldesk.retrieval.schema import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    from signaldesk.retrieval.settings import IndexSettings

__all__ = [
    "BUSY_TIMEOUT_MS",
    "PAGE_SIZE",
    "Connection",
    "Cursor",
    "SqliteCapabilities",
    "capabilities",
    "connect",
    "connector",
    "get_meta",
    "index_base_path",
    "index_db_path",
    "is_corruption_error",
    "is_disk_full_error",
    "is_read_only_error",
    "migrate",
    "set_meta",
    "split_statements",
    "sqlite_module",
    "store_error",
]

logger = logging.getLogger(__name__)


class Cursor(Protocol):
    """What the index code reads from a cursor (``sqlite3`` or ``sqlean``, the same API)."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...

    @property
    def rowcount(self) -> int: ...


class Connection(Protocol):
    """A connection to the index, as :func:`connect` returns it: the standard library's
    ``sqlite3`` or sqlean-py's, which share this API (the module is chosen at run time)."""

    isolation_level: str | None

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Any = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Cursor: ...

    def commit(self) -> None: ...

    def close(self) -> None: ...


_MIN_SQLITE = (3, 43, 0)
BUSY_TIMEOUT_MS = 5000
PAGE_SIZE = 16384
# How much of an index file a reader maps (a limit, not an allocation: only the pages a
# search reads are touched; 1 GiB covers an index of ~450k notes).
READER_MMAP_BYTES = 1 << 30


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
    module: ModuleType = sqlean
    return module


def index_base_path(vault: Path, settings: IndexSettings) -> Path:
    """The configured index path of ``vault`` (``settings.db_path``, vault-relative unless
    absolute): the first generation's file, and the name the pointer and the writer
    lock are derived from (see :mod:`retrieval.generations`)."""
    path = Path(settings.db_path).expanduser()
    return path if path.is_absolute() else vault / path


def index_db_path(vault: Path, settings: IndexSettings) -> Path:
    """The database file of ``vault``'s live index generation (it may not exist yet).

    A full rebuild writes a new file and swaps it in, so this is not always
    :func:`index_base_path`. A reader that keeps connections open should take a
    :class:`~retrieval.generations.ReaderLease` instead of calling this.

    :raises StoreError: the generation pointer is unreadable.
    """
    return read_pointer(index_base_path(vault, settings))


def _load_vec(conn: Any) -> str | None:  # the module's own connection type
    """Load sqlite-vec; return the reason it failed, or ``None``."""
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except Exception as exc:  # any failure here means "no vectors", never a crash
        return f"{type(exc).__name__}: {exc}"
    return None


def connect(path: Path, readonly: bool = False) -> Connection:
    """A configured synchronous connection (WAL, busy timeout, sqlite-vec when loadable).

    ``readonly`` connections only read, and never create a file: a reader racing
    a writer that removes an old index generation must fail to open it rather
    than leave an empty database under that name.

    :raises IndexUnavailableError: ``readonly`` and the database does not exist.
    """
    module = sqlite_module()
    if readonly and not path.exists():
        raise IndexUnavailableError(
            f"no index at {path}", hint="run `signaldesk index` to build it"
        )
    if readonly:
        conn = _open_reader(module, path)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = module.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    if readonly:
        # Trigger: a keyword list walks every doclist of its phrases, twice or three
        # times a search. Why: through the file, SQLite copies each page it reads from
        # the OS cache into its own 2 MB cache (a system call a page); mapped, it reads
        # the pages in place. Outcome: BM25-only searches 6-10 % faster, hybrid 4-6 %
        # (issue 15). Readers only: they never write through the mapping.
        conn.execute(f"PRAGMA mmap_size = {READER_MMAP_BYTES}")
    else:
        # Only takes effect on a new, empty file (it must precede WAL). Chunk rows
        # are 0.5-4 KB; in 4 KB pages a fifth of the chunks table was slack, in
        # 16 KB pages under 5% (measured on the 45k-note corpus, bench/scale.py).
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    error = _load_vec(conn)
    if error:
        logger.warning("sqlite-vec unavailable, vector search disabled: %s", error)
    connection: Connection = conn
    return connection


def store_error(
    exc: BaseException,
    action: str,
    path: Path,
    *,
    kept: bool = False,
    rolled_back: bool = False,
) -> StoreError:
    """A :class:`StoreError` a person can act on for a failed database or file operation.

    :param kept: a rebuild failed and the previous index is kept.
    :param rolled_back: an incremental run failed; its transaction was rolled back.
    """
    if kept:
        after = "; the previous index is kept and still answers searches"
    elif rolled_back:
        after = "; the transaction in flight was rolled back, the index is consistent"
    else:
        after = ""
    again = "`signaldesk index --full`" if kept else "`signaldesk index`"
    if is_disk_full_error(exc):
        return StoreError(
            f"{action}: the disk is full or a file size limit (ulimit -f) was reached "
            f"({exc}){after}",
            hint=f"free space on the disk holding {path.parent}, then run {again} again",
        )
    if is_read_only_error(exc):
        return StoreError(
            f"{action}: {path.parent} cannot be written ({exc}){after}",
            hint="make the vault's .signaldesk folder writable, or point `[index] db_path` "
            "at a writable place",
        )
    return StoreError(f"{action}: {exc}{after}")


def _open_reader(module: ModuleType, path: Path) -> Any:
    """A reading connection that never creates the file.

    ``mode=rw`` rather than ``ro``: a WAL reader must create or write the ``-shm``
    file. Where it cannot (a read-only state folder or file system), the file is
    opened ``immutable``: nobody can write there either, so it cannot change while
    it is read, and searching a read-only vault still works.
    """
    uri = path.absolute().as_uri()
    timeout = BUSY_TIMEOUT_MS / 1000
    try:
        conn = module.connect(f"{uri}?mode=rw", uri=True, timeout=timeout, check_same_thread=False)
    except module.OperationalError as exc:
        if not path.exists():
            raise IndexUnavailableError(
                f"no index at {path}", hint="run `signaldesk index` to build it"
            ) from exc
        if not is_read_only_error(exc) and "unable to open" not in str(exc):
            raise
        conn = None
    if conn is not None:
        try:
            conn.execute("PRAGMA schema_version").fetchone()
            return conn
        except module.DatabaseError as exc:
            # On a read-only file system the open succeeds and the first read fails,
            # with "unable to open database file" (no -shm can be made beside it).
            read_only = is_read_only_error(exc) or (
                "unable to open" in str(exc) and cannot_write_in(path.parent)
            )
            if not read_only:
                return conn  # a damaged file: the caller's first query says so
            conn.close()
    logger.info("%s cannot be written here; reading it as an immutable file", path)
    return module.connect(
        f"{uri}?mode=ro&immutable=1", uri=True, timeout=timeout, check_same_thread=False
    )


def connector(path: Path, *, readonly: bool = False) -> Callable[[], Any]:
    """A zero-argument factory for :class:`aiosqlite.Connection` (it accepts any connector)."""
    return lambda: connect(path, readonly=readonly)


def capabilities(conn: Connection) -> SqliteCapabilities:
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


def migrate(conn: Connection) -> int:
    """Bring the schema to :data:`SCHEMA_VERSION`, one explicit step at a time.

    Each step runs in an immediate (write-locked) transaction and re-reads the
    version inside it, so two processes opening an old database at once cannot
    both apply the same step.

    :returns: the version the database was at before.
    :raises StoreError: the database is newer than this signaldesk.
    """
    before = int(conn.execute("PRAGMA user_version").fetchone()[0])
    _check_not_newer(before)
    while True:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version >= SCHEMA_VERSION:
            return before
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            _check_not_newer(version)
            if version < SCHEMA_VERSION:
                for statement in split_statements(MIGRATIONS[version]):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            # SQLite may have rolled back already (a full disk does that): keep the
            # error that explains why, not "no transaction is active".
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK")
            raise


def _check_not_newer(version: int) -> None:
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"index schema v{version} is newer than this signaldesk (v{SCHEMA_VERSION})",
            hint="upgrade signaldesk, or delete the index and run `signaldesk index --full`",
        )


def split_statements(script: str) -> list[str]:
    """Split a migration script into statements (``executescript`` would commit first)."""
    module = sqlite_module()
    statements: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if module.complete_statement(current):
            if current.strip():
                statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements


def get_meta(conn: Connection, key: str) -> str | None:
    """One value of the ``meta`` table, or ``None``."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: Connection, key: str, value: str) -> None:
    """Insert or replace one ``meta`` value (inside the caller's transaction)."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
