"""The triage stage against a real ledger, the real scorer, real files and the real index."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path

import anyio
import pytest

from signaldesk.frontmatter import parse_note
from signaldesk.pipeline.config import Config, Workspace
from signaldesk.pipeline.ledger.store import LedgerEntry, ledger_path, open_ledger
from signaldesk.pipeline.settings import TriageSettings
from signaldesk.pipeline.triage.filing import NoteWriter, read_note_id
from signaldesk.pipeline.triage.lock import triage_lock
from signaldesk.pipeline.triage.run import triage
from signaldesk.retrieval.retriever import Retriever
from signaldesk.scoring.settings import ScoreWeights, ScoringSettings
from tests.index_helpers import real_embedder
from tests.intake_data import article_text
from tests.triage_data import (
    ADVISORY,
    HOWTO,
    THIN,
    advisory_item,
    card,
    clipping,
    config,
    file_list,
    on_postgres,
    pend,
    snapshot,
    thin_item,
    workspace,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True, params=["sqlite", "postgres"])
def ledger_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs on both ledger backends (PostgreSQL skips without a server)."""
    if request.param == "postgres":
        settings = request.getfixturevalue("postgres")
        monkeypatch.setitem(globals(), "workspace", on_postgres(workspace, settings))


def _signal_notes(vault: Path) -> list[str]:
    return sorted(p for p in file_list(vault) if p.startswith("05-signals/"))


async def test_pending_items_are_scored_filed_recorded_and_searchable(vault: Path) -> None:
    ws = workspace(vault)
    good, bad = await pend(ws, [advisory_item(1), thin_item(1)])
    report = await triage(ws, embedder=real_embedder())

    by_id = {d.item_id: d for d in report.decisions}
    assert by_id[good].decision == "filed" and by_id[good].outcome == "created"
    assert by_id[bad].decision == "rejected" and by_id[bad].outcome == "stays"
    assert by_id[bad].note_path is None
    note = by_id[good].note_path
    assert note is not None and note.startswith("05-signals/security/")
    assert _signal_notes(vault) == [note]
    meta = parse_note((vault / note).read_text(encoding="utf-8")).frontmatter
    assert meta["signaldesk_id"] == good and meta["composite"] > 0.55

    async with open_ledger(ws) as ledger:
        filed, rejected = await ledger.get(good), await ledger.get(bad)
    assert filed is not None and filed.status == "filed" and filed.note_path == note
    assert filed.scores is not None and filed.scores["route"]["domain"] == "security"
    assert filed.score == pytest.approx(by_id[good].composite)
    assert rejected is not None and rejected.status == "rejected" and rejected.score is not None

    assert report.indexed is not None and report.indexed.added == 1 and report.index_error is None
    retriever = await Retriever.open(vault, ws.config.index, ws.config.search, real_embedder())
    async with retriever:
        results = await retriever.search("OpenSSH 1.9p2 fixes CVE-2026-1234")
    assert results and results[0].path == note


async def test_a_second_run_writes_nothing_and_rescoring_changes_nothing(vault: Path) -> None:
    ws = workspace(vault)
    await pend(ws, [advisory_item(1), advisory_item(2), thin_item(1)])
    await triage(ws, embedder=real_embedder())
    before = snapshot(vault)
    again = await triage(ws, embedder=real_embedder())
    assert again.decisions == [] and again.indexed is None
    rescored = await triage(ws, embedder=real_embedder(), rescore=True)
    assert sorted(d.outcome for d in rescored.decisions) == ["stays", "unchanged", "unchanged"]
    after = snapshot(vault)
    assert {k: v for k, v in after.items() if not k.startswith(".signaldesk")} == {
        k: v for k, v in before.items() if not k.startswith(".signaldesk")
    }


