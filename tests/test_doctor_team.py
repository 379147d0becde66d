"""`signaldesk doctor` in team mode: the server, pgvector, the schema versions, the index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from signaldesk.pipeline.cli import cli
from signaldesk.postgres import PostgresSettings, connect
from tests.index_helpers import section, write_note


def _doctor(vault: Path) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["--vault", str(vault), "doctor", "--json"])
    return result.exit_code, json.loads(result.stdout)


def _team_config(vault: Path, dsn: str) -> None:
    (vault / "signaldesk.toml").write_text(
        '[vault]\nname = "ops"\n\n[index]\nbackend = "postgres"\n\n'
        f'[pipeline]\nledger_backend = "postgres"\n\n[postgres]\ndsn = "{dsn}"\n',
        encoding="utf-8",
    )


def test_doctor_checks_the_team_database(vault: Path, postgres: PostgresSettings) -> None:
    _team_config(vault, postgres.dsn)
    code, result = _doctor(vault)
    checks = {c["name"]: c for c in result["checks"]}
    assert code == 0, result
    assert checks["postgres"]["outcome"] == "ok" and "PostgreSQL 16" in checks["postgres"]["detail"]
    assert checks["pgvector"]["outcome"] == "ok"
    assert checks["index schema"]["outcome"] == "warn"
    assert checks["index schema"]["detail"] == "not created yet"
    assert checks["ledger schema"]["fix"] == f"signaldesk --vault {vault} scan migrates it"
    assert "index" not in checks  # nothing to count before the schema exists

    write_note(vault, "01-projects/a.md", section("Topic", "lighthouse keeper"))
    assert CliRunner().invoke(cli, ["--vault", str(vault), "index"]).exit_code == 0
    code, result = _doctor(vault)
    checks = {c["name"]: c for c in result["checks"]}
    assert checks["index schema"] == {
        "name": "index schema",
        "outcome": "ok",
        "detail": "version 1",
        "fix": "",
    }
    assert checks["index"]["outcome"] == "ok"
    assert checks["index"]["detail"].startswith("vault 'ops': 1 note, 1 chunk, 1 vector")

    with connect(postgres) as conn:
        conn.execute("UPDATE signaldesk_schema SET version = 99 WHERE component = 'index'")
        conn.commit()
    code, result = _doctor(vault)
    checks = {c["name"]: c for c in result["checks"]}
    assert checks["index schema"]["outcome"] == "fail"
    assert "newer than this signaldesk" in checks["index schema"]["detail"]


def test_doctor_fails_when_the_server_cannot_be_reached(vault: Path) -> None:
    _team_config(vault, "postgresql://ops@127.0.0.1:9/signaldesk")
    code, result = _doctor(vault)
    checks = {c["name"]: c for c in result["checks"]}
    assert code == 1 and result["ok"] is False
    assert checks["postgres"]["outcome"] == "fail"
    assert "cannot connect to PostgreSQL" in checks["postgres"]["detail"]
    assert "[postgres] dsn" in checks["postgres"]["fix"]
