"""The keyword lists' top rows without scoring every match (retrieval/bm25_topk.py).

A real vault (common words in most notes, rarer ones in few, several languages'
function words) indexed by the real indexer; every answer is compared with
scoring and sorting every match, which is what the lists did before.
"""

from __future__ import annotations

import heapq
import random
from operator import itemgetter
from pathlib import Path

import pytest

from signaldesk.retrieval import bm25_topk, search_legs
from signaldesk.retrieval.fts_query import build_match, match_phrases
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import SearchSettings
from signaldesk.retrieval.store import Connection, connect, index_db_path
from tests.index_helpers import SETTINGS, real_embedder, write_note

pytestmark = pytest.mark.anyio

COMMON = ["git", "de", "la", "file", "command", "list"]
RARE = [f"word{i}" for i in range(40)]
CHUNK_WEIGHTS = (1.0, 0.5, 0.3)
NOTE_WEIGHTS = (20.0, 15.0, 15.0, 2.0, 3.0, 1.0)
QUERIES = [
    "git",
    "git de la",
    "de la file command list",
    "git word3",
    "word1 word2 de",
    "la word7 word8 word9 command",
    "list word39",
    "nothingmatches git",
    "word5",
]


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("topk") / "vault"
    rng = random.Random(15)
    for i in range(240):
        words: list[str] = []
        for w, share in zip(COMMON, (0.7, 0.6, 0.5, 0.4, 0.3, 0.2), strict=True):
            if rng.random() < share:
                words += [w] * rng.randint(1, 4)
        for w in RARE:
            if rng.random() < 0.03:
                words += [w] * rng.randint(1, 3)
        words += ["filler"] * rng.randint(5, 60)
        rng.shuffle(words)
        title = f"{rng.choice(COMMON)} note {i}"
        body = f"# {title}\n\n## Part\n\n" + " ".join(words) + ".\n"
        write_note(root, f"n{i // 50}/note{i}.md", body, title=title)
    Indexer(root, SETTINGS, real_embedder()).run_sync()
    return root


@pytest.fixture
def conn(vault: Path) -> Connection:
    c = connect(index_db_path(vault, SETTINGS), readonly=True)
    yield c  # type: ignore[misc]
    c.close()


class _Recording:
    """A connection that remembers the SQL it was given, and with what."""

    def __init__(self, inner: Connection) -> None:
        self.inner = inner
        self.sql: list[str] = []
        self.parameters: list[object] = []

    def execute(self, sql: str, parameters: object = ()) -> object:
        self.sql.append(sql)
        self.parameters.append(parameters)
        return self.inner.execute(sql, parameters)


def _matches() -> list[tuple[str, str, list[str]]]:
    """Each of QUERIES with its MATCH expression and that expression's phrases."""
    out = []
    for query in QUERIES:
        match = build_match(query)
        assert match is not None
        out.append((query, match, match_phrases(match)))
    return out


def _every(
    conn: Connection, table: str, match: str, weights: tuple[float, ...]
) -> list[tuple[int, float]]:
    w = ", ".join(repr(x) for x in weights)
    sql = f"SELECT rowid, bm25({table}, {w}) FROM {table} WHERE {table} MATCH ?"
    return [(int(r), float(s)) for r, s in conn.execute(sql, (match,))]


@pytest.mark.parametrize(
    ("table", "weights"), [("chunks_fts", CHUNK_WEIGHTS), ("notes_fts", NOTE_WEIGHTS)]
)
def test_top_rows_equal_sorting_every_match(
    conn: Connection, table: str, weights: tuple[float, ...]
) -> None:
    w = ", ".join(repr(x) for x in weights)
    pruned = 0
    for query, match, phrases in _matches():
        every = _every(conn, table, match, weights)
        for k in (1, 3, 10, 25, 100, 1000):
            expected = heapq.nsmallest(k, every, key=itemgetter(1, 0))
            recording = _Recording(conn)
            got = bm25_topk.top_rows(recording, table, phrases, w, k)  # type: ignore[arg-type]
            assert got == expected, (query, k)
            # Answered from the rarest phrases' rows alone, never sorting every match:
            pruned += not any("ORDER BY" in sql and "+rowid" not in sql for sql in recording.sql)
    assert pruned >= 10  # the bound does cut work here, so the equality above means something


@pytest.mark.parametrize(
    ("table", "weights"), [("chunks_fts", CHUNK_WEIGHTS), ("notes_fts", NOTE_WEIGHTS)]
)
def test_the_first_pass_takes_rarest_phrases_that_outweigh_the_others(
    conn: Connection, table: str, weights: tuple[float, ...]
) -> None:
    # A pass proves its rows only if its k-th score beats what the other phrases could
    # give a row; when the rarest phrases' own bounds do not outweigh those, it seldom
    # does, and it has read every doclist of the query for nothing. (A later pass starts
    # where the failed one's k-th score says it must succeed.)
    w = ", ".join(repr(x) for x in weights)
    rows = bm25_topk.row_count(conn, table)
    assert rows is not None
    passes = 0
    for _, _, phrases in _matches():
        bound = {p: b for b, p, _ in bm25_topk._bounds(conn, table, phrases, rows, None)}
        for k in (1, 3, 10, 25, 100):
            recording = _Recording(conn)
            bm25_topk.top_rows(recording, table, phrases, w, k)  # type: ignore[arg-type]
            first = next(
                (
                    parameters
                    for sql, parameters in zip(recording.sql, recording.parameters, strict=True)
                    if "+rowid IN (SELECT rowid" in sql
                ),
                None,
            )
            if first is not None:
                rarest = str(first[1]).split(" OR ")  # type: ignore[index]
                others = [p for p in bound if p not in rarest]
                assert sum(bound[p] for p in rarest) > sum(bound[p] for p in others)
                passes += 1
    assert passes >= 10  # passes were run, and checked


