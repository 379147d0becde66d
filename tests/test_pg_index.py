"""The index on PostgreSQL with pgvector (team mode), against a real server.

The same vault indexed into SQLite and into PostgreSQL must rank the same; the vaults of
one database must stay apart; a rebuild of one vault must not disturb another.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from signaldesk.postgres import PostgresSettings, connect
from signaldesk.retrieval.index_progress import IndexProgress
from signaldesk.retrieval.pg_indexer import PgIndexer
from signaldesk.retrieval.pg_retriever import PgRetriever
from signaldesk.retrieval.records import SearchFilters
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from tests.index_helpers import SETTINGS, real_embedder

pytestmark = pytest.mark.anyio

_NOTES = {
    "ops/postgres-backups.md": (
        "---\ntitle: PostgreSQL backups\ntags: [ops, database]\n---\n"
        "# Backups\n\nWe take nightly base backups with pg_basebackup and keep WAL archives "
        "for point-in-time recovery.\n\n## Restore drill\n\nEvery quarter we restore the "
        "backup into a scratch server and run the smoke tests.\n"
    ),
    "ops/runbook-disk-full.md": (
        "# Disk full runbook\n\nWhen the disk fills up, first check the WAL folder, then "
        "old logs. Never delete data files by hand.\n"
    ),
    "decisions/adr-001-queues.md": (
        "---\ntitle: ADR 001 message queues\naliases: [queue decision]\n---\n"
        "# Context\n\nWe compared RabbitMQ and Kafka for job dispatch.\n\n# Decision\n\n"
        "RabbitMQ, because the jobs are short and need per-message acknowledgements. "
        "See [[PostgreSQL backups]] for the database side.\n"
    ),
    "notes/cooking.md": "# Sourdough\n\nFeed the starter twice a day; bake at 250 degrees.\n",
    "notes/running.md": "# Running\n\nRunners run faster after intervals; rest days matter.\n",
}
_QUERIES = [
    "how do we restore backups",
    "disk full WAL",
    "queue decision",
    "RabbitMQ acknowledgements",
    "runners running",
    "sourdough starter",
    "point-in-time recovery",
    "kafka",
]


def _vault(root: Path, notes: dict[str, str]) -> Path:
    for rel, text in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _indexer(vault: Path, name: str, pg: PostgresSettings, **kw: object) -> PgIndexer:
    return PgIndexer(vault, name, SETTINGS, pg, real_embedder(), workers=1, **kw)  # type: ignore[arg-type]


async def _pg(pg: PostgresSettings, vaults: frozenset[str] | None = None) -> PgRetriever:
    return await PgRetriever.connect(pg, SETTINGS, SearchSettings(), real_embedder(), vaults=vaults)


async def test_the_same_vault_ranks_the_same_on_both_backends(
    tmp_path: Path, postgres: PostgresSettings
) -> None:
    from signaldesk.retrieval.indexer import Indexer

    vault = _vault(tmp_path / "team", _NOTES)
    sqlite_settings = IndexSettings(model=SETTINGS.model, db_path=str(tmp_path / "index.db"))
    await Indexer(vault, sqlite_settings, real_embedder(), workers=1).run()
    report = await _indexer(vault, "team", postgres).run()
    assert report.added == len(_NOTES) and not report.errors
    sqlite_side = await Retriever.open(vault, sqlite_settings, SearchSettings(), real_embedder())
    pg_side = await _pg(postgres)
    try:
        for mode in ("bm25", "vector", "hybrid"):
            for query in _QUERIES:
                a = await sqlite_side.search(query, limit=5, mode=mode)  # type: ignore[arg-type]
                b = await pg_side.search(query, limit=5, mode=mode)  # type: ignore[arg-type]
                assert [r.path for r in b] == [r.path for r in a], (mode, query)
                for x, y in zip(a, b, strict=True):
                    assert y.score == pytest.approx(x.score, rel=1e-4, abs=1e-6), (mode, query)
                    assert (y.section, y.text, y.bm25_rank, y.note_rank) == (
                        x.section,
                        x.text,
                        x.bm25_rank,
                        x.note_rank,
                    )
                assert all(r.vault == "team" for r in b)
    finally:
        await sqlite_side.aclose()
        await pg_side.aclose()


async def test_bm25_equals_fts5s_own(tmp_path: Path, postgres: PostgresSettings) -> None:
    """The postings score of every matching chunk is FTS5's bm25() of the same chunk."""
    from signaldesk.retrieval.indexer import Indexer
    from signaldesk.retrieval.store import connect as sqlite_connect
    from signaldesk.retrieval.store import index_db_path

    vault = _vault(tmp_path / "team", _NOTES)
    sqlite_settings = IndexSettings(model=SETTINGS.model, db_path=str(tmp_path / "index.db"))
    await Indexer(vault, sqlite_settings, real_embedder(), workers=1).run()
    await _indexer(vault, "team", postgres).run()
    db = sqlite_connect(index_db_path(vault, sqlite_settings), readonly=True)
    weights = ", ".join(map(str, SearchSettings().column_weights))
    pg_side = await _pg(postgres)
    try:
        for query in _QUERIES:
            explained = await pg_side.explain(query, limit=20, mode="bm25")
            scores = db.execute(
                f"SELECT rowid, -bm25(chunks_fts, {weights}) FROM chunks_fts "
                "WHERE chunks_fts MATCH ?",
                (explained.match,),
            ).fetchall()
            expected: dict[str, float] = {}
            for rowid, score in scores:
                (path,) = db.execute(
                    "SELECT n.path FROM chunks c JOIN notes n ON n.id = c.note_id WHERE c.id = ?",
                    (rowid,),
                ).fetchone()
                expected[path] = max(score, expected.get(path, score))
            got = {r.path: r.bm25_score for r in explained.rows if r.bm25_score is not None}
            assert got.keys() == expected.keys(), query
            for path, score in got.items():
                assert score == pytest.approx(expected[path], rel=1e-9), (query, path)
    finally:
        db.close()
        await pg_side.aclose()