async def test_hand_edits_survive_rescoring_and_no_note_is_ever_deleted(vault: Path) -> None:
    ws = workspace(vault)
    ids = await pend(ws, [advisory_item(1), advisory_item(2)])
    report = await triage(ws, embedder=real_embedder())
    first, second = (next(d for d in report.decisions if d.item_id == i) for i in ids)
    assert first.note_path and second.note_path
    edited = vault / first.note_path
    text = edited.read_text(encoding="utf-8")
    text = text.replace("title: OpenSSH", "title: Read this first - OpenSSH")
    text = text.replace("- ssh\n", "- ssh\n- urgent\n") + "\nMy notes: patch the bastion host.\n"
    edited.write_text(text, encoding="utf-8")
    files_before = file_list(vault)

    # New weights and a threshold above every score: everything is re-scored, nothing passes.
    heavier = Config(
        scoring=ScoringSettings(threshold=0.99, weights=ScoreWeights(relevance=1.0, depth=0.0))
    )
    rescored = await triage(workspace(vault, heavier), embedder=real_embedder(), rescore=True)
    assert {d.outcome for d in rescored.decisions} == {"updated"}
    assert all(d.decision == "rejected" for d in rescored.decisions)
    assert file_list(vault) == files_before  # nothing deleted, nothing new

    meta = parse_note(edited.read_text(encoding="utf-8")).frontmatter
    assert meta["title"].startswith("Read this first") and "urgent" in meta["tags"]
    assert meta["threshold"] == 0.99
    assert edited.read_text(encoding="utf-8").endswith("My notes: patch the bastion host.\n")
    async with open_ledger(ws) as ledger:
        entry = await ledger.get(first.item_id)
    assert entry is not None and entry.status == "filed" and entry.note_path == first.note_path


async def test_a_moved_note_is_followed_and_a_deleted_one_not_recreated(vault: Path) -> None:
    ws = workspace(vault)
    keep, drop = await pend(ws, [advisory_item(1), advisory_item(2)])
    report = await triage(ws, embedder=real_embedder())
    paths = {d.item_id: d.note_path for d in report.decisions}
    moved = vault / "01-projects" / "ssh.md"
    (vault / str(paths[keep])).rename(moved)
    (vault / str(paths[drop])).unlink()

    lower = Config(scoring=ScoringSettings(threshold=0.1))
    rescored = await triage(workspace(vault, lower), embedder=real_embedder(), rescore=True)
    by_id = {d.item_id: d for d in rescored.decisions}
    assert by_id[keep].outcome == "updated" and by_id[keep].note_path == "01-projects/ssh.md"
    assert by_id[drop].outcome == "missing"
    assert _signal_notes(vault) == []  # neither moved back nor written again
    async with open_ledger(ws) as ledger:
        entry = await ledger.get(keep)
    assert entry is not None and entry.note_path == "01-projects/ssh.md"


async def test_a_note_written_before_a_crash_is_not_written_twice(vault: Path) -> None:
    ws = workspace(vault)
    (item_id,) = await pend(ws, [advisory_item(1)])
    # The run died after writing the note and before recording it: the item is pending.
    NoteWriter(vault, TriageSettings(), 0.55).create(advisory_item(1), card(), item_id, _now())
    report = await triage(ws, embedder=real_embedder())
    assert [d.outcome for d in report.decisions] == ["updated"]
    assert len(_signal_notes(vault)) == 1


def _now() -> datetime:
    return datetime.now().astimezone()


@pytest.mark.parametrize("action", ["move", "copy", "leave"])
async def test_inbox_clippings_follow_the_clipping_action(vault: Path, action: str) -> None:
    body = ADVISORY.format(n=3)
    source = clipping(vault, "OpenSSH advisory.md", title="OpenSSH 3.9p2 advisory", body=body)
    original = source.read_bytes()
    ws = workspace(vault, config(triage=TriageSettings(clipping_action=action)))
    report = await triage(ws, embedder=real_embedder())
    (decision,) = report.decisions
    assert decision.source_kind == "clipper" and decision.decision == "filed"
    if action == "move":
        assert decision.outcome == "moved" and not source.exists()
        assert decision.note_path == "05-signals/security/OpenSSH advisory.md"
        moved = (vault / decision.note_path).read_bytes()
        assert moved.endswith(original.split(b"---\n", 2)[2])  # body byte-identical
        assert read_note_id(vault / decision.note_path) == decision.item_id
    elif action == "copy":
        assert decision.outcome == "copied" and source.read_bytes() == original
        assert decision.note_path == "05-signals/security/OpenSSH advisory.md"
    else:
        assert decision.outcome == "left" and source.read_bytes() == original
        assert decision.note_path == "Clippings/OpenSSH advisory.md"
        assert _signal_notes(vault) == []
    assert report.indexed is not None or action == "leave"
    # Nothing happens twice, whatever the action.
    assert (await triage(ws, embedder=real_embedder())).decisions == []
    rescored = await triage(ws, embedder=real_embedder(), rescore=True)
    assert [d.outcome for d in rescored.decisions] == ["left" if action == "leave" else "unchanged"]


