"""Two intake workers sharing one drop folder and one PostgreSQL ledger: each file once."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from signaldesk.pipeline.config import Config, Workspace
from signaldesk.pipeline.intake.run import run_scan
from signaldesk.pipeline.intake.summary import ScanStats
from signaldesk.pipeline.ledger.pg_store import PostgresLedger
from signaldesk.postgres import PostgresSettings
from signaldesk.sources.tool_output import write_capture
from tests.intake_data import article_text

pytestmark = pytest.mark.anyio


def _workspace(vault: Path, drop: Path, settings: PostgresSettings) -> Workspace:
    config = Config.model_validate(
        {
            "pipeline": {"ledger_backend": "postgres"},
            "postgres": {"dsn": settings.dsn},
            "tool_output": {"drop_folder": str(drop)},
        }
    )
    return Workspace(vault=vault, config=config, config_path=None)


async def test_two_workers_reading_one_drop_folder_take_each_file_once(
    postgres: PostgresSettings, tmp_path: Path
) -> None:
    drop = tmp_path / "shared-drop"  # a folder both machines see (a share, a sync)
    for n in range(12):
        write_capture(drop, article_text(n), title=f"Capture {n}")
    # Two machines: two vaults, one drop folder, one ledger.
    workers = [_workspace(tmp_path / f"vault-{w}", drop, postgres) for w in "ab"]
    for ws in workers:
        ws.vault.mkdir()
    results: list[ScanStats] = []

    async def worker(ws: Workspace) -> None:
        async with PostgresLedger.open(ws.config.postgres) as ledger:
            results.append(await run_scan(ws, ledger, None, sources=["tool_output"]))

    async with anyio.create_task_group() as tg:
        for ws in workers:
            tg.start_soon(worker, ws)
    taken = [set(stats.new_ids) for stats in results]
    assert not taken[0] & taken[1]
    assert len(taken[0] | taken[1]) == 12
    async with PostgresLedger.open(postgres) as ledger:
        entries = await ledger.entries(source_kind="tool_output")
        assert len(entries) == 12 and {e.status for e in entries} == {"pending"}
        # Read again by either: nothing new.
        again = await run_scan(workers[0], ledger, None, sources=["tool_output"])
        assert again.new_ids == [] and again.totals.new == 0