async def test_incremental_update_and_deletion(tmp_path: Path, postgres: PostgresSettings) -> None:
    vault = _vault(tmp_path / "team", _NOTES)
    await _indexer(vault, "team", postgres).run()
    again = await _indexer(vault, "team", postgres).run()
    assert (again.added, again.changed, again.unchanged) == (0, 0, len(_NOTES))
    _vault(vault, {"notes/cooking.md": "# Sourdough\n\nThe starter lives in the fridge now.\n"})
    (vault / "notes/running.md").unlink()
    report = await _indexer(vault, "team", postgres).run()
    assert (report.changed, report.deleted, report.added) == (1, 1, 0)
    async with await _pg(postgres) as pg_side:
        hits = await pg_side.search("fridge starter", limit=3)
        assert hits[0].path == "notes/cooking.md"
        assert "fridge" in hits[0].text
        paths = {n.path for n in await pg_side.list_notes(limit=100)}
        assert paths == set(_NOTES) - {"notes/running.md"}
        assert not [r for r in await pg_side.search("runners intervals", limit=5, mode="bm25")]
        text = await pg_side.read_note("team", "notes/cooking.md")
        assert text is not None and "fridge" in text
        status = await pg_side.status()
        assert status.notes == len(_NOTES) - 1 and status.vectors == status.chunks > 0
    with connect(postgres) as conn:
        # No posting or key row outlives its note.
        orphans = conn.execute(
            "SELECT count(*) FROM index_chunk_terms t LEFT JOIN index_chunks c "
            "ON c.id = t.chunk_id WHERE c.id IS NULL"
        ).fetchone()
        assert orphans == (0,)


async def test_two_vaults_stay_apart(tmp_path: Path, postgres: PostgresSettings) -> None:
    a = _vault(tmp_path / "a", {"x/shared-word.md": "# Alpha\n\nzebra crossing in alpha\n"})
    b = _vault(tmp_path / "b", {"x/shared-word.md": "# Beta\n\nzebra crossing in beta\n"})
    await _indexer(a, "alpha", postgres).run()
    await _indexer(b, "beta", postgres).run()
    async with await _pg(postgres) as everything:
        both = await everything.search("zebra crossing", limit=10)
        assert {(r.vault, r.path) for r in both} == {
            ("alpha", "x/shared-word.md"),
            ("beta", "x/shared-word.md"),
        }
        only_a = everything.confined({"alpha"})
        for mode in ("bm25", "vector", "hybrid"):
            hits = await only_a.search("zebra beta", limit=10, mode=mode)  # type: ignore[arg-type]
            assert hits and {r.vault for r in hits} == {"alpha"}
        # A filter cannot widen a confined view.
        widened = await only_a.search("beta", filters=SearchFilters(vaults=frozenset({"beta"})))
        assert widened == []
        assert {n.vault for n in await only_a.list_notes()} == {"alpha"}
        assert await only_a.read_note("beta", "x/shared-word.md") is None
        assert (await only_a.status()).notes == 1
        excerpts = await only_a.context("zebra")
        assert {e.result.vault for e in excerpts.excerpts} == {"alpha"}
        nothing = only_a.confined({"beta"})
        assert await nothing.search("zebra") == []


