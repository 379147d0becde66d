"""The chunks' positions held in memory (retrieval/chunk_keys.py) against the SQL they replace.

A real vault indexed by the real indexer; a commit in between must retire the
held positions (a search on the new snapshot never sees the old ones).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from signaldesk.retrieval import chunk_keys, search_legs
from signaldesk.retrieval.chunk_keys import ChunkKeyIndex, ChunkKeys
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import SearchSettings
from signaldesk.retrieval.store import connect, index_db_path
from signaldesk.retrieval.vector_cache import cache_token
from tests.index_helpers import SETTINGS, real_embedder, section, write_note

pytestmark = pytest.mark.anyio


def _vault(root: Path, notes: int) -> Path:
    vault = root / "vault"
    for i in range(notes):
        body = "".join(section(f"Part {j}", f"topic{i} words{j} shared") for j in range(1 + i % 3))
        write_note(vault, f"f{i % 4}/n{i}.md", f"# Note {i}\n\n{body}", title=f"Note {i}")
    Indexer(vault, SETTINGS, real_embedder()).run_sync()
    return vault


def test_the_held_positions_equal_the_sql(tmp_path: Path) -> None:
    vault = _vault(tmp_path, 30)
    conn = connect(index_db_path(vault, SETTINGS), readonly=True)
    try:
        token = cache_token(conn)
        assert token is not None
        index = ChunkKeyIndex.read(conn, token)
        ids = [int(r[0]) for r in conn.execute("SELECT id FROM chunks")]
        notes = [int(r[0]) for r in conn.execute("SELECT id FROM notes")]
        assert len(ids) > len(notes)  # several notes have several chunks
        asked = [*reversed(ids[::3]), ids[0], ids[0], max(ids) + 100]  # unordered, twice, missing
        for got, expected in (
            (index.chunk_keys(asked), search_legs.chunk_keys(conn, asked)),
            (index.chunk_keys([]), search_legs.chunk_keys(conn, [])),
            (
                index.note_chunks([notes[5], notes[1], 10**6]),
                search_legs.note_chunks(conn, [notes[5], notes[1], 10**6]),
            ),
        ):
            assert got == expected
            assert list(got) == list(expected)  # and in the same order
    finally:
        conn.close()


def test_a_commit_retires_the_held_positions(tmp_path: Path) -> None:
    vault = _vault(tmp_path, 6)
    keys = ChunkKeys()
    db = index_db_path(vault, SETTINGS)
    conn = connect(db, readonly=True)
    try:
        for _ in range(chunk_keys._LOAD_AFTER - 1):  # a commit's first searches ask SQL
            assert keys.index_for(conn) is None
        first = keys.index_for(conn)
        assert first is not None and keys.index_for(conn) is first
    finally:
        conn.close()
    write_note(vault, "f9/new.md", "# New\n\n" + section("New", "fresh words"), title="New")
    Indexer(vault, SETTINGS, real_embedder()).run_sync()
    conn = connect(db, readonly=True)
    try:
        # Another commit: SQL again, never the old positions, until it is read anew.
        for _ in range(chunk_keys._LOAD_AFTER - 1):
            assert keys.index_for(conn) is None
        second = keys.index_for(conn)
        assert second is not None and second.token != first.token
        assert set(second.paths.values()) == set(first.paths.values()) | {"f9/new.md"}
    finally:
        conn.close()


async def test_searches_rank_the_same_from_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = _vault(tmp_path, 30)
    queries = ["topic3 shared", "words1", "Note 7", "shared words2 topic11"]

    async def run() -> list[object]:
        async with await Retriever.open(vault, SETTINGS, SearchSettings(), real_embedder()) as r:
            await r.warm_up()
            out: list[object] = []
            for q in queries:
                exp = await r.explain(q)
                out.append([(row.chunk_id, row.score, row.path, row.ordinal) for row in exp.rows])
            return out

    held = await run()
    monkeypatch.setattr(ChunkKeys, "index_for", lambda self, conn, load=False: None)
    assert held == await run()


async def test_a_warm_server_has_built_its_whole_tokenizer(tmp_path: Path) -> None:
    # A process's first text embedded alone gets a tokenizer cut down to it (for a
    # one-shot search); a server's warm-up must embed a batch so that its first request
    # does not build the whole tokenizer.
    from tests.index_helpers import CountingEmbedder

    vault = _vault(tmp_path, 3)
    counting = CountingEmbedder(real_embedder())
    async with await Retriever.open(vault, SETTINGS, SearchSettings(), counting) as r:
        await r.warm_up()
    assert len(counting.texts) > counting.calls  # some call embedded more than one text
