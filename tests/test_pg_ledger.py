"""The item ledger on PostgreSQL: claims between workers, and a killed worker's claims.

Everything runs against a real server (the ``postgres`` fixture); two workers are two
ledgers open at once (two connections), or another process killed with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from signaldesk.items import Item
from signaldesk.pipeline.intake.feeds import FeedRegistry
from signaldesk.pipeline.ledger.pg_schema import COMPONENT, MIGRATIONS, WORKER_LOCK_SPACE
from signaldesk.pipeline.ledger.pg_store import PostgresLedger
from signaldesk.postgres import PostgresSettings, connect, schema_version
from signaldesk.sources.rss import FeedState
from tests.intake_data import article_text

pytestmark = pytest.mark.anyio

_REPO = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _item(n: int) -> Item:
    return Item(
        source_kind="rss",
        source_id="https://feeds.example/a.xml",
        title=f"Post {n}",
        text=article_text(n),
        guid=f"https://example.com/p/{n}",
        url=f"https://example.com/p/{n}",
    )


async def test_migrations_are_versioned_and_run_once(postgres: PostgresSettings) -> None:
    async with PostgresLedger.open(postgres):
        pass
    async with PostgresLedger.open(postgres) as ledger:  # a second worker: nothing re-applied
        assert await ledger.entries() == []
    with connect(postgres) as conn:
        assert schema_version(conn, COMPONENT) == len(MIGRATIONS)


async def test_an_item_is_inserted_once_whichever_worker_sees_it(
    postgres: PostgresSettings,
) -> None:
    async with PostgresLedger.open(postgres) as a, PostgresLedger.open(postgres) as b:
        items = [_item(n) for n in range(20)]

        async def record(ledger: PostgresLedger, found: list[str]) -> None:
            found += await ledger.record(items, now=NOW)

        from_a: list[str] = []
        from_b: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(record, a, from_a)
            tg.start_soon(record, b, from_b)
        assert sorted(from_a + from_b) == sorted(set(from_a + from_b))
        assert len(from_a) + len(from_b) == 20
        assert len(await a.entries()) == 20


async def test_a_live_workers_items_are_not_taken(postgres: PostgresSettings) -> None:
    async with PostgresLedger.open(postgres) as a:
        ids = await a.record([_item(n) for n in range(3)], now=NOW)
        async with PostgresLedger.open(postgres) as b:
            # A is at work on them (it inserted them): B neither resumes nor claims them.
            assert await b.in_flight() == []
            assert await b.claim_items(ids) == set()
            [extra] = await b.record([_item(9)], now=NOW)
            assert await a.claim_items([*ids, extra]) == set(ids)
        # B is gone (its connection closed): its item is free for A.
        assert await a.claim_items([extra]) == {extra}
    async with PostgresLedger.open(postgres) as c:
        # Both gone: everything in flight is resumed by the next worker, oldest first.
        assert {e.id for e in await c.in_flight()} == {*ids, extra}


async def test_claiming_skips_rows_locked_by_another_transaction(
    postgres: PostgresSettings,
) -> None:
    async with PostgresLedger.open(postgres) as a, PostgresLedger.open(postgres) as b:
        ids = await a.record([_item(n) for n in range(4)], now=NOW)
        async with a.transaction() as cursor:
            await cursor.execute("UPDATE items SET claimed_by = NULL WHERE id = ANY(%s)", [ids])
        async with a.transaction() as cursor:
            # A holds row locks on the first two (a transaction in progress): B's claim
            # does not wait for them (SKIP LOCKED), it takes the others.
            await cursor.execute("SELECT id FROM items WHERE id = ANY(%s) FOR UPDATE", [ids[:2]])
            with anyio.fail_after(30):  # a guard against a hang, not a timing assertion
                assert await b.claim_items(ids) == set(ids[2:])
        assert await b.claim_items(ids) == set(ids)


async def test_feeds_are_claimed_once_per_round(postgres: PostgresSettings) -> None:
    async with PostgresLedger.open(postgres) as a, PostgresLedger.open(postgres) as b:
        registry = FeedRegistry(a)
        urls = [f"https://feeds.example/{n}.xml" for n in range(4)]
        for url in urls:
            await registry.add(url, now=NOW)
        assert await a.claim_feeds(urls[:2], due=NOW) == set(urls[:2])
        assert await b.claim_feeds(urls, due=NOW) == set(urls[2:])
        # A polls its first feed: due again only in an hour.
        async with a.write() as tx:
            await registry.save_state(
                tx, urls[0], FeedState(url=urls[0], next_check_at=NOW + timedelta(hours=1))
            )
    async with PostgresLedger.open(postgres) as c:
        # A and B are gone: what they held is free, but a polled feed is not due again.
        assert await c.claim_feeds(urls, due=NOW) == set(urls[1:])
        assert await c.claim_feeds(urls, due=None) == set(urls)  # a forced round


async def test_dedupe_across_workers_settles_one_copy(postgres: PostgresSettings) -> None:
    async with PostgresLedger.open(postgres) as a, PostgresLedger.open(postgres) as b:
        # The same article from two feeds, one seen by each worker at the same moment.
        first = _item(1)
        second = Item(
            source_kind="rss",
            source_id="https://feeds.example/other.xml",
            title="Post 1 (mirror)",
            text=first.text,
            guid="mirror-1",
            url="https://www.example.com/p/1?utm_source=x",
        )
        [fa] = await a.record([first], now=NOW)
        [sb] = await b.record([second], now=NOW)
        verdicts = []

        async def settle(ledger: PostgresLedger, item_id: str, item: Item) -> None:
            verdicts.append(await ledger.settle(item_id, item, now=NOW))

        async with anyio.create_task_group() as tg:
            tg.start_soon(settle, a, fa, first)
            tg.start_soon(settle, b, sb, second)
        assert sorted(v.status for v in verdicts) == ["duplicate", "pending"]


_CHILD = """
import sys, anyio
from datetime import UTC, datetime
from signaldesk.items import Item
from signaldesk.pipeline.intake.feeds import FeedRegistry
from signaldesk.pipeline.ledger.pg_store import PostgresLedger
from signaldesk.postgres import PostgresSettings