def test_the_tokenizer_is_fts5s(tmp_path: Path) -> None:
    from signaldesk.retrieval.fts_terms import query_tokens, term_postings

    assert query_tokens(["running", "runners", "école"]) == ["run", "runner", "ecol"]
    postings = term_postings([("Runs run", "", "x"), ("", "", "")], 3)
    assert postings.lengths == [3, 0]
    assert ("run", 0, (2, 0, 0)) in postings.entries


def _many(n: int, word: str) -> dict[str, str]:
    return {
        f"n/{word}-{i}.md": f"# {word} {i}\n\n{word} note number {i} about lighthouses.\n"
        for i in range(n)
    }


async def test_a_full_rebuild_of_one_vault_never_disturbs_another_or_its_readers(
    tmp_path: Path, postgres: PostgresSettings
) -> None:
    a = _vault(tmp_path / "a", _many(30, "alpha"))
    b = _vault(tmp_path / "b", _many(10, "beta"))
    await _indexer(a, "alpha", postgres).run()
    await _indexer(b, "beta", postgres).run()
    rebuild = _indexer(a, "alpha", postgres)
    seen_a: set[int] = set()
    async with await _pg(postgres) as everything:
        only_b = everything.confined({"beta"})
        only_a = everything.confined({"alpha"})
        done = anyio.Event()

        async def run_rebuild() -> None:
            report = await rebuild.run(full=True)
            assert report.full_rebuild and report.added == 30
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_rebuild)
            searches = 0
            while not done.is_set() or searches < 5:
                hits = await only_b.search("beta lighthouses", limit=20)
                assert len(hits) == 10 and {h.vault for h in hits} == {"beta"}
                # A reader of the vault being rebuilt sees all of it, old or new, never half.
                seen_a.add(len(await only_a.list_notes(limit=100)))
                searches += 1
                await anyio.sleep(0)
        assert seen_a == {30}
        assert len(await only_a.search("alpha lighthouses", limit=50)) == 30


async def test_a_stopped_rebuild_keeps_the_previous_rows(
    tmp_path: Path, postgres: PostgresSettings
) -> None:
    a = _vault(tmp_path / "a", _many(900, "alpha"))
    await _indexer(a, "alpha", postgres).run()
    rebuild = _indexer(a, "alpha", postgres)
    seen: list[IndexProgress] = []

    def progress(p: IndexProgress) -> None:
        seen.append(p)
        if p.files_done > 0:
            rebuild.stop()  # after the first batch was written inside the rebuild

    report = await rebuild.run(full=True, progress=progress)
    assert report.interrupted
    async with await _pg(postgres) as retriever:
        assert len(await retriever.list_notes(limit=2000)) == 900


def _index_in_process(dsn: str, vault: str, name: str) -> None:
    import asyncio

    settings = PostgresSettings(dsn=dsn)
    indexer = PgIndexer(Path(vault), name, SETTINGS, settings, real_embedder(), workers=1)
    report = asyncio.run(indexer.run())
    assert not report.errors


def test_two_writer_processes_at_once(tmp_path: Path, postgres: PostgresSettings) -> None:
    import multiprocessing

    a = _vault(tmp_path / "a", _many(300, "alpha"))
    b = _vault(tmp_path / "b", _many(300, "beta"))
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_index_in_process, args=(postgres.dsn, str(path), name))
        for path, name in ((a, "alpha"), (b, "beta"), (a, "alpha"))  # two writers of alpha
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=240)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    with connect(postgres) as conn:
        rows = conn.execute(
            "SELECT vault, count(*), count(DISTINCT path) FROM index_notes GROUP BY vault "
            "ORDER BY vault"
        ).fetchall()
        assert rows == [("alpha", 300, 300), ("beta", 300, 300)]
        stats = conn.execute(
            "SELECT vault, note_rows, chunk_rows FROM index_vaults ORDER BY vault"
        ).fetchall()
        chunks = conn.execute(
            "SELECT vault, count(*) FROM index_chunks GROUP BY vault ORDER BY vault"
        ).fetchall()
        assert [(v, n) for v, n, _ in stats] == [("alpha", 300), ("beta", 300)]
        assert [(v, c) for v, _, c in stats] == chunks


def _cli(*args: str) -> tuple[int, str, str]:
    from click.testing import CliRunner

    from signaldesk.pipeline.cli import cli

    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _team_config(vault: Path, dsn: str, name: str) -> None:
    config = vault / "signaldesk.toml"
    text = config.read_text(encoding="utf-8")
    text = text.replace("[index]\n", '[index]\nbackend = "postgres"\n', 1)
    text = text.replace("[vault]\n", f'[vault]\nname = "{name}"\n', 1)
    text = text.replace("[postgres]\n", f'[postgres]\ndsn = "{dsn}"\n', 1)
    config.write_text(text, encoding="utf-8")


