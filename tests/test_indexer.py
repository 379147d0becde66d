"""The incremental indexer against real notes, the real model and a real SQLite file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import anyio
import numpy as np
import pytest

from signaldesk.retrieval._pool import POOL_MIN_FILES
from signaldesk.retrieval.embedder import bundled_model_path, load_embedder
from signaldesk.retrieval.errors import IndexLockedError, ModelError
from signaldesk.retrieval.ignore import VaultFilter, iter_vault_notes
from signaldesk.retrieval.index_progress import IndexProgress
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.lock import IndexLock
from signaldesk.retrieval.settings import IndexSettings
from signaldesk.retrieval.status import index_status
from signaldesk.retrieval.store import connect, get_meta, index_db_path
from tests.index_helpers import (
    SETTINGS,
    CountingEmbedder,
    bump_mtime,
    check_invariants,
    counts,
    db,
    fts_paths,
    real_embedder,
    section,
    wait_for,
    write_note,
)

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.anyio


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder(real_embedder())


def make_indexer(vault: Path, embedder: object, **kwargs: object) -> Indexer:
    return Indexer(vault, SETTINGS, embedder, **kwargs)  # type: ignore[arg-type]


def three_notes(vault: Path) -> None:
    write_note(
        vault,
        "01-projects/alpha.md",
        section("Goals", "alpha rocket") + section("Plan", "alpha launch"),
    )
    write_note(vault, "02-areas/beta.md", section("Notes", "beta gardening"), tags="garden, home")
    write_note(vault, "03-resources/gamma.md", section("Reading", "gamma papers"))


def meta(vault: Path, key: str) -> str | None:
    conn = db(vault)
    try:
        return get_meta(conn, key)
    finally:
        conn.close()


async def test_first_run_indexes_every_note(vault: Path, embedder: CountingEmbedder) -> None:
    three_notes(vault)
    report = await make_indexer(vault, embedder).run()
    assert (report.added, report.changed, report.deleted, report.unchanged) == (3, 0, 0, 0)
    assert report.chunks_embedded == counts(vault)["chunks"] >= 4
    assert not report.full_rebuild and not report.interrupted and report.errors == ()
    assert check_invariants(vault)["notes"] == 3
    assert meta(vault, "vector_type") == "int8"
    assert meta(vault, "dimensions") == "256"
    assert meta(vault, "model_fingerprint") == embedder.fingerprint
    assert meta(vault, "model_name") == embedder.name
    assert int(meta(vault, "generation") or 0) >= 1
    assert (meta(vault, "last_indexed") or "").endswith("Z")
    assert fts_paths(vault, "gardening") == {"02-areas/beta.md"}
    # Tags and title are searchable through the context column.
    assert fts_paths(vault, "context:garden") == {"02-areas/beta.md"}


async def test_note_rows_hold_metadata_and_stored_vectors_are_the_models(
    vault: Path, embedder: CountingEmbedder
) -> None:
    write_note(vault, "01-projects/alpha.md", section("Goals", "alpha rocket"), tags="space")
    await make_indexer(vault, embedder).run()
    conn = db(vault)
    try:
        title, tags, created, updated, fm = conn.execute(
            "SELECT title, tags, created, updated, frontmatter FROM notes"
        ).fetchone()
        chunk_id = conn.execute("SELECT id FROM chunks").fetchone()[0]
        blob = conn.execute(
            "SELECT embedding FROM chunk_vectors WHERE rowid = ?", (chunk_id,)
        ).fetchone()[0]
    finally:
        conn.close()
    assert (title, tags) == ("alpha", '["space"]')
    assert created == updated and updated.endswith("Z")  # no dates in frontmatter: the mtime
    assert '"title": "alpha"' in fm
    stored = np.frombuffer(blob, dtype=np.int8).astype(np.float32) / 127
    assert len(embedder.texts) == 1
    expected = real_embedder().encode(embedder.texts)[0]
    assert float(stored @ expected) > 0.99


async def test_add_edit_delete_are_reflected(vault: Path, embedder: CountingEmbedder) -> None:
    three_notes(vault)
    indexer = make_indexer(vault, embedder)
    await indexer.run()
    write_note(vault, "02-areas/beta.md", section("Notes", "beta beekeeping"))
    (vault / "03-resources/gamma.md").unlink()
    write_note(vault, "00-inbox/delta.md", section("Idea", "delta sailing"))
    report = await indexer.run()
    assert (report.added, report.changed, report.deleted, report.unchanged) == (1, 1, 1, 1)
    check_invariants(vault)
    assert fts_paths(vault, "beekeeping") == {"02-areas/beta.md"}
    assert fts_paths(vault, "gardening") == set()
    assert fts_paths(vault, "gamma") == set()
    assert fts_paths(vault, "sailing") == {"00-inbox/delta.md"}
    again = await indexer.run()
    assert (again.added, again.changed, again.deleted, again.unchanged) == (0, 0, 0, 3)
    assert again.chunks_embedded == 0


async def test_touched_but_unchanged_file_embeds_nothing(
    vault: Path, embedder: CountingEmbedder
) -> None:
    three_notes(vault)
    indexer = make_indexer(vault, embedder)
    await indexer.run()
    generation = meta(vault, "generation")
    bump_mtime(vault / "01-projects/alpha.md")
    embedder.reset()
    report = await indexer.run()
    assert embedder.calls == 0
    assert (report.changed, report.unchanged, report.chunks_embedded) == (0, 3, 0)
    assert meta(vault, "generation") != generation  # the stat was written
    # The new stat is remembered: the next run does not even read the file.
    conn = db(vault)
    try:
        stored = conn.execute(
            "SELECT mtime_ns FROM notes WHERE path = '01-projects/alpha.md'"
        ).fetchone()[0]
    finally:
        conn.close()
    assert stored == (vault / "01-projects/alpha.md").stat().st_mtime_ns
    generation = meta(vault, "generation")
    await indexer.run()
    assert meta(vault, "generation") == generation  # a no-op run writes nothing


async def test_only_the_edited_chunk_is_embedded_again(
    vault: Path, embedder: CountingEmbedder
) -> None:
    sections = [section(t, w) for t, w in (("One", "apples"), ("Two", "pears"), ("Three", "plums"))]
    path = write_note(vault, "01-projects/fruit.md", "".join(sections))
    indexer = make_indexer(vault, embedder)
    await indexer.run()
    chunks_before = counts(vault)["chunks"]
    assert chunks_before == 3
    write_note(
        vault, "01-projects/fruit.md", sections[0] + section("Two", "cherries") + sections[2]
    )
    embedder.reset()
    report = await indexer.run()
    assert report.changed == 1
    assert (report.chunks_embedded, report.chunks_reused) == (1, 2)
    assert len(embedder.texts) == 1 and "cherries" in embedder.texts[0]
    check_invariants(vault)
    assert path.exists()


async def test_a_moved_note_keeps_its_vectors(vault: Path, embedder: CountingEmbedder) -> None:
    body = section("One", "apples") + section("Two", "pears")
    write_note(vault, "00-inbox/fruit.md", body, title="Fruit")
    indexer = make_indexer(vault, embedder)
    await indexer.run()
    (vault / "01-projects").mkdir(exist_ok=True)
    os.replace(vault / "00-inbox/fruit.md", vault / "01-projects/fruit.md")
    embedder.reset()
    report = await indexer.run()
    assert (report.added, report.deleted) == (1, 1)
    assert (report.chunks_embedded, report.chunks_reused) == (0, 2)
    assert embedder.calls == 0
    check_invariants(vault)
    assert fts_paths(vault, "pears") == {"01-projects/fruit.md"}


async def test_indexignore_and_drawings_are_never_indexed(
    vault: Path, embedder: CountingEmbedder
) -> None:
    three_notes(vault)
    write_note(vault, "01-projects/private/diary.md", section("Secret", "diary entries"))
    (vault / "01-projects/board.md").write_text(
        "---\nkanban-plugin: basic\n---\n\n## Todo\n\n- [ ] kanban card one\n", encoding="utf-8"
    )
    write_note(vault, "07-templates/daily.md", section("Template", "template words"))
    indexer = make_indexer(vault, embedder)
    report = await indexer.run()
    assert report.added == 4
    assert fts_paths(vault, "diary") == {"01-projects/private/diary.md"}
    assert fts_paths(vault, "kanban") == set()
    assert fts_paths(vault, "template") == set()
    # The board is remembered as skipped: the next run does not read it again.
    again = await indexer.run()
    assert (again.added, again.unchanged) == (0, again.scanned)
    # Excluding a folder later removes what was indexed from it.
    (vault / ".indexignore").write_text("01-projects/private/\n", encoding="utf-8")
    report = await indexer.run()
    assert report.deleted == 1
    assert fts_paths(vault, "diary") == set()
    check_invariants(vault)
    # A note that becomes a board is removed too.
    (vault / "02-areas/beta.md").write_text("---\nexcalidraw-plugin: parsed\n---\n# x\n")
    report = await indexer.run()
    assert report.deleted == 1
    assert counts(vault)["notes"] == 2


async def test_paths_restricts_the_work_and_handles_deletions(
    vault: Path, embedder: CountingEmbedder
) -> None:
    three_notes(vault)
    indexer = make_indexer(vault, embedder)
    await indexer.run()
    write_note(vault, "00-inbox/new.md", section("New", "zebra crossing"))
    write_note(vault, "00-inbox/other.md", section("Other", "yak shaving"))
    (vault / "02-areas/beta.md").unlink()
    report = await indexer.run(paths=["00-inbox/new.md", str(vault / "02-areas/beta.md")])
    assert (report.added, report.deleted, report.scanned) == (1, 1, 1)
    assert fts_paths(vault, "zebra") == {"00-inbox/new.md"}
    assert fts_paths(vault, "yak") == set()  # not listed, not looked at
    outside = await indexer.run(paths=["../elsewhere.md", "/etc/passwd"])
    assert len(outside.errors) == 2 and outside.added == 0
    check_invariants(vault)


async def test_full_rebuild_is_idempotent(vault: Path, embedder: CountingEmbedder) -> None:
    three_notes(vault)
    indexer = make_indexer(vault, embedder)
    first = await indexer.run()
    state = check_invariants(vault)
    for _ in range(2):
        report = await indexer.run(full=True)
        assert report.full_rebuild and report.rebuild_reason == "full rebuild requested"
        assert report.added == 3 and report.chunks_embedded == first.chunks_embedded
        assert check_invariants(vault) == state
    assert (await indexer.run()).unchanged == 3


def _small_model(tmp_path: Path) -> Path:
    """A second real Model2Vec model: the bundled one cut to 64 dimensions."""
    from model2vec import StaticModel

    base = StaticModel.from_pretrained(bundled_model_path())
    vectors = np.asarray(base.embedding, dtype=np.float32)[:, :64]
    config = {**base.config, "hidden_dim": 64, "apply_pca": 64, "embedding_dtype": "float32"}
    small = StaticModel(vectors=vectors, tokenizer=base.tokenizer, config=config, normalize=True)
    folder = tmp_path / "small-model"
    small.save_pretrained(folder)
    return folder


async def test_a_new_model_rebuilds_the_index_by_itself(
    vault: Path, tmp_path: Path, embedder: CountingEmbedder
) -> None:
    three_notes(vault)
    await make_indexer(vault, embedder).run()
    chunks = counts(vault)["chunks"]
    settings = IndexSettings(model=str(_small_model(tmp_path)))
    other = CountingEmbedder(load_embedder(settings))
    assert other.dimensions == 64 and other.fingerprint != embedder.fingerprint
    report = await Indexer(vault, settings, other).run()
    assert report.full_rebuild and "embedding model changed" in (report.rebuild_reason or "")
    assert report.chunks_embedded == chunks and report.chunks_reused == 0
    assert meta(vault, "dimensions") == "64"
    conn = db(vault)
    try:
        blob = conn.execute("SELECT embedding FROM chunk_vectors LIMIT 1").fetchone()[0]
    finally:
        conn.close()
    assert len(blob) == 64
    check_invariants(vault)
    again = await Indexer(vault, settings, other).run()
    assert not again.full_rebuild and again.chunks_embedded == 0


async def test_second_writer_waits_then_gives_up(vault: Path, embedder: CountingEmbedder) -> None:
    three_notes(vault)
    db_path = index_db_path(vault, SETTINGS)
    with IndexLock(db_path), pytest.raises(IndexLockedError) as info:
        await make_indexer(vault, embedder, lock_timeout=0.2).run()
    assert "another process" in info.value.message and info.value.hint
    assert (await make_indexer(vault, embedder, lock_timeout=0.2).run()).added == 3


async def test_readers_keep_working_during_a_write(vault: Path, embedder: CountingEmbedder) -> None:
    three_notes(vault)
    await make_indexer(vault, embedder).run()
    writer = connect(index_db_path(vault, SETTINGS))
    writer.isolation_level = None
    reader = db(vault)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("DELETE FROM chunks")
        # The reader neither blocks nor sees the uncommitted delete.
        assert reader.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
        assert (
            reader.execute(
                "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'gardening'"
            ).fetchone()[0]
            == 1
        )
        writer.execute("ROLLBACK")
    finally:
        writer.close()
        reader.close()


async def test_a_corrupt_index_is_rebuilt_from_the_vault(
    vault: Path, embedder: CountingEmbedder
) -> None:
    three_notes(vault)
    await make_indexer(vault, embedder).run()
    db_path = index_db_path(vault, SETTINGS)
    for suffix in ("-wal", "-shm"):
        db_path.with_name(db_path.name + suffix).unlink(missing_ok=True)
    db_path.write_bytes(b"this is not a database at all" * 200)
    notes_before = sorted(p.read_bytes() for p in vault.rglob("*.md"))
    report = await make_indexer(vault, embedder).run()
    assert report.full_rebuild and "unreadable" in (report.rebuild_reason or "")
    assert report.added == 3
    check_invariants(vault)
    # The damaged file was replaced by a new generation and then removed.
    assert index_db_path(vault, SETTINGS) != db_path and not db_path.exists()
    assert sorted(p.read_bytes() for p in vault.rglob("*.md")) == notes_before
    # A deleted index is simply built again.
    for path in db_path.parent.glob("index*"):
        path.unlink()
    assert (await make_indexer(vault, embedder).run()).added == 3
    check_invariants(vault)


def _many_notes(vault: Path, n: int) -> None:
    for i in range(n):
        write_note(
            vault,
            f"03-resources/batch/note-{i:04d}.md",
            section("Topic", f"subject{i} words") + section("More", f"detail{i} text"),
        )


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> int:
    """Transactions of 40 files, so that a few hundred notes make many of them."""
    import signaldesk.retrieval.indexer as indexer_module

    monkeypatch.setattr(indexer_module, "_BATCH_FILES", 40)
    return 40


async def test_stop_finishes_the_transaction_and_reports_interrupted(
    vault: Path, embedder: CountingEmbedder, small_batches: int
) -> None:
    _many_notes(vault, 200)
    indexer = make_indexer(vault, embedder, workers=1)

    def on_progress(p: IndexProgress) -> None:
        if p.phase == "indexing" and p.files_done > 0:
            indexer.stop()

    report = await indexer.run(progress=on_progress)
    assert report.interrupted
    done = check_invariants(vault)["notes"]
    assert done == small_batches and report.added == done  # exactly one transaction
    rest = await indexer.run()
    assert not rest.interrupted and rest.added == 200 - done
    assert check_invariants(vault)["notes"] == 200


async def test_cancellation_lets_the_transaction_finish(
    vault: Path, embedder: CountingEmbedder, small_batches: int
) -> None:
    _many_notes(vault, 200)
    indexer = make_indexer(vault, embedder, workers=1)
    with anyio.CancelScope() as scope:

        def on_progress(p: IndexProgress) -> None:
            if p.phase == "indexing" and p.files_done > 0:
                scope.cancel()

        await indexer.run(progress=on_progress)
    assert scope.cancelled_caught
    assert 0 < check_invariants(vault)["notes"] < 200
    assert (await indexer.run()).added > 0
    assert check_invariants(vault)["notes"] == 200


@pytest.mark.slow
def test_kill_9_during_a_full_index_leaves_a_consistent_index(vault: Path) -> None:
    # Enough notes for several transactions and the worker-process path.
    _many_notes(vault, POOL_MIN_FILES + 400)
    db_path = index_db_path(vault, SETTINGS)

    def committed_notes() -> int:
        if not db_path.exists():
            return 0
        try:
            conn = connect(db_path, readonly=True)
            try:
                return int(conn.execute("SELECT count(*) FROM notes").fetchone()[0])
            finally:
                conn.close()
        except Exception:
            return 0  # schema not created yet

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "signaldesk",
            "--vault",
            str(vault),
            "index",
            "--full",
            "--json",
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: committed_notes() > 0 or proc.poll() is not None, what="first commit")
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        if proc.stderr:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert committed_notes() < POOL_MIN_FILES + 400
    report = anyio.run(lambda: make_indexer(vault, real_embedder()).run())
    assert report.added > 0
    assert check_invariants(vault)["notes"] == POOL_MIN_FILES + 400


@pytest.mark.slow
def test_the_real_obsidian_hub_vault(tmp_path: Path, shared_data: Path) -> None:
    with tarfile.open(shared_data / "vaults" / "obsidian-hub.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    hub = tmp_path / "vault"
    expected = sum(1 for _ in iter_vault_notes(hub, VaultFilter(hub)))
    assert expected > 6000
    counting = CountingEmbedder(real_embedder())
    indexer = make_indexer(hub, counting)
    report = anyio.run(indexer.run)
    assert report.errors == ()
    state = check_invariants(hub)
    assert report.scanned == expected
    assert report.added + len(_skipped(hub)) == expected == state["notes"] + len(_skipped(hub))
    assert report.chunks_embedded + report.chunks_reused == state["chunks"]
    counting.reset()
    again = anyio.run(indexer.run)
    assert counting.calls == 0 and again.chunks_embedded == 0
    assert again.unchanged == expected


def _skipped(vault: Path) -> list[str]:
    conn = db(vault)
    try:
        return [r[0] for r in conn.execute("SELECT path FROM skipped")]
    finally:
        conn.close()


class _NoModel:
    """An embedder whose model cannot be loaded (what LazyEmbedder raises then)."""

    def _fail(self) -> str:
        raise ModelError("no model here", hint="install one")

    name = property(_fail)
    fingerprint = property(_fail)
    dimensions = property(_fail)

    def encode(self, texts: object) -> object:
        self._fail()
        return None


async def test_without_a_model_the_index_is_keyword_only_until_one_loads(
    vault: Path, embedder: CountingEmbedder
) -> None:
    three_notes(vault)
    report = await make_indexer(vault, _NoModel()).run()
    assert report.added == 3 and any("model unavailable" in e for e in report.errors)
    assert meta(vault, "vector_type") == "none"
    assert fts_paths(vault, "gardening") == {"02-areas/beta.md"}
    assert any("no vectors" in d for d in index_status(vault, SETTINGS).degraded)
    report = await make_indexer(vault, embedder).run()
    assert report.full_rebuild and report.chunks_embedded == counts(vault)["chunks"]
    check_invariants(vault)
    # Once there are vectors, a model that fails to load leaves them alone.
    with pytest.raises(ModelError):
        await make_indexer(vault, _NoModel()).run()
    check_invariants(vault)
    assert meta(vault, "vector_type") == "int8"


_SECRETS = (
    "Tr0ub4dor-Xq93-zzP1",
    "AKIAQ3EGUXZPLMNB7R2K",
    "ghp_9fJ2kLm4NpQ7rS1tUvW3xYz5AbC8dEf0GhIj",
)


async def test_secrets_never_reach_the_database_or_the_model(
    vault: Path, embedder: CountingEmbedder
) -> None:
    (vault / "01-projects").mkdir(exist_ok=True)
    (vault / "01-projects/deploy.md").write_text(
        "---\ntitle: Deploy notes\npassword: Tr0ub4dor-Xq93-zzP1\ntags: [ops]\n---\n"
        + section("Keys", "rotation schedule")
        + f"\nOur key is {_SECRETS[1]} and the token {_SECRETS[2]} here.\n",
        encoding="utf-8",
    )
    three_notes(vault)
    await make_indexer(vault, embedder).run()
    db_path = index_db_path(vault, SETTINGS)
    conn = db(vault)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        text = "\n".join(r[0] for r in conn.execute("SELECT text FROM chunks"))
        fm = conn.execute("SELECT frontmatter FROM notes WHERE title = 'Deploy notes'").fetchone()
        start_line = conn.execute(
            "SELECT min(start_line) FROM chunks c JOIN notes n ON n.id = c.note_id "
            "WHERE n.title = 'Deploy notes'"
        ).fetchone()[0]
    finally:
        conn.close()
    assert "[REDACTED:aws-access-token]" in text and "[REDACTED:github-pat]" in text
    assert "REDACTED" in fm[0] and "ops" in fm[0]
    assert start_line == 6  # line numbers are the file's
    raw = b"".join(p.read_bytes() for p in db_path.parent.glob("index.db*"))
    embedded = "\n".join(embedder.texts)
    for secret in _SECRETS:
        assert secret.encode() not in raw
        assert secret not in embedded
    assert fts_paths(vault, "rotation") == {"01-projects/deploy.md"}


async def test_progress_is_reported_in_the_event_loop_thread(
    vault: Path, embedder: CountingEmbedder
) -> None:
    import threading

    three_notes(vault)
    seen: list[tuple[str, int, int, bool]] = []
    loop_thread = threading.get_ident()

    def on_progress(p: IndexProgress) -> None:
        seen.append((p.phase, p.files_done, p.files_total, threading.get_ident() == loop_thread))

    await make_indexer(vault, embedder).run(progress=on_progress)
    assert seen[0][0] == "scanning" and seen[-1] == ("done", 3, 3, True)
    assert all(in_loop for *_, in_loop in seen)


def test_a_broken_worker_pool_falls_back_to_this_process(
    vault: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import multiprocessing

    from signaldesk.retrieval._pool import prepared
    from signaldesk.retrieval._prepare import FileJob, PreparedNote, PrepareOptions

    _many_notes(vault, POOL_MIN_FILES + 100)
    jobs = [
        FileJob(str(p.relative_to(vault)), 0, 0, None)
        for p in sorted((vault / "03-resources/batch").iterdir())
    ]
    paths: list[str] = []
    with prepared(str(vault), jobs, PrepareOptions(1800, 200, 800), workers=2) as outcomes:
        for outcome in outcomes:
            if not paths:
                for child in multiprocessing.active_children():
                    os.kill(child.pid or 0, signal.SIGKILL)
            assert isinstance(outcome, PreparedNote)
            paths.append(outcome.path)
    assert paths == [job.path for job in jobs]
    assert "preparing the rest in-process" in caplog.text


def test_leaving_early_stops_the_workers(vault: Path) -> None:
    import multiprocessing

    from signaldesk.retrieval._pool import prepared
    from signaldesk.retrieval._prepare import FileJob, PrepareOptions

    _many_notes(vault, POOL_MIN_FILES + 100)
    jobs = [
        FileJob(str(p.relative_to(vault)), 0, 0, None)
        for p in sorted((vault / "03-resources/batch").iterdir())
    ]
    with prepared(str(vault), jobs, PrepareOptions(1800, 200, 800), workers=2) as outcomes:
        first = next(iter(outcomes))
        workers = multiprocessing.active_children()
        assert len(workers) == 2
    assert first.path == jobs[0].path
    assert not any(worker.is_alive() for worker in workers)


_KILLED_PARENT = """
import multiprocessing, sys, time
from signaldesk.retrieval._pool import prepared
from signaldesk.retrieval._prepare import FileJob, PrepareOptions
vault, names = sys.argv[1], sys.argv[2:]
jobs = [FileJob(name, 0, 0, None) for name in names]
with prepared(vault, jobs, PrepareOptions(1800, 200, 800), workers=2) as outcomes:
    for outcome in outcomes:
        print(*(child.pid for child in multiprocessing.active_children()), flush=True)
        time.sleep(600)
