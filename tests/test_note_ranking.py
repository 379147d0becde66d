"""Note-aware ranking: whole notes are ranked, shown by their best chunk.

Real vaults in temporary folders, the real indexer and the bundled model.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from signaldesk.retrieval.budget import CHARS_PER_TOKEN, MIN_EXCERPT_CHARS, fit_all
from signaldesk.retrieval.embedder import Embedder, load_embedder
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.note_rank import (
    NoteCandidate,
    NoteParams,
    fuse_notes,
    note_sort_key,
    recency_factor,
)
from signaldesk.retrieval.ranking import NOTES_NOT_READY
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.retrieval.store import connect

pytestmark = pytest.mark.anyio

# A "list note" in the style of the Obsidian Hub's category pages: one line per
# plugin, so every chunk of it contains most words of any plugin question.
LIST_LINES = "\n".join(
    f"- [[plugin-{i}|Plugin {i}]]: sync, backup and export your vault notes with tool {i}."
    for i in range(400)
)

NOTES = {
    "lists/All plugins.md": f"# All plugins\n\nEvery plugin of the community.\n\n{LIST_LINES}\n",
    "plugins/obsidian-git.md": (
        "---\naliases:\n- Obsidian Git\n---\n# Obsidian Git\n\nBackup your vault with git.\n"
    ),
    "plugins/calendar.md": "# Calendar\n\nA calendar view of your daily notes.\n",
    "guides/Dataview.md": "# Dataview\n\nQueries over your notes' metadata.\n",
    "guides/queries.md": (
        "# Query tricks\n\n"
        + "Dataview tables, dataview lists and dataview tasks: dataview everywhere. " * 8
        + "\n"
    ),
    "people/denolehov.md": (
        "---\naliases:\n- Denis Olehov\n---\n# Denis Olehov\n\n## Author of\n\n- [[obsidian-git]]\n"
    ),
}


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return load_embedder(IndexSettings())


def _settings(vault: Path) -> IndexSettings:
    return IndexSettings(db_path=str(vault.parent / "index.db"))


def _write(vault: Path, notes: dict[str, str]) -> None:
    for rel, text in notes.items():
        target = vault / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


@pytest.fixture
async def vault(tmp_path: Path, embedder: Embedder) -> Path:
    root = tmp_path / "vault"
    _write(root, NOTES)
    await Indexer(root, _settings(root), embedder).run()
    return root


async def _paths(
    vault: Path,
    embedder: Embedder | None,
    query: str,
    search: SearchSettings | None = None,
    **kwargs: object,
) -> list[str]:
    async with await Retriever.open(
        vault, _settings(vault), search or SearchSettings(), embedder
    ) as retriever:
        results = await retriever.search(query, limit=5, **kwargs)  # type: ignore[arg-type]
    return [r.path for r in results]


async def test_a_huge_list_note_does_not_crowd_out_the_answer(
    vault: Path, embedder: Embedder
) -> None:
    for mode in ("hybrid", "bm25"):
        paths = await _paths(vault, embedder, "backup my vault with git", mode=mode)
        assert paths[0] == "plugins/obsidian-git.md", (mode, paths)
        # One result per note: the list note's many matching chunks count once.
        assert len(paths) == len(set(paths))


async def test_a_list_note_still_ranks_when_the_question_is_about_it(
    vault: Path, embedder: Embedder
) -> None:
    paths = await _paths(vault, embedder, "every plugin of the community")
    assert paths[0] == "lists/All plugins.md"


async def test_an_exact_title_alias_or_file_name_is_the_top_result(
    vault: Path, embedder: Embedder
) -> None:
    # "Query tricks" says dataview ten times; the note titled Dataview still wins.
    assert (await _paths(vault, embedder, "Dataview"))[0] == "guides/Dataview.md"
    assert (await _paths(vault, embedder, "dataview!"))[0] == "guides/Dataview.md"
    # An alias, and a file name whatever its punctuation and case.
    assert (await _paths(vault, embedder, "denis olehov"))[0] == "people/denolehov.md"
    assert (await _paths(vault, embedder, "Obsidian-Git"))[0] == "plugins/obsidian-git.md"
    # Without the bonus the repeated word may win: the boost is what decides.
    no_boost = SearchSettings(exact_title_boost=0.0, note_weight=0.0)
    assert (await _paths(vault, embedder, "Dataview", no_boost, mode="bm25"))[0] == (
        "guides/queries.md"
    )


async def test_keyword_only_without_a_model_is_still_note_aware(vault: Path) -> None:
    async with await Retriever.open(vault, _settings(vault), SearchSettings(), None) as retriever:
        explained = await retriever.explain("backup my vault with git", limit=3)
    assert explained.mode == "bm25"
    assert explained.results[0].path == "plugins/obsidian-git.md"
    assert explained.results[0].note_rank == 1
    assert NOTES_NOT_READY not in explained.degraded
    row = explained.rows[0]
    assert row.note_score is not None and row.vector_score is None


async def test_recency_is_off_by_default_and_favours_recent_notes_when_on(
    tmp_path: Path, embedder: Embedder
) -> None:
    root = tmp_path / "vault"
    today = datetime.now(UTC).date()
    body = "# Heron sighting\n\nA grey heron stood by the canal at dawn.\n"
    _write(
        root,
        {
            "a-old.md": f"---\nupdated: {today - timedelta(days=800)}\n---\n{body}",
            "b-new.md": f"---\nupdated: {today - timedelta(days=2)}\n---\n{body}",
        },
    )
    await Indexer(root, _settings(root), embedder).run()
    # Identical notes: with recency off they tie, and the path decides.
    assert (await _paths(root, embedder, "grey heron canal"))[:2] == ["a-old.md", "b-new.md"]
    recent = SearchSettings(recency_weight=0.2, recency_half_life_days=30)
    assert (await _paths(root, embedder, "grey heron canal", recent))[:2] == [
        "b-new.md",
        "a-old.md",
    ]
    async with await Retriever.open(root, _settings(root), recent, embedder) as retriever:
        rows = (await retriever.explain("grey heron canal")).rows
    by_path = {r.path: r.recency for r in rows}
    assert by_path["b-new.md"] > 0.9 > 0.01 > by_path["a-old.md"]


async def test_an_index_from_before_note_ranking_is_upgraded_by_the_indexer(
    vault: Path, embedder: Embedder
) -> None:
    # Make the index look like one written by the previous version: schema v2,
    # index format 3, no note-level tables.
    conn = connect(Path(_settings(vault).db_path))
    conn.isolation_level = None
    conn.execute("DROP TRIGGER notes_fts_delete")
    conn.execute("DROP TABLE notes_fts")
    conn.execute("DROP TABLE note_keys")
    conn.execute("UPDATE meta SET value = '3:1800:200:800' WHERE key = 'index_format'")
    conn.execute("PRAGMA user_version = 2")
    conn.close()
    async with await Retriever.open(vault, _settings(vault), SearchSettings(), embedder) as r:
        explained = await r.explain("backup my vault with git")
    # Still answers (from the chunk lists), and says why the ranking is reduced.
    assert NOTES_NOT_READY in explained.degraded
    assert "plugins/obsidian-git.md" in [x.path for x in explained.results]
    report = await Indexer(vault, _settings(vault), embedder).run()
    assert report.changed == len(NOTES) and report.chunks_embedded == 0  # vectors reused
    conn = connect(Path(_settings(vault).db_path), readonly=True)
    try:
        notes = conn.execute("SELECT count(*) FROM notes").fetchone()[0]
        rows = conn.execute("SELECT count(*) FROM notes_fts").fetchone()[0]
        assert int(conn.execute("PRAGMA user_version").fetchone()[0]) == 3
    finally:
        conn.close()
    assert rows == notes == len(NOTES)
    async with await Retriever.open(vault, _settings(vault), SearchSettings(), embedder) as r:
        explained = await r.explain("backup my vault with git")
    assert NOTES_NOT_READY not in explained.degraded
    assert explained.results[0].path == "plugins/obsidian-git.md"


async def test_deleting_a_note_removes_its_note_level_rows(vault: Path, embedder: Embedder) -> None:
    (vault / "plugins" / "calendar.md").unlink()
    await Indexer(vault, _settings(vault), embedder).run()
    conn = connect(Path(_settings(vault).db_path), readonly=True)
    try:
        notes = {r[0] for r in conn.execute("SELECT id FROM notes")}
        fts = {r[0] for r in conn.execute("SELECT rowid FROM notes_fts")}
        keys = {r[0] for r in conn.execute("SELECT DISTINCT note_id FROM note_keys")}
        calendar = conn.execute("SELECT count(*) FROM note_keys WHERE key = 'calendar'")
        assert calendar.fetchone()[0] == 0
    finally:
        conn.close()
    assert notes == fts == keys
    assert "plugins/calendar.md" not in await _paths(vault, embedder, "Calendar")


# -- pure logic ------------------------------------------------------------------


def _cand(i: int, **kw: object) -> NoteCandidate:
    return NoteCandidate(note_id=i, path=f"n{i}.md", best_chunk=i, **kw)  # type: ignore[arg-type]


def test_note_blend_normalises_each_list_over_the_candidates() -> None:
    cands = [
        _cand(1, note_score=10.0, chunk_score=2.0, vector_score=0.2),
        _cand(2, note_score=4.0, chunk_score=4.0, vector_score=0.6),
        _cand(3, vector_score=0.4),  # no query word: keyword scores count as 0
    ]
    params = NoteParams("blend", 0.5, 0.25, 0.25, exact_boost=0.0)
    fused = {c.note_id: c.score for c in fuse_notes(cands, params)}
    assert fused[1] == pytest.approx(0.5 * 1.0 + 0.25 * 0.5 + 0.25 * 0.0)
    assert fused[2] == pytest.approx(0.5 * 0.4 + 0.25 * 1.0 + 0.25 * 1.0)
    assert fused[3] == pytest.approx(0.25 * 0.5)


def test_exact_name_bonus_puts_the_note_first() -> None:
    cands = [
        _cand(1, note_score=9.0, chunk_score=9.0, vector_score=0.9, note_rank=1),
        _cand(2, note_score=1.0, chunk_score=1.0, vector_score=0.1, exact=True, note_rank=2),
    ]
    for params in (NoteParams("blend"), NoteParams("rrf", rrf_k=60)):
        ordered = sorted(fuse_notes(cands, params), key=note_sort_key)
        assert [c.note_id for c in ordered] == [2, 1], params.method


def test_rrf_over_the_three_lists() -> None:
    cands = [_cand(1, note_rank=1, vector_rank=3), _cand(2, chunk_rank=1)]
    fused = {c.note_id: c.score for c in fuse_notes(cands, NoteParams("rrf", 2.0, 1.0, 1.0))}
    assert fused[1] == pytest.approx(2.0 / 61 + 1.0 / 63)
    assert fused[2] == pytest.approx(1.0 / 61)


def test_recency_factor_halves_every_half_life() -> None:
    assert recency_factor(0, 30) == pytest.approx(1.0)
    assert recency_factor(30, 30) == pytest.approx(0.5)
    assert recency_factor(90, 30) == pytest.approx(0.125)
    assert recency_factor(-5, 30) == pytest.approx(1.0)  # a future date is "now"


def test_fit_all_keeps_every_text_and_shares_the_budget() -> None:
    texts = ["a" * 1000, "b" * 50, "c " * 200, "d" * 3000]
    kept = fit_all(texts, 200)  # 800 characters
    assert len(kept) == 4
    assert kept[1] == texts[1]  # a short text keeps all of itself
    assert sum(len(t) for t in kept) <= 200 * CHARS_PER_TOKEN
    assert all(t.endswith("...") for i, t in enumerate(kept) if i != 1)
    assert fit_all(texts[:2], 10_000) == texts[:2]
    tiny = fit_all(["x " * 500] * 30, 10)
    assert len(tiny) == 30 and all(len(t) >= MIN_EXCERPT_CHARS - 3 for t in tiny)


def test_a_list_read_beside_is_computed_once_and_its_error_reaches_the_asker() -> None:
    import threading

    from signaldesk.retrieval.ranking import _Once

    calls: list[str] = []
    started, gate = threading.Event(), threading.Event()

    def slow() -> str:
        calls.append(threading.current_thread().name)
        started.set()
        gate.wait(5)
        return "lists"

    once = _Once[str]()
    side = threading.Thread(target=once.run, args=(slow,), name="side")
    side.start()
    assert started.wait(5)  # the side thread has taken it
    once.run(lambda: "computed twice")  # the asker finds it taken and does not compute
    gate.set()
    assert once.result() == "lists"
    side.join()
    assert calls == ["side"]

    def broken() -> str:
        raise ValueError("no such table: notes_fts")

    failed = _Once[str]()
    failed.run(broken)  # never raises where it runs ...
    with pytest.raises(ValueError, match="notes_fts"):
        failed.result()  # ... but where the value is asked for


def test_notes_are_ordered_as_note_sort_key_orders_them_ties_and_all() -> None:
    import random

    import numpy as np

    from signaldesk.retrieval.ranking import _note_order

    rng = random.Random(5)
    for _ in range(200):
        n = rng.randint(1, 40)
        # Few distinct values, so that scores, exact matches and ranks tie often and the
        # paths (some repeated, as across vaults) decide.
        notes = [
            NoteCandidate(
                note_id=i,
                path=rng.choice("abcde"),
                best_chunk=i,
                note_rank=rng.choice([None, 1, 2]),
                chunk_rank=rng.choice([None, 1, 3]),
                exact=rng.random() < 0.3,
                score=rng.choice([0.5, 0.25, 1.0]),
            )
            for i in range(n)
        ]
        expected = [c.note_id for c in sorted(notes, key=note_sort_key)]
        ranked = _note_order(
            np.array([c.score for c in notes]),
            np.array([c.exact for c in notes]),
            np.array([c.best_rank for c in notes]),
            [c.path for c in notes],
        )
        assert ranked == expected
