"""Filed notes always reach the index (the ledger's index queue), moved clippings leave no
stale path behind, a failed index step fails the command, and `--rescore` moves nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from signaldesk.pipeline.cli import cli
from signaldesk.pipeline.config import Config
from signaldesk.pipeline.ledger.store import open_ledger
from signaldesk.pipeline.triage.run import triage
from signaldesk.pipeline.triage.triager import Triager
from signaldesk.retrieval.generations import pointer_path
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.store import index_base_path
from signaldesk.scoring.settings import ScoringSettings
from tests.index_helpers import check_invariants, real_embedder
from tests.triage_data import (
    ADVISORY,
    CONFIG_TOML,
    THIN,
    advisory_item,
    clipping,
    file_list,
    pend,
    workspace,
)

pytestmark = pytest.mark.anyio


def _indexed_paths(vault: Path) -> set[str]:
    from tests.index_helpers import db

    conn = db(vault, workspace(vault).config.index)
    try:
        return {r[0] for r in conn.execute("SELECT path FROM notes")}
    finally:
        conn.close()


async def _queue(vault: Path) -> list[str]:
    async with open_ledger(workspace(vault)) as ledger:
        return await ledger.index_queue()


async def test_notes_filed_by_a_run_that_died_before_indexing_are_indexed_next_time(
    vault: Path,
) -> None:
    ws = workspace(vault)
    ids = await pend(ws, [advisory_item(1), advisory_item(2)])
    # Score, file and record, then "die": finish() (which indexes) never runs.
    async with open_ledger(ws) as ledger:
        triager = Triager(ws, ledger, embedder=real_embedder())
        await triager.run_ledger()
    filed = sorted(d.note_path or "" for d in triager.report.decisions)
    assert len(filed) == 2 and all(filed)
    assert sorted(await _queue(vault)) == filed  # "filed, not yet indexed"
    # The next run has nothing new to triage, and still catches up.
    report = await triage(ws, embedder=real_embedder())
    assert report.decisions == [] and report.indexed is not None
    assert set(filed) <= _indexed_paths(vault)
    assert await _queue(vault) == []
    check_invariants(vault, ws.config.index)
    assert {d.item_id for d in triager.report.decisions} == set(ids)


async def test_a_moved_clipping_leaves_no_stale_path_in_the_index(vault: Path) -> None:
    ws = workspace(vault)
    clipping(vault, "ssh advisory.md", title="OpenSSH 4.9p2 advisory", body=ADVISORY.format(n=4))
    # The clipping was indexed where it landed, before triage moved it.
    await Indexer(vault, ws.config.index, real_embedder()).run()
    assert "Clippings/ssh advisory.md" in _indexed_paths(vault)
    report = await triage(ws, embedder=real_embedder())
    (decision,) = report.decisions
    assert decision.outcome == "moved" and decision.note_path
    indexed = _indexed_paths(vault)
    assert decision.note_path in indexed
    assert not any(p.startswith("Clippings/") for p in indexed)


def test_a_failed_index_step_fails_the_command_and_the_next_run_catches_up(vault: Path) -> None:
    import anyio

    (vault / "signaldesk.toml").write_text(CONFIG_TOML, encoding="utf-8")
    anyio.run(pend, workspace(vault), [advisory_item(1)])
    pointer = pointer_path(index_base_path(vault, workspace(vault).config.index))
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.write_text("garbage that names no generation\n")
    runner = CliRunner()
    failed = runner.invoke(cli, ["--vault", str(vault), "triage"])
    assert failed.exit_code == 1, failed.output
    assert "not indexed" in failed.output and "stay queued" in failed.output
    (queued,) = anyio.run(_queue, vault)
    assert queued.startswith("05-signals/")
    assert (vault / queued).is_file()  # filed either way
    pointer.unlink()
    again = runner.invoke(cli, ["--vault", str(vault), "triage"])
    assert again.exit_code == 0, again.output
    assert queued in _indexed_paths(vault)
    assert anyio.run(_queue, vault) == []


async def test_rescore_at_threshold_zero_moves_nothing(vault: Path) -> None:
    ws = workspace(vault)
    bodies = [
        THIN,
        "Ten celebrities you would never guess own a boat. Number seven is shocking!\n",
        "This one weird trick melts belly fat overnight, doctors hate it. Click here.\n",
    ]
    for n, body in enumerate(bodies):
        clipping(
            vault,
            f"thin-{n}.md",
            title=f"Thin clip {n}",
            body=body,
            source=f"https://b.example/{n}",
        )
    first = await triage(ws, embedder=real_embedder())
    assert {d.outcome for d in first.decisions} == {"stays"}
    before = {p: (vault / p).read_bytes() for p in file_list(vault)}
    zero = workspace(vault, Config(scoring=ScoringSettings(threshold=0.0)))
    rescored = await triage(zero, embedder=real_embedder(), rescore=True)
    assert len(rescored.decisions) == 3
    assert {d.outcome for d in rescored.decisions} == {"held"}
    assert rescored.filed == [] and len(rescored.held) == 3
    assert all("--item" in (d.message or "") for d in rescored.decisions)
    assert {p: (vault / p).read_bytes() for p in file_list(vault)} == before
    async with open_ledger(ws) as ledger:
        entries = [await ledger.get(d.item_id) for d in rescored.decisions]
    assert all(e is not None and e.status == "rejected" for e in entries)
    # Asked for by id, the item is filed.
    one = rescored.decisions[0].item_id
    filed = await triage(zero, embedder=real_embedder(), item_ids=[one])
    assert [d.outcome for d in filed.decisions] == ["moved"]


async def test_temporary_files_left_by_a_killed_run_are_swept_and_nothing_else(
    vault: Path,
) -> None:
    import os
    import time

    folder = vault / "05-signals" / "security"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kept.md").write_text("# a note\n")
    old = time.time() - 3600
    ours = [folder / ".signaldesk-k2x_9a0b.tmp", folder / ".kept.md.q1w2e3r4.tmp"]
    theirs = [
        folder / ".signaldesk-notes.tmp",  # not a name mkstemp gives
        folder / ".gone.md.q1w2e3r4.tmp",  # nothing beside it to replace
        folder / "signaldesk-k2x_9a0b.tmp",  # not hidden
    ]
    fresh = folder / ".signaldesk-zzzzzzzz.tmp"  # another run's write in progress
    for path in [*ours, *theirs, fresh]:
        path.write_text("partial")
    for path in [*ours, *theirs]:
        os.utime(path, (old, old))
    os.utime(fresh, (time.time() + 3600, time.time() + 3600))
    await triage(workspace(vault), embedder=real_embedder())
    assert not any(p.exists() for p in ours)
    assert all(p.exists() for p in [*theirs, fresh])
    assert (folder / "kept.md").read_text() == "# a note\n"
