"""The team deployment files: the compose file and the example config stay usable."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

from signaldesk.pipeline.cli import cli
from signaldesk.pipeline.config import Config
from signaldesk.postgres import PASSWORD_ENV

TEAM = Path(__file__).resolve().parent.parent / "deploy" / "team"


def test_the_example_config_is_valid_team_mode() -> None:
    config = Config.model_validate(tomllib.loads((TEAM / "signaldesk.toml").read_text("utf-8")))
    assert config.index.backend == "postgres"
    assert config.pipeline.ledger_backend == "postgres"
    assert config.postgres.dsn.startswith("postgresql://signaldesk@db:5432/")
    assert {t.name for t in config.mcp.tokens} == {"alice", "ci-bot"}


def test_the_compose_file_runs_the_database_the_workers_and_the_mcp_server() -> None:
    compose = yaml.safe_load((TEAM / "compose.yaml").read_text("utf-8"))
    services = compose["services"]
    assert services["db"]["image"].startswith("pgvector/pgvector:")
    assert "healthcheck" in services["db"]
    for name in ("serve", "mcp"):
        service = services[name]
        assert service["depends_on"]["db"]["condition"] == "service_healthy"
        assert PASSWORD_ENV in service["environment"]
        assert service["build"]["args"]["EXTRAS"] == "[postgres]"
        # Every command the compose file runs is one the CLI knows.
        command = service["command"]
        assert command[0] == "signaldesk"
        verb, *rest = [a for a in command[1:] if a != "-v"]
        # A context as the group makes it (its settings, such as -h, reach the command).
        with cli.make_context("signaldesk", [verb, *rest]) as context:
            sub = cli.get_command(context, verb)  # type: ignore[attr-defined]
            assert sub is not None, verb
            sub.make_context(verb, rest, parent=context)  # parses the options only
    assert services["mcp"]["command"][1:4] == ["mcp", "--http", "--host"]