def test_the_cli_indexes_and_searches_the_team_database(
    vault: Path, postgres: PostgresSettings
) -> None:
    import json

    _team_config(vault, postgres.dsn, "handbook")
    _vault(vault, {"ops/backups.md": _NOTES["ops/postgres-backups.md"]})
    code, out, _ = _cli("--vault", str(vault), "index", "--json")
    assert code == 0 and json.loads(out)["added"] == 1
    assert not (vault / ".signaldesk" / "index.db").exists()  # nothing went to SQLite
    code, out, _ = _cli("--vault", str(vault), "search", "restore drill", "--json")
    assert code == 0
    found = json.loads(out)
    results = found["results"] if isinstance(found, dict) else found
    assert results[0]["path"] == "ops/backups.md" and results[0]["vault"] == "handbook"
    code, out, _ = _cli("--vault", str(vault), "index", "--status", "--json")
    status = json.loads(out)
    assert (status["notes"], status["exists"]) == (1, True)
    assert "handbook" in status["db_path"] and status["vectors"] == status["chunks"]
    code, out, _ = _cli("--vault", str(vault), "index", "--full", "--json")
    assert code == 0 and json.loads(out)["full_rebuild"] is True


def test_an_unreachable_server_is_one_line(vault: Path) -> None:
    _team_config(vault, "postgresql://team@127.0.0.1:9/signaldesk", "handbook")
    _vault(vault, {"a.md": "# A\n\ntext\n"})
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "signaldesk", "--vault", str(vault), "index"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "cannot connect to PostgreSQL" in done.stderr and "Traceback" not in done.stderr
    problem_lines = [line for line in done.stderr.splitlines() if "PostgreSQL" in line]
    assert len(problem_lines) == 1


async def test_an_empty_database_says_to_index(postgres: PostgresSettings) -> None:
    from signaldesk.retrieval.errors import IndexUnavailableError

    with pytest.raises(IndexUnavailableError, match="no index yet") as caught:
        await _pg(postgres)
    assert caught.value.hint and "signaldesk index" in caught.value.hint


async def test_concurrent_confined_searches_while_another_vault_is_written(
    tmp_path: Path, postgres: PostgresSettings
) -> None:
    a = _vault(tmp_path / "a", _many(20, "alpha"))
    b = _vault(tmp_path / "b", _many(20, "beta"))
    c = _vault(tmp_path / "c", _many(400, "gamma"))
    await _indexer(a, "alpha", postgres).run()
    await _indexer(b, "beta", postgres).run()
    errors: list[BaseException] = []
    async with await _pg(postgres) as shared:

        async def client(vault: str) -> None:
            view = shared.confined({vault})
            try:
                for i in range(15):
                    hits = await view.search(f"lighthouses note number {i}", limit=5)
                    assert hits and {h.vault for h in hits} == {vault}
            except BaseException as exc:  # collected: the test reports every failure
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(_indexer(c, "gamma", postgres).run)
            for i in range(8):
                tg.start_soon(client, ("alpha", "beta")[i % 2])
    assert errors == []


async def test_filters_mean_the_same_on_both_backends(
    tmp_path: Path, postgres: PostgresSettings
) -> None:
    from datetime import date

    from signaldesk.retrieval.indexer import Indexer

    vault = _vault(tmp_path / "team", _NOTES)
    sqlite_settings = IndexSettings(model=SETTINGS.model, db_path=str(tmp_path / "index.db"))
    await Indexer(vault, sqlite_settings, real_embedder(), workers=1).run()
    await _indexer(vault, "team", postgres).run()
    sqlite_side = await Retriever.open(vault, sqlite_settings, SearchSettings(), real_embedder())
    pg_side = await _pg(postgres)
    cases = [
        SearchFilters(folder="ops"),
        SearchFilters(folder="ops/"),
        SearchFilters(tags=("database",)),
        SearchFilters(tags=("#OPS",)),
        SearchFilters(since=date(2000, 1, 1)),
        SearchFilters(until=date(2000, 1, 1)),
    ]
    try:
        for filters in cases:
            for mode in ("bm25", "vector", "hybrid"):
                for query in ("backups restore", "disk full", "queues"):
                    a = await sqlite_side.search(query, limit=5, mode=mode, filters=filters)  # type: ignore[arg-type]
                    b = await pg_side.search(query, limit=5, mode=mode, filters=filters)  # type: ignore[arg-type]
                    assert [r.path for r in b] == [r.path for r in a], (filters, mode, query)
            a_notes = await sqlite_side.list_notes(filters)
            b_notes = await pg_side.list_notes(filters)
            assert [n.path for n in b_notes] == [n.path for n in a_notes], filters
    finally:
        await sqlite_side.aclose()
        await pg_side.aclose()