async def test_a_clipping_below_the_threshold_stays_in_the_inbox(vault: Path) -> None:
    source = clipping(vault, "meh.md", title="Meh", body="Click here. Number seven!\n")
    original = source.read_bytes()
    ws = workspace(vault)
    report = await triage(ws, embedder=real_embedder())
    (decision,) = report.decisions
    assert decision.decision == "rejected" and decision.outcome == "stays"
    assert source.read_bytes() == original and _signal_notes(vault) == []
    assert [d.origin_path for d in report.inbox_waiting] == ["Clippings/meh.md"]
    async with open_ledger(ws) as ledger:
        entry = await ledger.get(decision.item_id)
    assert entry is not None and entry.status == "rejected"


async def test_dry_run_writes_nothing_at_all(vault: Path) -> None:
    ws = workspace(vault)
    clipping(vault, "clip.md", title="OpenSSH 4.9p2", body=ADVISORY.format(n=4))
    # First with no ledger at all: it must not even be created.
    before = snapshot(vault)
    report = await triage(ws, embedder=real_embedder(), dry_run=True)
    assert snapshot(vault) == before and not ledger_path(ws).exists()
    (decision,) = report.decisions
    assert report.dry_run and decision.outcome == "moved"
    assert decision.note_path == "05-signals/security/clip.md"

    await pend(ws, [advisory_item(1), thin_item(1)])
    before = snapshot(vault)
    report = await triage(ws, embedder=real_embedder(), dry_run=True)
    assert snapshot(vault) == before  # vault, ledger and index untouched
    outcomes = sorted(d.outcome for d in report.decisions)
    assert outcomes == ["created", "moved", "stays"]
    assert report.indexed is None and report.written
    async with open_ledger(ws) as ledger:
        assert {e.status for e in await ledger.entries()} == {"pending"}


async def test_item_ids_pick_exact_items_by_id_or_prefix(vault: Path) -> None:
    ws = workspace(vault)
    one, two = await pend(ws, [advisory_item(1), advisory_item(2)])
    report = await triage(ws, embedder=real_embedder(), item_ids=[one[:10], "feedbeef00"])
    assert [d.item_id for d in report.decisions] == [one]
    assert any("feedbeef00" in e for e in report.errors)
    async with open_ledger(ws) as ledger:
        entry = await ledger.get(two)
    assert entry is not None and entry.status == "pending"


async def test_keyword_only_scoring_still_files(vault: Path) -> None:
    ws = workspace(vault)
    await pend(ws, [advisory_item(1)])
    report = await triage(ws, embedder=None)
    assert report.scoring_mode == "keywords"
    assert [d.outcome for d in report.decisions] == ["created"]
    assert report.index_error is not None  # nothing to embed with: `signaldesk index` later


async def test_identity_matches_the_ledger(vault: Path) -> None:
    # The dry-run preview keys clippings the way intake records them.
    ws = workspace(vault)
    clipping(vault, "c.md", title="OpenSSH 5.9p2", body=ADVISORY.format(n=5))
    preview = await triage(ws, embedder=real_embedder(), dry_run=True)
    real = await triage(ws, embedder=real_embedder())
    assert [d.item_id for d in preview.decisions] == [d.item_id for d in real.decisions]


