"""The shared PostgreSQL plumbing of team mode: settings, connecting, migrations."""

from __future__ import annotations

import threading

import pytest

from signaldesk.postgres import (
    PASSWORD_ENV,
    PostgresError,
    PostgresSettings,
    connect,
    conninfo,
    migrate,
    schema_version,
    server_info,
)

_STEPS = [
    "CREATE TABLE t_one (id integer PRIMARY KEY); CREATE TABLE t_two (id integer)",
    "ALTER TABLE t_two ADD COLUMN name text",
]


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://team:hunter2@db.example:5432/signaldesk",
        "host=db.example user=team password=hunter2 dbname=signaldesk",
    ],
)
def test_a_password_in_the_dsn_is_refused(dsn: str) -> None:
    with pytest.raises(ValueError, match=PASSWORD_ENV):
        PostgresSettings(dsn=dsn)


def test_the_password_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PASSWORD_ENV, "s3cret")
    info = conninfo(PostgresSettings(dsn="postgresql://team@db.example/signaldesk"))
    assert "password=s3cret" in info
    assert "host=db.example" in info


def test_no_dsn_says_what_to_set() -> None:
    with pytest.raises(PostgresError) as caught:
        conninfo(PostgresSettings())
    assert caught.value.hint == "set [postgres] dsn in signaldesk.toml"


def test_an_unreachable_server_is_one_clear_error(tmp_path: object) -> None:
    settings = PostgresSettings(dsn="postgresql://team@127.0.0.1:9/signaldesk", connect_timeout=2)
    with pytest.raises(PostgresError, match="cannot connect to PostgreSQL") as caught:
        connect(settings)
    assert caught.value.hint and "[postgres] dsn" in caught.value.hint


def test_migrations_apply_once_in_order_and_record_the_version(
    postgres: PostgresSettings,
) -> None:
    with connect(postgres) as conn:
        assert schema_version(conn, "demo") == 0
        assert migrate(conn, "demo", _STEPS[:1]) == 0
        assert schema_version(conn, "demo") == 1
        assert migrate(conn, "demo", _STEPS) == 1
        assert migrate(conn, "demo", _STEPS) == 2  # nothing left to do
        conn.execute("INSERT INTO t_two (id, name) VALUES (1, 'x')")
        assert schema_version(conn, "other") == 0


def test_a_failed_step_keeps_the_previous_version(postgres: PostgresSettings) -> None:
    with connect(postgres) as conn:
        migrate(conn, "demo", _STEPS[:1])
        with pytest.raises(Exception, match="no_such_table"):
            migrate(conn, "demo", [*_STEPS[:1], "ALTER TABLE no_such_table ADD COLUMN x int"])
        conn.rollback()
        assert schema_version(conn, "demo") == 1


def test_a_newer_schema_is_refused(postgres: PostgresSettings) -> None:
    with connect(postgres) as conn:
        migrate(conn, "demo", _STEPS)
        with pytest.raises(PostgresError, match="newer than this signaldesk knows"):
            migrate(conn, "demo", _STEPS[:1])


def test_two_migrators_at_once_apply_each_step_once(postgres: PostgresSettings) -> None:
    errors: list[BaseException] = []
    counting = [
        "CREATE TABLE applied (step integer)",
        "INSERT INTO applied VALUES (2); SELECT pg_sleep(0.2)",
    ]

    def run() -> None:
        try:
            with connect(postgres) as conn:
                migrate(conn, "demo", counting)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with connect(postgres) as conn:
        assert conn.execute("SELECT count(*) FROM applied").fetchone() == (1,)


def test_server_info_reports_pgvector(postgres: PostgresSettings) -> None:
    with connect(postgres) as conn:
        info = server_info(conn)
    assert info.server_version.split(".")[0].isdigit()
    assert info.vector_available and info.vector_installed
