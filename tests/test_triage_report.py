"""The daily triage report: the right day's items in the right sections, and Mermaid
blocks that the real Mermaid parser accepts."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from signaldesk.frontmatter import parse_note
from signaldesk.items import Item
from signaldesk.pipeline.config import Workspace, resolve_workspace
from signaldesk.pipeline.intake.feeds import FeedRegistry
from signaldesk.pipeline.ledger.store import Ledger, open_ledger
from signaldesk.pipeline.reports.triage_report import (
    gather_triage_report,
    render_triage_report,
    score_histogram,
    write_triage_report,
)
from signaldesk.sources.rss import FeedState

DAY = date(2026, 11, 27)
BACKOFF_ENDS = date(2099, 11, 27)  # a flaky feed's next check: after any run of the tests
MERMAID_DIR = Path(__file__).resolve().parent / "mermaid"


def _at(day: date, hour: int) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def _item(n: int, *, kind: str = "rss", source: str = "https://feeds.example/a.xml") -> Item:
    origin = f"Clippings/item-{n}.md" if kind == "clipper" else None
    return Item(
        origin_path=origin,
        source_kind=kind,  # type: ignore[arg-type]
        source_id=source,
        title=f"Item {n}",
        text=f"Body of item number {n}. " + " ".join(f"word{n}x{i}" for i in range(40)),
        guid=f"urn:test:{n}",
        url=f"https://site.example/post/{n}",
    )


def _scores(value: float) -> dict[str, object]:
    return {
        name: {"value": value, "reason": "test", "features": {}}
        for name in ("relevance", "actionability", "depth", "authority")
    } | {"composite": value}


async def _fill(ledger: Ledger) -> dict[str, str]:
    """Items on the day before, the day, and the day after; returns title -> id."""
    ids: dict[str, str] = {}

    async def record(n: int, when: datetime, **kw: str) -> str:
        [item_id] = await ledger.record([_item(n, **kw)], now=when)
        ids[f"Item {n}"] = item_id
        return item_id

    before, after = DAY - timedelta(days=1), DAY + timedelta(days=1)
    # The day before and after: one filed item each (must not show up).
    for n, when in ((1, _at(before, 23)), (9, _at(after, 0))):
        item_id = await record(n, when)
        await ledger.settle(item_id, _item(n))
        await ledger.record_triage(
            item_id, "filed", score=0.9, scores=_scores(0.9), domain="web", note_path=f"x/{n}.md"
        )
    # The day itself.
    filed = await record(2, _at(DAY, 8))
    await ledger.settle(filed, _item(2))
    await ledger.record_triage(
        filed,
        "filed",
        score=0.71,
        scores=_scores(0.71),
        domain="security",
        note_path="05-signals/security/2026-11-27-item-2.md",
    )
    near = await record(3, _at(DAY, 9), kind="clipper", source="Clippings")
    await ledger.settle(near, _item(3, kind="clipper", source="Clippings"))
    await ledger.record_triage(near, "rejected", score=0.50, scores=_scores(0.5), domain="data")
    far = await record(4, _at(DAY, 10))
    await ledger.settle(far, _item(4))
    await ledger.record_triage(far, "rejected", score=0.20, scores=_scores(0.2), domain="other")
    dup = await record(5, _at(DAY, 11), kind="newsletter", source="00-inbox/newsletters")
    same_url = Item(
        source_kind="newsletter",
        source_id="00-inbox/newsletters",
        title="Item 5",
        text="different words entirely " * 10,
        guid="urn:test:5",
        url="https://site.example/post/2?utm_source=mail",
    )
    verdict = await ledger.settle(dup, same_url)
    assert verdict.status == "duplicate"
    parked = await record(6, _at(DAY, 12))
    await ledger.park(parked, "HTTP 404 for the article page")
    pending = await record(7, _at(DAY, 13))
    await ledger.settle(pending, _item(7))
    return ids


async def _feeds(ledger: Ledger) -> None:
    registry = FeedRegistry(ledger)
    await registry.add("https://feeds.example/ok.xml", title="Healthy")
    await registry.add("https://feeds.example/flaky.xml", title="Flaky")
    await registry.add("https://feeds.example/dead.xml", title="Dead")
    async with ledger.transaction() as conn:
        await registry.save_state(
            conn,
            "https://feeds.example/flaky.xml",
            FeedState(
                url="https://feeds.example/flaky.xml",
                title="Flaky",
                error_count=2,
                last_error="HTTP 503",
                next_check_at=_at(BACKOFF_ENDS, 20),
            ),
        )
        await registry.save_state(
            conn,
            "https://feeds.example/dead.xml",
            FeedState(
                url="https://feeds.example/dead.xml",
                title="Dead",
                error_count=1,
                last_error="gone (410)",
                disabled_reason="gone (410)",
            ),
        )


@pytest.fixture
async def workspace(vault: Path) -> Workspace:
    ws = resolve_workspace(vault)
    async with open_ledger(ws) as ledger:
        await _fill(ledger)
        await _feeds(ledger)
    (vault / "Clippings").mkdir(exist_ok=True)
    (vault / "Clippings" / "item-3.md").write_text("---\ntitle: Clipped three\n---\nText\n")
    (vault / "00-inbox" / "idea.md").write_text("# An idea\n")
    drops = vault / "00-inbox" / "tool-output"
    drops.mkdir(parents=True, exist_ok=True)
    (drops / "capture.md").write_text("# captured, not waiting in the inbox\n")
    return ws


def _sections(markdown: str) -> dict[str, str]:
    parts = re.split(r"^## ", markdown, flags=re.MULTILINE)
    return {p.split("\n", 1)[0].strip(): p.split("\n", 1)[1] for p in parts[1:]}


@pytest.mark.anyio
async def test_report_lists_exactly_the_days_items_in_the_right_sections(
    workspace: Workspace,
) -> None:
    async with open_ledger(workspace) as ledger:
        report = await gather_triage_report(workspace, ledger, DAY, tz=UTC)
    assert sorted(i.title for i in report.items) == [f"Item {n}" for n in range(2, 8)]
    assert [i.title for i in report.filed] == ["Item 2"]
    assert [i.title for i in report.near_misses] == ["Item 3"]
    assert [i.title for i in report.duplicates] == ["Item 5"]
    assert report.duplicates[0].duplicate_of == "Item 2"
    assert [i.title for i in report.parked] == ["Item 6"]
    assert report.pending_total == 1
    assert {f.title: f.state for f in report.feed_issues} == {
        "Dead": "disabled",
        "Flaky": "backoff",
    }
    waiting = {w.path: w for w in report.waiting_notes}
    assert set(waiting) == {"00-inbox/idea.md", "Clippings/item-3.md"}

    text = render_triage_report(report)
    sections = _sections(text)
    assert "[[05-signals/security/2026-11-27-item-2\\|Item 2]]" in sections["Filed"]
    assert "0.71" in sections["Filed"]
    for other in ("Item 1", "Item 9", "Item 3", "Item 4"):
        assert other not in sections["Filed"]
    assert "Item 3" in sections["Worth a look"] and "Item 4" not in sections["Worth a look"]
    assert "| 0.500 | 0.050 |" in sections["Worth a look"]  # three decimals beside 0.55
    assert "Item 5" in sections["Duplicates merged"] and "Item 2" in sections["Duplicates merged"]
    assert "HTTP 404 for the article page" in sections["Parked errors"]
    assert "Flaky" in sections["Feeds needing attention"]
    assert "HTTP 503" in sections["Feeds needing attention"]
    assert "Healthy" not in sections["Feeds needing attention"]
    assert "below threshold" in sections["Waiting"] and "Item 7" in sections["Waiting"]
    assert "capture" not in sections["Waiting"]
    arrived = sections["Arrived"]
    assert "| clipper | 1 | 0 | 1 |" in arrived
    for absent in ("Item 1", "Item 9"):
        assert absent not in text


@pytest.mark.anyio
async def test_a_day_with_nothing_says_so(workspace: Workspace) -> None:
    async with open_ledger(workspace) as ledger:
        report = await gather_triage_report(workspace, ledger, date(2020, 1, 1), tz=UTC)
    text = render_triage_report(report)
    assert "Nothing arrived this day." in text
    assert "```mermaid" not in text


@pytest.mark.anyio
async def test_report_note_is_written_and_a_hand_edit_is_kept(workspace: Workspace) -> None:
    _, note = await write_triage_report(workspace, DAY, tz=UTC)
    assert note.outcome == "created"
    assert note.path == workspace.vault / "06-daily" / "2026-11-27-triage.md"
    _, again = await write_triage_report(workspace, DAY, tz=UTC)
    assert again.outcome == "unchanged"
    note.path.write_text(note.path.read_text() + "\nMy own remark.\n")
    _, kept = await write_triage_report(workspace, DAY, tz=UTC)
    assert kept.outcome == "kept_edited"
    assert "My own remark." in note.path.read_text()


def test_score_histogram_bins() -> None:
    assert score_histogram([0.0, 0.05, 0.55, 0.99, 1.0]) == [2, 0, 0, 0, 0, 1, 0, 0, 0, 2]


# -- Mermaid: checked with the real parser (tests/mermaid, `npm ci` there) --------------


def _mermaid_parse(diagrams: list[str]) -> list[dict[str, object]]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: cannot run the Mermaid parser")
    if not (MERMAID_DIR / "node_modules" / "mermaid").is_dir():
        pytest.skip("Mermaid parser not installed: run `cd tests/mermaid && npm ci`")
    completed = subprocess.run(
        [node, str(MERMAID_DIR / "check.mjs")],
        input=json.dumps(diagrams),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    results: list[dict[str, object]] = json.loads(completed.stdout)
    return results


def _blocks(markdown: str) -> list[str]:
    return re.findall(r"^```mermaid\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)


@pytest.mark.anyio
async def test_mermaid_blocks_parse_and_the_parser_rejects_broken_ones(
    workspace: Workspace,
) -> None:
    hostile_day = DAY + timedelta(days=5)
    async with open_ledger(workspace) as ledger:
        report = await gather_triage_report(workspace, ledger, DAY, tz=UTC)
        # Labels from the data (a domain here) must not break a chart either.
        [item_id] = await ledger.record([_item(20)], now=_at(hostile_day, 9))
        await ledger.settle(item_id, _item(20))
        await ledger.record_triage(
            item_id, "filed", score=0.8, scores=_scores(0.8), domain='we"b\nx', note_path="a.md"
        )
        hostile = await gather_triage_report(workspace, ledger, hostile_day, tz=UTC)
    blocks = _blocks(render_triage_report(report))
    assert len(blocks) == 3
    hostile_blocks = _blocks(render_triage_report(hostile))
    broken = [
        blocks[0].replace(" : ", " ", 1),  # a pie slice without its colon
        blocks[1].replace("]", "", 1),  # an x-axis list never closed
        blocks[2].replace("bar [", "bar ", 1),  # a bar series without brackets
    ]
    # One node process for all of them: loading Mermaid takes a few seconds.
    results = _mermaid_parse(blocks + hostile_blocks + broken)
    n = len(blocks) + len(hostile_blocks)
    assert [r["ok"] for r in results] == [True] * n + [False] * 3, results
    assert [r.get("type") for r in results[:3]] == ["pie", "xychart", "xychart"]


@pytest.mark.anyio
async def test_parked_errors_are_grouped_and_failing_article_pages_are_reported(
    vault: Path,
) -> None:
    ws = resolve_workspace(vault)
    async with open_ledger(ws) as ledger:
        for n in range(69):
            [item_id] = await ledger.record([_item(100 + n)], now=_at(DAY, 9))
            await ledger.park(item_id, f"HTTP 404 fetching article https://site.example/a/{n}")
        [other] = await ledger.record([_item(300)], now=_at(DAY, 9))
        await ledger.park(other, "empty item: no text and no link")
        for n, host in enumerate(["a.example", "a.example", "b.example"]):
            teaser = Item(
                source_kind="rss",
                source_id="https://feeds.example/t.xml",
                title=f"Teaser {n}",
                text="Only the teaser.",
                guid=f"urn:teaser:{n}",
                url=f"https://{host}/p/{n}",
                teaser=True,
                extra={"full_text_cause": "timed out"},
            )
            [item_id] = await ledger.record([teaser], now=_at(DAY, 10))
            await ledger.settle(item_id, teaser)
        report = await gather_triage_report(ws, ledger, DAY, tz=UTC)
    sections = _sections(render_triage_report(report))
    parked = sections["Parked errors"]
    rows = [line for line in parked.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 3  # the header and two reasons, not 70 rows
    assert "| 69 |" in parked and "and 66 more" in parked
    feeds = sections["Feeds needing attention"]
    assert "All feeds are healthy" not in feeds
    assert "could not be fetched for 3 of the day's entries, from 2 hosts" in feeds
    assert "timed out at a.example (2 pages)" in feeds
    assert "timed out at b.example (1 page)" in feeds


@pytest.mark.anyio
async def test_feed_times_are_shown_in_the_reports_zone(workspace: Workspace) -> None:
    # The report counts its day in the configured zone; its times are in that zone too
    # (20:00 UTC on the 27th is 09:00 on the 28th in Auckland), not in the machine's.
    from zoneinfo import ZoneInfo

    _report, note = await write_triage_report(workspace, DAY, tz=ZoneInfo("Pacific/Auckland"))
    feeds = _sections(note.path.read_text())["Feeds needing attention"]
    assert "| backoff | 2 | HTTP 503 | 2099-11-28 09:00 |" in feeds


@pytest.mark.anyio
async def test_a_backoff_that_has_run_out_says_the_next_scan_not_a_time_gone_by(
    workspace: Workspace,
) -> None:
    async with open_ledger(workspace) as ledger:
        registry = FeedRegistry(ledger)
        async with ledger.transaction() as conn:
            state = FeedState(
                url="https://feeds.example/flaky.xml",
                title="Flaky",
                error_count=2,
                last_error="HTTP 503",
                next_check_at=_at(DAY, 20),
            )
            await registry.save_state(conn, state.url, state)
    _report, note = await write_triage_report(workspace, DAY, tz=UTC)
    feeds = _sections(note.path.read_text())["Feeds needing attention"]
    assert "| backoff | 2 | HTTP 503 | next scan |" in feeds
    assert "2026-11-27 20:00" not in feeds


def _obsidian_targets(vault: Path, cell: str) -> list[Path]:
    """The notes the links in ``cell`` open, resolved as Obsidian does; what is left of
    the cell must hold no stray link brackets."""
    from urllib.parse import unquote

    cell = cell.replace("\\|", "|")
    found: list[Path] = []
    for wiki in re.findall(r"\[\[(.*?)\]\]", cell):
        # The target ends at the label's bar, a heading's # or a block's ^.
        found.append(vault / (re.split(r"[|#^]", wiki, maxsplit=1)[0] + ".md"))
    for href in re.findall(r"\[[^\[\]]*\]\(([^()\s]+)\)", cell):
        found.append(vault / unquote(href))
    rest = re.sub(r"\[\[.*?\]\]|\[[^\[\]]*\]\([^()\s]+\)", "", cell)
    assert "[[" not in rest and "]]" not in rest, cell
    return found


@pytest.mark.anyio
async def test_every_waiting_notes_link_opens_that_note(workspace: Workspace) -> None:
    inbox = workspace.vault / "00-inbox"
    (inbox / "C# tips.md").write_text("# C# tips\n")
    (inbox / "plan ^2.md").write_text("# Plan\n")
    (inbox / "odd.md").write_text('---\ntitle: "A | B with [[brackets]]"\n---\nText\n')
    _report, note = await write_triage_report(workspace, DAY, tz=UTC)
    rows = [r for r in _sections(note.path.read_text())["Waiting"].splitlines() if "00-inbox/" in r]
    assert len(rows) == 4
    for row in rows:
        cell = row.split(" | ")[0].removeprefix("| ")
        targets = _obsidian_targets(workspace.vault, cell)
        assert len(targets) == 1 and targets[0].is_file(), (row, targets)
    assert any("A \\| B with (brackets)" in r for r in rows)


@pytest.mark.anyio
async def test_worth_a_look_says_why_and_how_to_keep_one(workspace: Workspace) -> None:
    # The person reading "worth a look" decides there: each row says what held the item
    # back, the id `triage accept` takes, and a clipping links to its note in the inbox.
    async with open_ledger(workspace) as ledger:
        report = await gather_triage_report(workspace, ledger, DAY, tz=UTC)
    [near] = report.near_misses
    section = _sections(render_triage_report(report))["Worth a look"]
    assert "`signaldesk triage accept ID`" in section
    [row] = [line for line in section.splitlines() if "Item 3" in line]
    assert "[[Clippings/item-3\\|Item 3]]" in row
    assert f"| {near.id[:10]} |" in row
    assert "relevance 0.50 (test)" in row


@pytest.mark.anyio
async def test_a_rewritten_report_keeps_when_it_was_created(workspace: Workspace) -> None:
    _, note = await write_triage_report(workspace, DAY, tz=UTC)
    first = parse_note(note.path.read_text()).frontmatter
    text = note.path.read_text().replace(str(first["created"]), "2026-11-28T07:00:00+00:00")
    note.path.write_text(text)  # as if written at 07:00 (the body, and so its hash, is as it was)
    async with open_ledger(workspace) as ledger:
        [late] = await ledger.record([_item(8)], now=_at(DAY, 22))
        await ledger.settle(late, _item(8))
    _, again = await write_triage_report(workspace, DAY, tz=UTC)
    assert again.outcome == "updated"
    meta = parse_note(note.path.read_text()).frontmatter
    assert str(meta["created"]) == "2026-11-28T07:00:00+00:00"
    assert meta.get("updated") and str(meta["updated"]) != str(meta["created"])


@pytest.mark.anyio
async def test_waiting_says_what_will_happen_to_each_note(workspace: Workspace) -> None:
    # A clipping dropped since the last scan is picked up by the next one; a note a person
    # put in the inbox is theirs to sort (nothing triages it): "not triaged" fitted neither.
    (workspace.vault / "Clippings" / "fresh.md").write_text("---\ntitle: Fresh clip\n---\nText\n")
    _report, note = await write_triage_report(workspace, DAY, tz=UTC)
    rows = _sections(note.path.read_text())["Waiting"].splitlines()
    [fresh] = [r for r in rows if "Fresh clip" in r]
    [idea] = [r for r in rows if "An idea" in r]
    assert "| not scanned yet (the next scan takes it) |" in fresh
    assert "| yours to file (triage leaves it alone) |" in idea
    assert "not triaged" not in note.path.read_text()


@pytest.mark.anyio
async def test_a_duplicate_clipping_waiting_says_what_it_duplicates(workspace: Workspace) -> None:
    (workspace.vault / "Clippings" / "again.md").write_text("---\ntitle: Again\n---\nText\n")
    again = Item(
        source_kind="clipper",
        source_id="Clippings",
        title="Again",
        text="other words " * 20,
        guid="clipper:Clippings/again.md",
        url="https://site.example/post/2",
        origin_path="Clippings/again.md",
    )
    async with open_ledger(workspace) as ledger:
        [item_id] = await ledger.record([again], now=_at(DAY, 14))
        assert (await ledger.settle(item_id, again)).status == "duplicate"
    _report, note = await write_triage_report(workspace, DAY, tz=UTC)
    [row] = [r for r in _sections(note.path.read_text())["Waiting"].splitlines() if "Again" in r]
    assert "| duplicate of Item 2 |" in row, row


def test_the_weakest_score_is_read_once_for_the_report_and_items() -> None:
    from signaldesk.signal_note import weakest_score

    card = {
        "relevance": {"value": 0.8, "reason": "topic data"},
        "actionability": {"value": 0.12, "reason": "nothing to act on"},
        "depth": {"value": 0.12, "reason": "48 words"},
        "authority": {"value": 0.45},
        "learned": {"value": -0.2, "reason": "you rejected 2 similar items (-0.20)"},
    }
    # Ties go to the first of the four; the learned shift is not one of them.
    assert weakest_score(card) == "actionability 0.12 (nothing to act on)"
    assert weakest_score({"authority": {"value": 0.3}}) == "authority 0.30"
    assert weakest_score({"composite": 0.2}) is None and weakest_score(None) is None


@pytest.mark.anyio
async def test_feeds_with_the_same_title_are_counted_apart(vault: Path) -> None:
    # Trigger: three subscribed feeds titled "Übersicht - Grüße" made one row of the
    # "Arrived" table with all their items.
    ws = resolve_workspace(vault)
    urls = ["https://one.example/feed.xml", "https://two.example/feed.xml"]
    async with open_ledger(ws) as ledger:
        registry = FeedRegistry(ledger)
        for n, url in enumerate([*urls, "https://three.example/atom"], start=1):
            await registry.add(url, title="Blog" if n < 3 else "Other blog")
            [item_id] = await ledger.record([_item(n, source=url)], now=_at(DAY, 8 + n))
            await ledger.settle(item_id, _item(n, source=url))
        report = await gather_triage_report(ws, ledger, DAY, tz=UTC)
    assert {s.source: s.arrived for s in report.by_source} == {
        f"Blog ({urls[0]})": 1,
        f"Blog ({urls[1]})": 1,
        "Other blog": 1,
    }