def test_row_count_is_fts5s_own(conn: Connection) -> None:
    for table in ("chunks_fts", "notes_fts"):
        assert (
            bm25_topk.row_count(conn, table)
            == conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        )


def test_cover_reads_the_same_scores_as_every_match(conn: Connection) -> None:
    match = build_match("git de word3")
    assert match is not None
    every = dict(_every(conn, "chunks_fts", match, CHUNK_WEIGHTS))
    top, relevance = search_legs.bm25_list(conn, match, 5, CHUNK_WEIGHTS, None)
    assert not relevance.complete and len(relevance) < len(every)
    ids = [int(r[0]) for r in conn.execute("SELECT id FROM chunks")]
    relevance.cover(ids)
    assert dict(relevance.items()) == {cid: -raw for cid, raw in every.items()}
    assert top == [
        (cid, -raw) for cid, raw in heapq.nsmallest(5, every.items(), key=itemgetter(1, 0))
    ]


async def test_searches_rank_as_when_every_match_was_scored(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def run() -> list[object]:
        out: list[object] = []
        async with await Retriever.open(vault, SETTINGS, SearchSettings(), real_embedder()) as r:
            for query in QUERIES:
                for mode in ("hybrid", "bm25"):
                    exp = await r.explain(query, mode=mode, limit=20)  # type: ignore[arg-type]
                    out.append(
                        [
                            (row.chunk_id, row.score, row.bm25_score, row.note_score)
                            for row in exp.rows
                        ]
                    )
                    out.append([(x.path, x.score, x.bm25_rank, x.note_rank) for x in exp.results])
        return out

    pruned = await run()
    monkeypatch.setattr(bm25_topk, "top_rows", lambda *args: None)  # every match scored
    assert pruned == await run()


def test_known_counts_give_the_same_rows_without_counting_again(conn: Connection) -> None:
    w = ", ".join(repr(x) for x in CHUNK_WEIGHTS)
    counts: bm25_topk.Counts = {}
    for query, _, phrases in _matches():
        first = _Recording(conn)
        filled = bm25_topk.top_rows(first, "chunks_fts", phrases, w, 10, counts)  # type: ignore[arg-type]
        again = _Recording(conn)
        known = bm25_topk.top_rows(again, "chunks_fts", phrases, w, 10, counts)  # type: ignore[arg-type]
        assert known == filled == bm25_topk.top_rows(conn, "chunks_fts", phrases, w, 10)
        assert any("count(*)" in sql for sql in first.sql)
        assert not any("count(*)" in sql for sql in again.sql), query
    assert counts[("chunks_fts", '"git"')] == int(
        conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH '\"git\"'").fetchone()[
            0
        ]
    )


def test_each_commit_has_counts_of_its_own() -> None:
    counts = bm25_topk.PhraseCounts(limit=3)
    first = counts.for_commit("a:1")
    assert first is not None and counts.for_commit("a:1") is first
    first[("chunks_fts", '"git"')] = 5
    second = counts.for_commit("a:2")
    assert second == {} and second is not first and first == {("chunks_fts", '"git"'): 5}
    assert counts.for_commit(None) is None  # an index without a commit token: count
    second.update({("t", str(i)): i for i in range(3)})
    assert counts.for_commit("a:2") == {}  # full: started over


async def test_a_searcher_sees_new_counts_after_a_commit(tmp_path: Path) -> None:
    # "alpha" alone holds enough rows to bound "git" (in nearly every note) away, so the
    # top rows are read from the rows holding the rarer phrases only.
    root = tmp_path / "vault"
    for i in range(300):
        words = ["git"] * (1 + i % 3) if i < 280 else ["filler"]
        words += ["alpha"] * (1 + i % 2) if i % 5 < 2 else []
        write_note(root, f"n/note{i}.md", f"# Note {i}\n\n{' '.join(words)} text.\n")
    Indexer(root, SETTINGS, real_embedder()).run_sync()

    async def ranked(r: Retriever) -> list[object]:
        exp = await r.explain("alpha git zebra", limit=10, mode="bm25")
        return [(row.chunk_id, row.score, row.bm25_score, row.note_score) for row in exp.rows]

    async with await Retriever.open(root, SETTINGS, SearchSettings(), real_embedder()) as warm:
        await ranked(warm)  # remembers this commit's counts: no row holds "zebra"
        for i in range(3):  # now a few do, and they are the best rows for the query
            write_note(root, f"m/zebra{i}.md", f"# Zebra {i}\n\nzebra zebra stripes.\n")
        Indexer(root, SETTINGS, real_embedder()).run_sync()
        after = await ranked(warm)
        shown = [r.path for r in (await warm.explain("alpha git zebra", mode="bm25")).results]
    async with await Retriever.open(root, SETTINGS, SearchSettings(), real_embedder()) as fresh:
        assert after == await ranked(fresh)
    assert shown[0].startswith("m/zebra")
