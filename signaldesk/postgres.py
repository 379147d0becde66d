"""PostgreSQL for team mode: the `[postgres]` settings, connecting, versioned migrations.

The index (``retrieval``) and the item ledger (``pipeline.ledger``) can each live in one
shared PostgreSQL database with the pgvector extension instead of the local SQLite files.
Both open their connections here, so the DSN rules and the password handling live in one
place, and both migrate through :func:`migrate`, which records one schema version per
component in ``signaldesk_schema`` (as ``PRAGMA user_version`` does for SQLite).

psycopg is an optional dependency (``pip install 'signaldesk[postgres]'``); importing this
module does not import it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from signaldesk.errors import SignaldeskError
from signaldesk.settings import SettingsModel

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "PASSWORD_ENV",
    "PostgresError",
    "PostgresSettings",
    "ServerInfo",
    "connect",
    "connect_async",
    "conninfo",
    "migrate",
    "schema_version",
    "server_info",
]

# The only place a password is read from: never the config file (it is often committed or
# shared), never a command line (visible in `ps`). libpq's own PGPASSWORD and ~/.pgpass
# work as well, since libpq reads them itself.
PASSWORD_ENV = "SIGNALDESK_PG_PASSWORD"

_INSTALL_HINT = "pip install 'signaldesk[postgres]'"
# A password written into a URL DSN (postgresql://user:secret@host) or a key/value DSN
# (password=secret).
_URL_PASSWORD = re.compile(r"^[a-z]+://[^/@:]*:[^/@]+@", re.I)
_KV_PASSWORD = re.compile(r"(?:^|\s)password\s*=", re.I)


class PostgresError(SignaldeskError):
    """The PostgreSQL server cannot be reached, lacks pgvector, or has a newer schema."""


class PostgresSettings(SettingsModel):
    """The shared PostgreSQL database of team mode (used when a backend is `postgres`)."""

    dsn: str = Field(
        "",
        description=(
            "libpq connection string or URL of the team database, without a password "
            "(for example `postgresql://signaldesk@db.internal:5432/signaldesk`). The "
            f"password comes from the environment only: {PASSWORD_ENV} (or libpq's "
            "PGPASSWORD / ~/.pgpass)."
        ),
    )
    connect_timeout: float = Field(
        10.0, gt=0, description="Seconds to wait for the server before giving up."
    )

    @field_validator("dsn")
    @classmethod
    def _no_password(cls, value: str) -> str:
        if _URL_PASSWORD.search(value) or _KV_PASSWORD.search(value):
            raise ValueError(
                f"the DSN must not contain a password; set {PASSWORD_ENV} in the environment"
            )
        return value


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What `signaldesk doctor` reports about the server."""

    server_version: str
    vector_available: str | None  # pgvector's version if the server can install it
    vector_installed: str | None  # ... and if it is installed in this database


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise PostgresError("PostgreSQL support is not installed", hint=_INSTALL_HINT) from exc
    return psycopg


def conninfo(settings: PostgresSettings) -> str:
    """The DSN with the password from the environment added (never logged or shown)."""
    if not settings.dsn:
        raise PostgresError(
            "no PostgreSQL database configured",
            hint="set [postgres] dsn in signaldesk.toml",
        )
    pg = _psycopg()
    extra: dict[str, Any] = {"connect_timeout": max(1, round(settings.connect_timeout))}
    password = os.environ.get(PASSWORD_ENV)
    if password:
        extra["password"] = password
    try:
        return str(pg.conninfo.make_conninfo(settings.dsn, **extra))
    except pg.ProgrammingError as exc:
        raise PostgresError(f"invalid [postgres] dsn: {exc}") from exc


def _connect_error(settings: PostgresSettings, exc: Exception) -> PostgresError:
    # libpq's message names the host and the reason; the DSN itself may carry a user name
    # but never a password (the validator refuses one).
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return PostgresError(
        f"cannot connect to PostgreSQL ({reason})",
        hint=f"check [postgres] dsn ({settings.dsn}) and {PASSWORD_ENV}",
    )


def connect(settings: PostgresSettings, *, autocommit: bool = False) -> psycopg.Connection[Any]:
    """A blocking connection to the team database."""
    pg = _psycopg()
    info = conninfo(settings)
    try:
        conn: psycopg.Connection[Any] = pg.connect(info, autocommit=autocommit)
    except pg.OperationalError as exc:
        raise _connect_error(settings, exc) from exc
    return conn


async def connect_async(
    settings: PostgresSettings, *, autocommit: bool = False
) -> psycopg.AsyncConnection[Any]:
    """An asyncio connection to the team database (anyio's asyncio backend)."""
    pg = _psycopg()
    info = conninfo(settings)
    try:
        conn: psycopg.AsyncConnection[Any] = await pg.AsyncConnection.connect(
            info, autocommit=autocommit
        )
    except pg.OperationalError as exc:
        raise _connect_error(settings, exc) from exc
    return conn


_SCHEMA_TABLE = """
CREATE TABLE IF NOT EXISTS signaldesk_schema (
    component text PRIMARY KEY,
    version integer NOT NULL,
    migrated_at timestamptz NOT NULL DEFAULT now()
)
"""


def schema_version(conn: psycopg.Connection[Any], component: str) -> int:
    """The component's recorded schema version (0: never migrated)."""
    exists = conn.execute("SELECT to_regclass('signaldesk_schema') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute(
        "SELECT version FROM signaldesk_schema WHERE component = %s", (component,)
    ).fetchone()
    return int(row[0]) if row else 0


def migrate(conn: psycopg.Connection[Any], component: str, migrations: Sequence[str]) -> int:
    """Bring ``component`` to ``len(migrations)``; returns the version it was at.

    ``migrations[i]`` takes the schema from version ``i`` to ``i + 1`` (SQL, several
    statements allowed) and is never edited once released: a change is a new entry. Each
    step commits with its version, so a failed step leaves the previous version intact. An
    advisory lock serialises migrators, so two machines starting at once do not both
    apply a step. A database migrated by a newer signaldesk is refused, not downgraded.
    """
    target = len(migrations)
    with conn.transaction():
        # One lock key per component (hashtext is stable across servers of one version).
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"signaldesk:{component}",))
        conn.execute(_SCHEMA_TABLE)
        before = schema_version(conn, component)
        if before > target:
            raise PostgresError(
                f"the {component} schema in PostgreSQL is version {before}, newer than this "
                f"signaldesk knows ({target})",
                hint="upgrade signaldesk on this machine",
            )
        for version in range(before, target):
            conn.execute(migrations[version])
            conn.execute(
                "INSERT INTO signaldesk_schema (component, version) VALUES (%s, %s) "
                "ON CONFLICT (component) DO UPDATE SET version = excluded.version, "
                "migrated_at = now()",
                (component, version + 1),
            )
    return before


def server_info(conn: psycopg.Connection[Any]) -> ServerInfo:
    """The server's version and whether pgvector is available / installed."""
    version = conn.execute("SHOW server_version").fetchone()
    row = conn.execute(
        "SELECT default_version, installed_version FROM pg_available_extensions "
        "WHERE name = 'vector'"
    ).fetchone()
    return ServerInfo(
        server_version=str(version[0]) if version else "unknown",
        vector_available=str(row[0]) if row and row[0] else None,
        vector_installed=str(row[1]) if row and row[1] else None,
    )
