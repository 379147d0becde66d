"""A PostgreSQL with pgvector for the benchmarks: ``--pg-dsn``, else a pgserver in a folder.

The benchmarks that compare the backends (``bench.quality --backend postgres``,
``bench.scale --backend postgres``) start the same bundled server as the tests
(tests/postgres_server.py) in ``/tmp/pgindex`` unless given a DSN, and stop it at the end.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from signaldesk.postgres import PostgresSettings

__all__ = ["DEFAULT_FOLDER", "bench_database"]

DEFAULT_FOLDER = Path("/tmp/pgindex")


@contextlib.contextmanager
def bench_database(
    dsn: str | None, name: str, folder: Path = DEFAULT_FOLDER, *, fresh: bool = True
) -> Iterator[PostgresSettings]:
    """Settings for database ``name`` (dropped and re-created when ``fresh``) with pgvector."""
    import psycopg

    from tests.postgres_server import start_server

    server = None
    if dsn:
        admin_uri, database_dsn = dsn, None
    else:
        folder.mkdir(parents=True, exist_ok=True)
        started = start_server(folder)
        if isinstance(started, str):
            raise SystemExit(started)
        server = started
        admin_uri, database_dsn = server.uri, server.dsn(name)
    try:
        with psycopg.connect(admin_uri, autocommit=True) as admin:
            exists = admin.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (name,)
            ).fetchone()
            if fresh and exists:
                admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            if fresh or not exists:
                admin.execute(f'CREATE DATABASE "{name}"')
        target = database_dsn or admin_uri
        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield PostgresSettings(dsn=target)
    finally:
        if server is not None:
            server.stop()
