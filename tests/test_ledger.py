"""The item ledger: identity, idempotent recording, statuses, dedupe, migrations."""

from __future__ import annotations

import dataclasses
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from signaldesk.items import Item
from signaldesk.pipeline.errors import LedgerError
from signaldesk.pipeline.ledger.clippings import FINGERPRINT_KEY, resolve_clipping
from signaldesk.pipeline.ledger.schema import SCHEMA_VERSION
from signaldesk.pipeline.ledger.store import (
    Ledger,
    global_guid,
    item_from_json,
    item_identity,
    item_to_json,
)
from tests.conftest import LedgerOpener
from tests.intake_data import article_text

pytestmark = pytest.mark.anyio

BODY = article_text(1)


def _item(**kw: object) -> Item:
    base: dict[str, object] = {
        "source_kind": "rss",
        "source_id": "https://feeds.example/a.xml",
        "title": "A post",
        "text": BODY,
        "guid": "https://example.com/p/1",
        "url": "https://example.com/p/1",
    }
    base.update(kw)
    return Item(**base)  # type: ignore[arg-type]


def test_payload_round_trip() -> None:
    item = _item(
        published=datetime(2026, 1, 2, 3, 4, tzinfo=UTC), tags=("a", "b"), extra={"k": [1, 2]}
    )
    assert item_from_json(item_to_json(item)) == item


def test_identity_is_stable_and_scoped() -> None:
    assert item_identity(_item()) == item_identity(_item(title="changed", text="changed"))
    assert item_identity(_item()) != item_identity(_item(source_id="https://other/feed"))
    no_guid = _item(guid=None, url="https://example.com/p/1?utm_source=x")
    assert item_identity(no_guid) == item_identity(_item(guid=None, url="https://example.com/p/1"))


def test_global_guid_only_for_globally_unique_ids() -> None:
    assert global_guid(_item(guid="42")) is None
    assert global_guid(_item(guid="tag:example.com,2026:1")) == "tag:example.com,2026:1"
    mail = _item(source_kind="newsletter", guid="<ABC@mail.example>")
    assert global_guid(mail) == "abc@mail.example"
    assert global_guid(_item(source_kind="clipper", guid="Clippings/x.md")) is None


async def test_schema_created_and_versioned(tmp_path: Path) -> None:
    path = tmp_path / "state" / "ledger.db"
    async with Ledger.open(path):
        pass
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"items", "feeds", "simhash_bands", "meta"} <= tables
    async with Ledger.open(path) as ledger:  # re-open: no migration runs twice
        assert await ledger.entries() == []


async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(LedgerError, match="newer"):
        async with Ledger.open(path):
            pass


async def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(LedgerError, match="is damaged") as info:
        async with Ledger.open(path):
            pass
    assert info.value.hint and "move it aside" in info.value.hint


async def test_recording_twice_adds_nothing(open_any_ledger: LedgerOpener) -> None:
    async with open_any_ledger() as ledger:
        first = await ledger.record([_item(), _item(guid="https://example.com/p/2")])
        again = await ledger.record([_item(), _item(guid="https://example.com/p/2")])
        assert len(first) == 2 and again == []
        assert await ledger.in_flight(kinds=["clipper"]) == []  # only the kinds asked for
        assert {e.status for e in await ledger.in_flight(kinds=["rss"])} == {"discovered"}


async def test_concurrent_writers_do_not_interleave(open_any_ledger: LedgerOpener) -> None:
    async with open_any_ledger() as ledger:

        async def writer(n: int) -> None:
            for i in range(10):
                await ledger.record([_item(guid=f"https://example.com/{n}/{i}")])

        async with anyio.create_task_group() as tg:
            for n in range(20):
                tg.start_soon(writer, n)
        assert len(await ledger.entries()) == 200


