"""Corrections: noticed in the vault, given as commands, learned from, undone and reset."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from signaldesk.frontmatter import parse_note
from signaldesk.frontmatter_patch import patch_frontmatter
from signaldesk.items import Item
from signaldesk.pipeline.cli import cli
from signaldesk.pipeline.cli.triage import print_triage_report
from signaldesk.pipeline.ledger.corrections import active_corrections
from signaldesk.pipeline.ledger.store import open_ledger
from signaldesk.pipeline.triage.commands import correct, list_corrections, undo
from signaldesk.pipeline.triage.run import triage
from tests.index_helpers import real_embedder
from tests.triage_data import (
    ADVISORY,
    CONFIG_TOML,
    HOWTO,
    advisory_item,
    clipping,
    ledger_toml,
    on_postgres,
    pend,
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


async def _corrections(vault: Path) -> list[tuple[str, bool | None, str | None, str]]:
    async with open_ledger(workspace(vault)) as ledger:
        rows = await active_corrections(ledger)
    return [(r.item_id, r.accept, r.domain, r.how) for r in rows]


async def test_moves_archives_and_deletions_in_the_vault_are_recorded(vault: Path) -> None:
    ws = workspace(vault)
    howto = Item(
        source_kind="rss",
        source_id="http://127.0.0.1/feed.xml",
        title="How to profile a slow Python service with py-spy",
        text=HOWTO,
        guid="urn:test:howto",
        url="https://example.org/py-spy",
    )
    moved, archived, deleted = await pend(ws, [advisory_item(1), advisory_item(2), howto])
    report = await triage(ws, embedder=real_embedder())
    notes = {d.item_id: vault / str(d.note_path) for d in report.decisions}
    assert all(str(p.relative_to(vault)).startswith("05-signals/") for p in notes.values())
    target = vault / "05-signals" / "devops" / notes[moved].name
    target.parent.mkdir(parents=True, exist_ok=True)
    notes[moved].rename(target)
    text = notes[archived].read_text(encoding="utf-8").replace("status: active", "status: archived")
    notes[archived].write_text(text, encoding="utf-8")
    notes[deleted].unlink()

    again = await triage(ws, embedder=real_embedder())
    found = {row[0]: row[1:] for row in await _corrections(vault)}
    assert found == {
        moved: (True, "devops", "moved the note"),
        archived: (False, None, "archived the note"),
        deleted: (False, None, "deleted the note"),
    }
    assert len(again.corrections) == 3
    # Noticed once: a third run records nothing new.
    third = await triage(ws, embedder=real_embedder())
    assert third.corrections == []


async def test_clippings_leaving_the_inbox_are_recorded(vault: Path) -> None:
    ws = workspace(vault)
    kept = clipping(
        vault,
        "kept.md",
        title="Meh",
        body="Click here. Number seven!\n",
        source="https://a.example/1",
    )
    gone = clipping(
        vault, "gone.md", title="Cats", body="A cat sat on a mat.\n", source="https://b.example/2"
    )
    report = await triage(ws, embedder=real_embedder())
    assert {d.decision for d in report.decisions} == {"rejected"}
    ids = {Path(str(d.origin_path)).name: d.item_id for d in report.decisions}
    (vault / "03-resources").mkdir(exist_ok=True)
    kept.rename(vault / "03-resources" / "kept.md")
    gone.unlink()
    await triage(ws, embedder=real_embedder())
    found = {row[0]: row[1:] for row in await _corrections(vault)}
    assert found[ids["kept.md"]] == (True, None, "moved the clipping out of the inbox")
    assert found[ids["gone.md"]] == (False, None, "deleted the clipping")


async def test_accept_files_a_rejected_item_by_the_persons_decision(vault: Path) -> None:
    ws = workspace(vault)
    (thin,) = await pend(ws, [thin_item(1)])
    first = await triage(ws, embedder=real_embedder())
    assert first.decisions[0].decision == "rejected"
    result, report = await correct(ws, thin[:12], "accept", embedder=real_embedder())
    assert result.recorded and result.needs_filing
    assert report is not None
    (decision,) = report.decisions
    assert decision.decision == "filed" and decision.outcome == "created"
    assert decision.by_person  # the CLI says so beside the composite under the line
    buffer = io.StringIO()
    print_triage_report(Console(file=buffer, width=200), report)
    assert "≤ 0.40" in buffer.getvalue() and "filed (your decision)" in buffer.getvalue()
    async with open_ledger(ws) as ledger:
        entry = await ledger.get(thin)
    assert entry is not None and entry.status == "filed"
    assert entry.scores is not None and "your decision" in entry.scores["summary"]
    assert entry.scores["composite"] <= 0.4 and entry.scores["passed"] is True
    assert "<=" in entry.scores["summary"]  # the summary never claims it scored above


async def test_reject_archives_and_move_moves_the_note(vault: Path) -> None:
    ws = workspace(vault)
    first, second = await pend(ws, [advisory_item(1), advisory_item(2)])
    report = await triage(ws, embedder=real_embedder())
    notes = {d.item_id: str(d.note_path) for d in report.decisions}

    result, filed = await correct(ws, first, "reject", embedder=None)
    assert filed is None and "status: archived" in result.message
    meta = parse_note((vault / notes[first]).read_text(encoding="utf-8")).frontmatter
    assert meta["status"] == "archived"  # archived, never deleted

    # The person tags the note before moving it; the domain's tag moves with the note.
    path = vault / notes[second]
    filed_as = parse_note(path.read_text(encoding="utf-8")).frontmatter
    old_domain = filed_as["domain"]
    assert filed_as["tags"][:2] == ["signal", old_domain]
    path.write_bytes(patch_frontmatter(path.read_bytes(), {"tags": [*filed_as["tags"], "to-read"]}))
    result, _ = await correct(ws, second, "move", "devops", embedder=None)
    assert result.note_path is not None and result.note_path.startswith("05-signals/devops/")
    assert not (vault / notes[second]).exists() and (vault / result.note_path).exists()
    meta = parse_note((vault / result.note_path).read_text(encoding="utf-8")).frontmatter
    assert meta["domain"] == "devops"
    assert meta["tags"] == ["signal", "devops", *filed_as["tags"][2:], "to-read"]
    async with open_ledger(ws) as ledger:
        entry = await ledger.get(second)
    assert entry is not None and entry.note_path == result.note_path and entry.domain == "devops"
    # Recording the same thing again adds nothing.
    again, _ = await correct(ws, second, "move", "devops", embedder=None)
    assert not again.recorded
    # A triage run afterwards notices nothing new: the move is already known.
    assert (await triage(ws, embedder=real_embedder())).corrections == []
    listed = await list_corrections(ws)
    assert [(r.item_id, r.how) for r, _ in listed] == [
        (first, "`triage reject`"),
        (second, "`triage move`"),
    ]


async def test_corrections_change_scores_and_undoing_them_restores(vault: Path) -> None:
    ws = workspace(vault)
    (seen,) = await pend(ws, [advisory_item(1)])
    await triage(ws, embedder=real_embedder())
    await correct(ws, seen, "reject", embedder=None)
    (new,) = await pend(ws, [dataclasses.replace(advisory_item(2), tags=())])
    learned = await triage(ws, embedder=real_embedder())
    (decision,) = learned.decisions
    async with open_ledger(ws) as ledger:
        entry = await ledger.get(new)
    assert entry is not None and entry.scores is not None
    assert "you rejected 1 similar item" in entry.scores["learned"]["reason"]
    assert "you rejected" not in entry.scores["relevance"]["reason"]
    shifted = entry.scores["learned"]["value"]
    assert shifted < 0 and entry.scores["learned"]["features"]["shift"] == shifted

    assert await undo(ws, None) == 1
    assert await list_corrections(ws) == []
    plain = await triage(ws, embedder=real_embedder(), item_ids=[new], rescore=True)
    async with open_ledger(ws) as ledger:
        entry = await ledger.get(new)
    assert entry is not None and entry.scores is not None
    assert "learned" not in entry.scores
    assert plain.decisions[0].composite > decision.composite


def test_cli_accept_reject_move_and_corrections(tmp_path: Path) -> None:
    import anyio

    vault = tmp_path / "vault"
    vault.mkdir()
    config = tmp_path / "signaldesk.toml"
    ws = workspace(vault)
    config.write_text(CONFIG_TOML + ledger_toml(ws), encoding="utf-8")
    (item_id,) = anyio.run(pend, ws, [advisory_item(1)])
    runner = CliRunner()
    base = ["--vault", str(vault), "--config", str(config)]
    ran = runner.invoke(cli, [*base, "triage", "--json"])
    assert ran.exit_code == 0, ran.output
    moved = runner.invoke(cli, [*base, "triage", "move", item_id[:12], "devops"])
    assert moved.exit_code == 0, moved.output
    assert "moved" in moved.output
    bad = runner.invoke(cli, [*base, "triage", "move", item_id[:12], "gardening"])
    assert bad.exit_code != 0
    missing = runner.invoke(cli, [*base, "triage", "accept", "ffffffffffff"])
    assert missing.exit_code != 0 and "no item" in str(missing.exception)
    listed = runner.invoke(cli, [*base, "triage", "corrections", "--json"])
    rows = json.loads(listed.output)
    assert [(r["item_id"], r["domain"], r["how"]) for r in rows] == [
        (item_id, "devops", "`triage move`")
    ]
    table = runner.invoke(cli, [*base, "triage", "corrections"])
    assert table.exit_code == 0, table.output
    # A note moved is a note kept, but this advisory scored far over the threshold: keeping
    # it says nothing of where the person's line is.
    assert "none of your corrections keeps or throws away an item near the threshold" in (
        table.output
    )
    reset = runner.invoke(cli, [*base, "triage", "corrections", "--reset"])
    assert reset.exit_code == 0 and "undid 1" in reset.output
    empty = runner.invoke(cli, [*base, "triage", "corrections"])
    assert "no corrections" in empty.output
    assert ADVISORY  # the item is the shared advisory


async def test_the_daily_report_lists_what_the_person_corrected(vault: Path) -> None:
    from datetime import UTC, date

    from signaldesk.pipeline.ledger.corrections import latest_correction
    from signaldesk.pipeline.reports.triage_report import gather_triage_report, render_triage_report

    ws = workspace(vault)
    first, second = await pend(ws, [advisory_item(1), advisory_item(2)])
    report = await triage(ws, embedder=real_embedder())
    notes = {d.item_id: str(d.note_path) for d in report.decisions}
    await correct(ws, first, "reject", embedder=None)
    await correct(ws, second, "move", "devops", embedder=None)
    assert await undo(ws, 1) == 1  # the move is taken back
    async with open_ledger(ws) as ledger:
        recorded = await latest_correction(ledger, first)
        assert recorded is not None
        today = recorded.recorded_at.astimezone(UTC).date()
        day = await gather_triage_report(ws, ledger, today, tz=UTC)
        other = await gather_triage_report(ws, ledger, date(2020, 1, 1), tz=UTC)
    assert [(c.item_id, c.how, c.accept, c.undone) for c in day.corrections] == [
        (first, "`triage reject`", False, False),
        (second, "`triage move`", True, True),
    ]
    section = render_triage_report(day).split("## Your corrections", 1)[1].split("\n## ", 1)[0]
    target = notes[first].removesuffix(".md")
    assert f"[[{target}\\|" in section and "| `triage reject` | no | - |" in section
    assert "| `triage move` (undone since) | yes | devops |" in section
    assert "`signaldesk triage corrections`" in section
    assert other.corrections == []
    empty = render_triage_report(other).split("## Your corrections", 1)[1].split("\n## ", 1)[0]
    assert empty.strip() == "None."


async def test_a_signal_note_shows_the_learned_shift_and_loses_it_on_undo(vault: Path) -> None:
    ws = workspace(vault)
    (seen,) = await pend(ws, [advisory_item(1)])
    await triage(ws, embedder=real_embedder())
    await correct(ws, seen, "accept", embedder=None)  # "yes, keep items like this"
    (new,) = await pend(ws, [dataclasses.replace(advisory_item(2), tags=())])
    learned = await triage(ws, embedder=real_embedder())
    (decision,) = learned.decisions
    assert decision.decision == "filed" and decision.note_path is not None
    meta = parse_note((vault / decision.note_path).read_text(encoding="utf-8")).frontmatter
    assert meta["learned"] > 0 and meta["learned_reason"].startswith("you kept 1 similar item")

    assert await undo(ws, None) == 1
    again = await triage(ws, embedder=real_embedder(), item_ids=[new], rescore=True)
    assert again.decisions[0].composite < decision.composite
    meta = parse_note((vault / decision.note_path).read_text(encoding="utf-8")).frontmatter
    assert meta["learned"] == 0.0
    assert meta["learned_reason"] == "none of your corrections applies any more"


def test_score_gives_the_card_triage_gave_a_captured_output_corrections_and_all(
    tmp_path: Path,
) -> None:
    # `score` read a captured tool output as a clipping ("clipped by you", 0.43) and left
    # the vault's corrections out, while triage had scored it 0.29.
    import anyio

    vault = tmp_path / "vault"
    vault.mkdir()
    config = tmp_path / "signaldesk.toml"
    ws = workspace(vault)
    config.write_text(CONFIG_TOML + ledger_toml(ws), encoding="utf-8")
    runner = CliRunner()
    base = ["--vault", str(vault), "--config", str(config)]
    (first,) = anyio.run(pend, ws, [advisory_item(1)])
    assert runner.invoke(cli, [*base, "triage", "reject", first[:12]]).exit_code == 0
    second = (
        "OpenSSL 3.4.1 fixes CVE-2026-7781, a remote code execution vulnerability in TLS "
        "servers. Upgrade now: the bug is reachable before the handshake completes.\n\n"
        "1. Upgrade OpenSSL to 3.4.1 with `apt install openssl`.\n"
        "2. Restart every service that links it, such as `systemctl restart nginx`.\n"
    )
    out = json.loads(runner.invoke(cli, [*base, "capture", second, "--json"]).output)
    [item] = [
        i
        for i in json.loads(runner.invoke(cli, [*base, "items", "--json"]).output)
        if i["id"] == out["new_ids"][0]
    ]
    scored = json.loads(runner.invoke(cli, [*base, "score", out["path"], "--json"]).output)
    assert "clipped by you" not in scored["relevance"]["reason"]
    assert (
        scored["learned"]["value"] < 0
        and "you rejected 1 similar item" in (scored["learned"]["reason"])
    )
    assert round(scored["composite"], 4) == round(item["score"], 4)