async def test_two_runs_at_once_write_each_note_once(vault: Path) -> None:
    ws = workspace(vault, config(triage=TriageSettings(batch_size=2)))
    # Distinct enough texts that dedupe keeps all five.
    items = [
        dataclasses.replace(i, text=i.text + "\n\n" + article_text(n))
        for n, i in ((n, advisory_item(n)) for n in range(1, 6))
    ]
    await pend(ws, items)
    reports = []

    async def run() -> None:
        reports.append(await triage(ws, embedder=real_embedder()))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        tg.start_soon(run)
    assert len(_signal_notes(vault)) == 5
    created = [d for r in reports for d in r.decisions if d.outcome == "created"]
    assert len(created) == 5 and len({d.item_id for d in created}) == 5


async def test_a_busy_lock_leaves_items_pending(vault: Path) -> None:
    ws = workspace(vault, config(triage=TriageSettings(lock_timeout=0.2)))
    (item_id,) = await pend(ws, [advisory_item(1)])
    async with triage_lock(ledger_path(ws).parent / "triage.lock", timeout=5):
        report = await triage(ws, embedder=real_embedder())
    assert report.decisions == [] and any("next run" in e for e in report.errors)
    assert _signal_notes(vault) == []
    async with open_ledger(ws) as ledger:
        entry = await ledger.get(item_id)
    assert entry is not None and entry.status == "pending"
    assert [d.outcome for d in (await triage(ws, embedder=real_embedder())).decisions] == [
        "created"
    ]


async def _clipper_entries(ws: Workspace) -> list[LedgerEntry]:
    async with open_ledger(ws) as ledger:
        return await ledger.entries(source_kind="clipper")


async def test_a_new_clipping_under_a_moved_ones_name_is_a_new_item(vault: Path) -> None:
    ws = workspace(vault)
    clipping(vault, "Weekly.md", title="OpenSSH 6.9p2", body=ADVISORY.format(n=6))
    first = await triage(ws, embedder=real_embedder())
    (moved,) = first.decisions
    assert moved.outcome == "moved" and not (vault / "Clippings" / "Weekly.md").exists()

    # Later the Web Clipper saves another page under the same file name.
    clipping(
        vault,
        "Weekly.md",
        title="Profiling with py-spy",
        body=HOWTO,
        source="https://example.org/py-spy",
    )
    preview = await triage(ws, embedder=real_embedder(), dry_run=True)
    second = await triage(ws, embedder=real_embedder())
    (new,) = second.decisions
    assert [d.item_id for d in preview.decisions] == [new.item_id] != [moved.item_id]
    assert new.decision == "filed" and new.outcome == "moved"
    assert new.note_path is not None and new.note_path != moved.note_path
    assert read_note_id(vault / new.note_path) == new.item_id
    assert read_note_id(vault / str(moved.note_path)) == moved.item_id  # the first untouched
    entries = await _clipper_entries(ws)
    assert sorted(e.id for e in entries) == sorted([moved.item_id, new.item_id])
    assert {e.status for e in entries} == {"filed"}
    assert (await triage(ws, embedder=real_embedder())).decisions == []


async def test_an_inbox_clipping_edited_is_one_item_replaced_is_a_new_one(vault: Path) -> None:
    ws = workspace(vault)
    meh = clipping(vault, "Page.md", title="Meh", body=THIN + "\n", source="https://buzz.example/x")
    (rejected,) = (await triage(ws, embedder=real_embedder())).decisions
    assert rejected.outcome == "stays" and meh.exists()

    # Edited where it stays (same page): nothing new to triage.
    meh.write_text(meh.read_text(encoding="utf-8") + "Seen it.\n", encoding="utf-8")
    assert (await triage(ws, embedder=real_embedder())).decisions == []
    # Deleted by the person, and a clipping of another page saved under the name.
    meh.unlink()
    clipping(vault, "Page.md", title="OpenSSH 8.9p2", body=ADVISORY.format(n=8))
    (replaced,) = (await triage(ws, embedder=real_embedder())).decisions
    assert replaced.item_id != rejected.item_id
    assert replaced.decision == "filed" and replaced.outcome == "moved"
    statuses = {e.id: e.status for e in await _clipper_entries(ws)}
    assert statuses == {rejected.item_id: "rejected", replaced.item_id: "filed"}