async def test_settle_dedupes_by_guid_url_and_text(open_any_ledger: LedgerOpener) -> None:
    async with open_any_ledger() as ledger:
        original = _item()
        [oid] = await ledger.record([original])
        assert (await ledger.settle(oid, original)).status == "pending"

        by_url = _item(
            source_kind="clipper",
            source_id="Clippings",
            guid="Clippings/a.md",
            url="https://www.example.com/p/1/?utm_campaign=z",
            text="short clipping",
        )
        [cid] = await ledger.record([by_url], status="fetched")
        verdict = await ledger.settle(cid, by_url)
        assert (verdict.status, verdict.duplicate_of, verdict.matched_on) == (
            "duplicate",
            oid,
            "url",
        )

        by_text = _item(
            source_kind="tool_output",
            source_id="drop",
            guid="drop/x.md",
            url=None,
            text="Copied from a chat:\n\n" + BODY,
        )
        [tid] = await ledger.record([by_text], status="fetched")
        verdict = await ledger.settle(tid, by_text)
        assert (verdict.status, verdict.matched_on) == ("duplicate", "simhash")

        mail = _item(
            source_kind="newsletter", source_id="inbox", guid="<m1@x>", url=None, text="hi"
        )
        [m1] = await ledger.record([mail], status="fetched")
        assert (await ledger.settle(m1, mail)).status == "pending"
        same_mail = _item(
            source_kind="newsletter", source_id="mbox", guid="<M1@x>", url=None, text="hi"
        )
        [m2] = await ledger.record([same_mail], status="fetched")
        verdict = await ledger.settle(m2, same_mail)
        assert (verdict.status, verdict.duplicate_of, verdict.matched_on) == (
            "duplicate",
            m1,
            "guid",
        )

        different = _item(
            guid="https://example.com/p/9", url="https://example.com/p/9", text="x " * 50
        )
        [did] = await ledger.record([different])
        assert (await ledger.settle(did, different)).status == "pending"
        assert [e.id for e in await ledger.duplicates_of(oid)] == [cid, tid]
        assert await ledger.in_flight() == []


async def test_park_and_failures(open_any_ledger: LedgerOpener) -> None:
    async with open_any_ledger() as ledger:
        [iid] = await ledger.record([_item()])
        assert await ledger.record_failure(iid, "timed out") == 1
        assert await ledger.record_failure(iid, "timed out") == 2
        entry = await ledger.get(iid)
        assert (
            entry is not None and entry.status == "discovered" and entry.last_error == "timed out"
        )
        await ledger.park(iid, "HTTP 404")
        entry = await ledger.get(iid)
        assert entry is not None and (entry.status, entry.last_error) == ("parked", "HTTP 404")

        loc_id, new = await ledger.park_location(
            "clipper", "Clippings", "Clippings/bad.md", "binary"
        )
        assert new
        again_id, new_again = await ledger.park_location(
            "clipper", "Clippings", "Clippings/bad.md", "binary"
        )
        assert (again_id, new_again) == (loc_id, False)
        parked = await ledger.entries(status="parked")
        assert {e.id for e in parked} == {iid, loc_id}
        with pytest.raises(LedgerError, match="unknown item status"):
            await ledger.entries(status="nope")


async def test_triage_seam_records_outcome(open_any_ledger: LedgerOpener) -> None:
    async with open_any_ledger() as ledger:
        item = _item()
        [iid] = await ledger.record([item])
        await ledger.settle(iid, item)
        await ledger.record_triage(
            iid,
            "filed",
            score=0.8,
            scores={"relevance": 0.9},
            domain="programming",
            note_path="05-signals/a.md",
        )
        entry = await ledger.get(iid)
        assert entry is not None
        assert (entry.status, entry.score, entry.domain, entry.note_path) == (
            "filed",
            0.8,
            "programming",
            "05-signals/a.md",
        )
        assert entry.scores == {"relevance": 0.9}
        # A filed item still counts as the original for later copies.
        copy = _item(source_kind="clipper", source_id="Clippings", guid="Clippings/c.md")
        [cid] = await ledger.record([copy], status="fetched")
        assert (await ledger.settle(cid, copy)).duplicate_of == iid


async def test_copies_within_one_batch_are_one_item(open_any_ledger: LedgerOpener) -> None:
    async with open_any_ledger() as ledger:
        feed = _item()
        clip = _item(
            source_kind="clipper", source_id="Clippings", guid="Clippings/x.md", text="clip"
        )
        other = _item(guid="https://example.com/p/2", url="https://example.com/p/2", text="o" * 9)
        ids = await ledger.record([feed, clip, other], status="fetched")
        verdicts = await ledger.settle_many(list(zip(ids, [feed, clip, other], strict=True)))
        assert [v.status for v in verdicts] == ["pending", "duplicate", "pending"]
        assert verdicts[1].duplicate_of == ids[0]
        assert await ledger.settle_many([]) == []


