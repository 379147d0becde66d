"""A real PostgreSQL server with pgvector for the team-mode tests, started by the suite.

The ``pgserver`` wheel bundles PostgreSQL and the pgvector extension; one server runs per
test session in a temporary folder (a Unix socket, no TCP port) and each test gets a
database of its own. Without pgserver or psycopg, or when the server cannot start, the
PostgreSQL tests skip with the reason and the SQLite suite is unaffected.
"""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from signaldesk.postgres import PostgresSettings

__all__ = ["PostgresServer", "start_server"]


class PostgresServer:
    """One running server; :meth:`database` makes a fresh database on it."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        # postgresql://postgres:@/postgres?host=/tmp/... : the superuser over the socket.
        self.uri: str = handle.get_uri()

    def dsn(self, database: str) -> str:
        return self.uri.replace("/postgres?", f"/{database}?", 1)

    @contextmanager
    def database(self) -> Iterator[PostgresSettings]:
        """A new empty database with pgvector installed, dropped afterwards."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.uri, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        with psycopg.connect(self.dsn(name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        try:
            yield PostgresSettings(dsn=self.dsn(name))
        finally:
            with psycopg.connect(self.uri, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        self._handle.cleanup()


def start_server(folder: Path) -> PostgresServer | str:
    """A server in ``folder``, or the reason none can be started."""
    # pgserver's platformdirs warns when XDG_RUNTIME_DIR is unset (as in CI containers).
    runtime = folder / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver
            import psycopg  # noqa: F401
    except ImportError as exc:
        return f"PostgreSQL tests need pgserver and psycopg ({exc.name} is not installed)"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            handle = pgserver.get_server(folder / "pgdata", cleanup_mode="stop")
    except Exception as exc:  # the server's own start-up failure, whatever its type
        return f"cannot start a PostgreSQL server with pgserver: {exc}"
    return PostgresServer(handle)