"""


def test_workers_exit_when_the_indexer_is_killed(vault: Path) -> None:
    _many_notes(vault, POOL_MIN_FILES + 100)
    names = [str(p.relative_to(vault)) for p in sorted((vault / "03-resources/batch").iterdir())]
    with subprocess.Popen(
        [sys.executable, "-c", _KILLED_PARENT, str(vault), *names],
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            pids = [int(pid) for pid in proc.stdout.readline().split()]
            assert len(pids) == 2
        finally:
            proc.kill()

    def gone(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        return state == "Z"  # exited, waiting for init to reap it

    # Workers wait on their task pipes (tasks in flight fill them) and end on its EOF.
    wait_for(lambda: all(gone(pid) for pid in pids), timeout=60, what="workers to exit")


async def test_a_malformed_page_is_treated_as_corruption(
    vault: Path, embedder: CountingEmbedder
) -> None:
    from signaldesk.retrieval.store import PAGE_SIZE

    three_notes(vault)
    await make_indexer(vault, embedder).run()
    db_path = index_db_path(vault, SETTINGS)
    conn = connect(db_path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(db_path.read_bytes())
    # Keep the header page (the file still opens), scramble every other page.
    data[PAGE_SIZE:] = bytes((i * 7 + 3) % 251 for i in range(len(data) - PAGE_SIZE))
    db_path.write_bytes(bytes(data))
    report = await make_indexer(vault, embedder).run()
    assert report.full_rebuild and "unreadable" in (report.rebuild_reason or "")
    assert check_invariants(vault)["notes"] == 3


async def test_cancelling_while_waiting_for_the_lock_ends_the_wait(
    vault: Path, embedder: CountingEmbedder
) -> None:
    import time

    three_notes(vault)
    indexer = make_indexer(vault, embedder, lock_timeout=60)
    with IndexLock(index_db_path(vault, SETTINGS)):
        started = time.monotonic()
        with anyio.move_on_after(0.3) as scope:
            await indexer.run()
        assert scope.cancelled_caught
        assert time.monotonic() - started < 10  # not the 60 s lock timeout
        # stop() ends the wait too, with an interrupted report.
        indexer.stop()
        report = indexer.run_sync()
        assert report.interrupted and report.added == 0
    assert (await indexer.run()).added == 3


async def test_changing_how_much_is_embedded_re_embeds_only_what_changed(
    vault: Path, embedder: CountingEmbedder
) -> None:
    write_note(vault, "03-resources/long.md", section("Body", "lemur habitat " * 300))
    write_note(vault, "03-resources/short.md", "## Body\n\nQuokkas are small.\n")
    await make_indexer(vault, embedder).run()
    embedder.reset()
    narrower = SETTINGS.model_copy(update={"embed_max_chars": 120})
    report = await Indexer(vault, narrower, embedder).run()  # type: ignore[arg-type]
    assert not report.full_rebuild
    # Only the long note's inputs got shorter: they are embedded again, each cut
    # to the limit, and the short note keeps its vector.
    assert report.chunks_embedded > 0
    assert embedder.texts and all(len(text) <= 120 for text in embedder.texts)
    assert not any("quokkas" in text for text in embedder.texts)
    embedder.reset()
    again = await Indexer(vault, narrower, embedder).run()  # type: ignore[arg-type]
    assert (again.chunks_embedded, embedder.calls) == (0, 0)