async def test_clipping_identity_follows_the_path_until_triage_frees_it(
    open_any_ledger: LedgerOpener,
) -> None:
    def clip(path: str, fingerprint: str, url: str | None = "https://example.com/a") -> Item:
        # As the clipper adapter reads a file: the guid is the path.
        item = _item(source_kind="clipper", source_id="Clippings", guid=f"clipper:{path}", url=url)
        return resolve_clipping(dataclasses.replace(item, origin_path=path), fingerprint, claims)

    async with open_any_ledger() as ledger:
        claims = await ledger.clipping_claims()
        first = clip("Clippings/a.md", "f1" * 32)
        assert first.guid == "clipper:Clippings/a.md"  # the first one keeps the plain guid
        assert first.extra[FINGERPRINT_KEY] == "f1" * 32
        [first_id] = await ledger.record([first], status="fetched")
        await ledger.settle(first_id, first)
        claims = await ledger.clipping_claims()
        # Read again, or edited before triage (other bytes, even another source): the same item.
        assert item_identity(clip("Clippings/a.md", "f1" * 32)) == first_id
        assert item_identity(clip("Clippings/a.md", "f2" * 32, "https://x.example/")) == first_id

        # Rejected, it stays in the inbox: an edit is the same item, another page is not.
        await ledger.record_triage(first_id, "rejected", score=0.1)
        claims = await ledger.clipping_claims()
        assert item_identity(clip("Clippings/a.md", "f2" * 32)) == first_id
        other_page = clip("Clippings/a.md", "f3" * 32, "https://other.example/b")
        assert item_identity(other_page) != first_id
        assert other_page.guid == "clipper:Clippings/a.md@" + "f3" * 8

        # Filed where it is (`leave`) holds the path too; moved away frees it.
        await ledger.record_triage(first_id, "filed", note_path="Clippings/a.md")
        claims = await ledger.clipping_claims()
        assert item_identity(clip("Clippings/a.md", "f2" * 32)) == first_id
        await ledger.record_triage(first_id, "filed", note_path="05-signals/web/a.md")
        claims = await ledger.clipping_claims()
        second = clip("Clippings/a.md", "f4" * 32)
        assert item_identity(second) != first_id
        # The original bytes seen again (e.g. the inbox copy of a `copy`) are still the first.
        assert item_identity(clip("Clippings/a.md", "f1" * 32)) == first_id
        [second_id] = await ledger.record([second], status="fetched")
        claims = await ledger.clipping_claims()
        assert [c.item_id for c in claims["Clippings/a.md"]] == [first_id, second_id]
        # The second generation, pending, now holds the path for its own edits.
        assert item_identity(clip("Clippings/a.md", "f5" * 32)) == second_id
        # A file that could not be read is parked by location: it claims no clipping.
        await ledger.park_location("clipper", "Clippings", "Clippings/b.md", "binary")
        assert "Clippings/b.md" not in await ledger.clipping_claims()


async def test_ledgers_opened_at_once_on_a_new_file_all_open(tmp_path: Path) -> None:
    """Jobs of one serve opening a new ledger together: switching the file to WAL waits
    for the others, and each migration step is taken under the write lock with the
    version read again there. One round of three failed about one time in twenty before
    the WAL switch waited, so the test runs twenty rounds of four."""
    for round_ in range(20):
        path = tmp_path / f"ledger-{round_}.db"
        opened: list[int] = []

        async def open_one(path: Path = path, opened: list[int] = opened) -> None:
            async with Ledger.open(path) as ledger:
                opened.append(int(await ledger.status_counts() == {}))

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(open_one)
        assert opened == [1] * 4
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()


async def test_a_step_another_process_applied_meanwhile_is_not_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from signaldesk.pipeline.ledger import store

    path = tmp_path / "ledger.db"
    async with Ledger.open(path):
        pass  # migrated by "the other process"
    real = store._user_version
    reads: list[int] = []

    async def stale_first(conn: object) -> int:
        # What this process read before the other one committed its migrations.
        reads.append(0)
        return 0 if len(reads) <= 2 else await real(conn)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "_user_version", stale_first)
    async with Ledger.open(path) as ledger:  # "table meta already exists" before the fix
        assert await ledger.status_counts() == {}
    assert len(reads) >= 3  # the version was read again inside the transaction