async def main() -> None:
    settings = PostgresSettings(dsn=sys.argv[1])
    async with PostgresLedger.open(settings) as ledger:
        now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
        items = [Item(source_kind="rss", source_id="f", title=f"t{n}", text="x",
                      guid=f"https://example.com/k/{n}") for n in range(5)]
        await ledger.record(items, now=now)
        await FeedRegistry(ledger).add("https://feeds.example/k.xml", now=now)
        await ledger.claim_feeds(["https://feeds.example/k.xml"], due=now)
        print(ledger.token, flush=True)
        await anyio.sleep_forever()

anyio.run(main)
"""


async def test_a_killed_workers_claims_are_taken_over(postgres: PostgresSettings) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, postgres.dsn],
        stdout=subprocess.PIPE,
        text=True,
        cwd=_REPO,
        env={**os.environ, "PYTHONPATH": str(_REPO)},
    )
    try:
        assert child.stdout is not None
        token = int(await anyio.to_thread.run_sync(child.stdout.readline))
        async with PostgresLedger.open(postgres) as survivor:
            assert await survivor.in_flight() == []  # the child is alive and at work
            assert await survivor.claim_feeds(["https://feeds.example/k.xml"], due=NOW) == set()
            child.send_signal(signal.SIGKILL)
            child.wait()
            # The server ends the dead session when its socket closes; taking the dead
            # worker's lock waits for exactly that (no sleeping, no clock).
            async with survivor.transaction() as cursor:
                await cursor.execute(
                    "SELECT pg_advisory_xact_lock(%s, %s)", (WORKER_LOCK_SPACE, token)
                )
            resumed = await survivor.in_flight()
            assert len(resumed) == 5 and {e.status for e in resumed} == {"discovered"}
            assert await survivor.claim_feeds(["https://feeds.example/k.xml"], due=NOW) == {
                "https://feeds.example/k.xml"
            }
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()


async def test_a_nul_in_a_hostile_entry_does_not_fail_its_batch(
    postgres: PostgresSettings,
) -> None:
    async with PostgresLedger.open(postgres) as ledger:
        hostile = Item(
            source_kind="rss",
            source_id="https://feeds.example/a.xml",
            title="Bad\x00title",
            text="body\x00text",
            guid="https://example.com/nul",
            url="https://example.com/nul",
        )
        ids = await ledger.record([hostile, _item(1)], now=NOW)
        assert len(ids) == 2
        entry = await ledger.get(ids[0])
        assert entry is not None and entry.item.text == "body\x00text"  # the payload keeps it
