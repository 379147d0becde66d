"""A full rebuild is built beside the live index and swapped in at once (retrieval.generations):
readers keep answering from the old index until the swap, a failed or killed rebuild leaves it
as it was, and old generations disappear once no reader holds them."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest

from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.retrieval.errors import ModelError, StoreError
from signaldesk.retrieval.generations import (
    ReaderLease,
    lease_path,
    pointer_path,
    read_pointer,
    remove_stale,
)
from signaldesk.retrieval.index_progress import IndexProgress
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.retrieval.store import PAGE_SIZE, connect, index_base_path, index_db_path
from tests.index_helpers import (
    SETTINGS,
    CountingEmbedder,
    check_invariants,
    counts,
    real_embedder,
    section,
    wait_for,
    write_note,
)

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.anyio


def _notes(vault: Path, n: int = 3) -> None:
    write_note(vault, "02-areas/beta.md", section("Notes", "beta gardening"))
    for i in range(n - 1):
        write_note(vault, f"03-resources/n{i:03d}.md", section("Topic", f"topic{i} words"))


def _indexer(vault: Path, **kwargs: object) -> Indexer:
    return Indexer(vault, SETTINGS, CountingEmbedder(real_embedder()), workers=1, **kwargs)  # type: ignore[arg-type]


def _state_files(vault: Path) -> set[str]:
    return {p.name for p in (vault / ".signaldesk").iterdir()}


async def _paths(retriever: Retriever, query: str) -> set[str]:
    return {r.path for r in await retriever.search(query, mode="bm25")}


async def test_readers_keep_the_old_index_until_the_swap(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import signaldesk.retrieval.indexer as indexer_module

    monkeypatch.setattr(indexer_module, "_BATCH_FILES", 1)  # one transaction per note
    _notes(vault)
    await _indexer(vault).run()
    first = index_db_path(vault, SETTINGS)
    retriever = await Retriever.open(vault, SETTINGS, SearchSettings(), real_embedder())
    try:
        assert await _paths(retriever, "gardening") == {"02-areas/beta.md"}
        write_note(vault, "02-areas/beta.md", section("Notes", "beta orchids"))
        paused, resume = threading.Event(), threading.Event()

        def hold(p: IndexProgress) -> None:
            if p.phase == "indexing" and p.files_done > 0 and not paused.is_set():
                paused.set()
                resume.wait(60)

        indexer = _indexer(vault)
        worker = threading.Thread(target=lambda: indexer.run_sync(full=True, progress=hold))
        worker.start()
        try:
            assert await anyio.to_thread.run_sync(lambda: paused.wait(60))
            # Half-way through the rebuild: the live index is the old one, whole.
            assert read_pointer(index_base_path(vault, SETTINGS)) == first
            assert await _paths(retriever, "gardening") == {"02-areas/beta.md"}
            assert await _paths(retriever, "orchids") == set()
            assert counts(vault)["notes"] == 3
        finally:
            resume.set()
            await anyio.to_thread.run_sync(worker.join)
        second = index_db_path(vault, SETTINGS)
        assert second != first and second.name == "index-1.db"
        # The next search moves to the new generation by itself.
        assert await _paths(retriever, "orchids") == {"02-areas/beta.md"}
        assert await _paths(retriever, "gardening") == set()
        # The retriever held the old file during the swap; now it has let go of it.
        assert first.exists()
        remove_stale(index_base_path(vault, SETTINGS))
        assert not first.exists()
    finally:
        await retriever.aclose()
    check_invariants(vault)
    assert _state_files(vault) >= {"index-1.db", "index.db.current"}
    assert not {name for name in _state_files(vault) if name.startswith("index.db-")}


async def test_a_reader_lease_keeps_a_generation_on_disk(vault: Path) -> None:
    _notes(vault)
    base = index_base_path(vault, SETTINGS)
    await _indexer(vault).run()
    lease = ReaderLease.take(base)
    assert lease is not None and lease.db == base
    try:
        await _indexer(vault).run(full=True)
        assert base.exists()  # still read by someone
        await _indexer(vault).run()
        assert base.exists()
    finally:
        lease.release()
    await _indexer(vault).run()
    assert not base.exists() and not lease_path(base).exists()
    assert read_pointer(base).name == "index-1.db"


async def test_a_failed_rebuild_leaves_the_old_index_and_says_why(vault: Path) -> None:
    _notes(vault, 20)
    await _indexer(vault).run()
    before = counts(vault)
    live = index_db_path(vault, SETTINGS)
    data = live.read_bytes()

    class Failing(CountingEmbedder):
        def encode(self, texts):  # type: ignore[no-untyped-def]
            raise ModelError("the model broke half-way")

    write_note(vault, "03-resources/new.md", section("New", "fresh words"))
    indexer = Indexer(vault, SETTINGS, Failing(real_embedder()), workers=1)
    with pytest.raises(ModelError, match="half-way"):
        await indexer.run(full=True)
    assert index_db_path(vault, SETTINGS) == live
    assert counts(vault) == before and live.read_bytes() == data
    assert not pointer_path(index_base_path(vault, SETTINGS)).exists()
    assert not any(name.startswith("index-") for name in _state_files(vault))


def _run_cli(vault: Path, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "signaldesk", "--vault", str(vault), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_file_size_limit_during_a_full_rebuild_keeps_the_previous_index(vault: Path) -> None:
    # ulimit -f: every write past the limit fails with EFBIG (Python ignores SIGXFSZ).
    for i in range(60):
        write_note(vault, f"03-resources/big/n{i:03d}.md", section("Topic", f"topic{i} " * 40))
    assert _run_cli(vault, "index", "--json").returncode == 0
    before = counts(vault)
    live = index_db_path(vault, SETTINGS)
    limit = 256 * 1024
    assert live.stat().st_size > limit

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = _run_cli(vault, "index", "--full", preexec_fn=cap)
    assert done.returncode == 1, done.stderr
    assert "file size limit" in done.stderr and "previous index is kept" in done.stderr
    assert "Traceback" not in done.stderr
    assert index_db_path(vault, SETTINGS) == live
    assert counts(vault) == before
    check_invariants(vault)
    assert not any(name.startswith("index-") for name in _state_files(vault))


@pytest.mark.slow
def test_kill_9_during_a_rebuild_keeps_the_previous_index(vault: Path) -> None:
    for i in range(700):
        write_note(vault, f"03-resources/k/n{i:04d}.md", section("Topic", f"subject{i} words"))
    assert _run_cli(vault, "index", "--json").returncode == 0
    before = check_invariants(vault)
    base = index_base_path(vault, SETTINGS)
    new = base.with_name("index-1.db")

    def rebuilding() -> bool:
        if not new.exists():
            return False
        try:
            conn = connect(new, readonly=True)
            try:
                return int(conn.execute("SELECT count(*) FROM notes").fetchone()[0]) > 0
            finally:
                conn.close()
        except Exception:
            return False

    proc = subprocess.Popen(
        [sys.executable, "-m", "signaldesk", "--vault", str(vault), "index", "--full", "--json"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: rebuilding() or proc.poll() is not None, what="rebuild commit")
        assert proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        # The worker processes (and multiprocessing's tracker) go with it.
        wait_for(lambda: not _session(proc.pid), timeout=30, what="workers to exit")
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in _session(proc.pid):
            os.kill(pid, signal.SIGKILL)
    assert read_pointer(base) == base
    assert check_invariants(vault) == before
    # The next run removes what the killed one left.
    assert anyio.run(lambda: _indexer(vault).run()).unchanged == 700
    assert not new.exists() and not any(n.startswith("index-") for n in _state_files(vault))


def _session(sid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == sid and int(entry) != sid:
                    members.append(int(entry))
            except OSError:
                pass
    return members


def _small_model_folder(tmp_path: Path) -> Path:
    from model2vec import StaticModel

    from signaldesk.retrieval.embedder import bundled_model_path

    folder = tmp_path / "my-model"
    StaticModel.from_pretrained(bundled_model_path()).save_pretrained(folder)
    return folder


async def test_a_missing_model_folder_is_an_error_not_a_rebuild(
    vault: Path, tmp_path: Path
) -> None:
    folder = _small_model_folder(tmp_path)
    settings = IndexSettings(model=str(folder))
    _notes(vault)
    await Indexer(vault, settings, LazyEmbedder(settings), workers=1).run()
    live = index_db_path(vault, settings)
    before = counts(vault, settings)
    moved = folder.rename(tmp_path / "elsewhere")
    with pytest.raises(ModelError) as info:
        await Indexer(vault, settings, LazyEmbedder(settings), workers=1).run()
    assert "did not load" in info.value.message and "left as is" in info.value.message
    assert info.value.hint and "--full" in info.value.hint
    assert index_db_path(vault, settings) == live and counts(vault, settings) == before
    # Back in place: nothing to do.
    moved.rename(folder)
    report = await Indexer(vault, settings, LazyEmbedder(settings), workers=1).run()
    assert not report.full_rebuild and report.unchanged == 3
    # Asked for explicitly, a rebuild with the stand-in model is allowed.
    shutil.rmtree(folder)
    report = await Indexer(vault, settings, LazyEmbedder(settings), workers=1).run(full=True)
    assert report.full_rebuild and report.added == 3


def _corrupt_index_pages(db: Path, table: str) -> None:
    conn = connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (table,))]
    finally:
        conn.close()
    with db.open("r+b") as handle:
        for page in pages:
            handle.seek((page - 1) * PAGE_SIZE)
            handle.write(bytes((i * 13 + 5) % 256 for i in range(PAGE_SIZE)))


async def test_plain_index_finds_corruption_and_rebuilds_from_the_vault(vault: Path) -> None:
    _notes(vault, 30)
    await _indexer(vault).run()
    live = index_db_path(vault, SETTINGS)
    # An index b-tree the incremental run never reads: only quick_check sees it.
    _corrupt_index_pages(live, "notes_domain")
    quiet = await _indexer(vault).run()
    assert not quiet.full_rebuild  # without verification nothing notices
    report = await _indexer(vault, verify=True).run()
    assert report.full_rebuild and "quick_check" in (report.rebuild_reason or "")
    assert report.added == 30
    assert index_db_path(vault, SETTINGS) != live
    check_invariants(vault)


def test_a_garbled_pointer_is_an_error_not_a_guess(vault: Path) -> None:
    base = index_base_path(vault, SETTINGS)
    base.parent.mkdir(parents=True, exist_ok=True)
    pointer_path(base).write_text("../../etc/passwd\n")
    with pytest.raises(StoreError, match="names no index generation"):
        read_pointer(base)
    pointer_path(base).write_text("index-7.db\n")
    assert read_pointer(base) == base.with_name("index-7.db")


def test_readonly_connections_never_create_a_file(tmp_path: Path) -> None:
    from signaldesk.retrieval.errors import IndexUnavailableError

    target = tmp_path / "gone.db"
    with pytest.raises(IndexUnavailableError):
        connect(target, readonly=True)
    assert not target.exists()
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_disk_during_a_full_rebuild_keeps_the_previous_index(tmp_path: Path) -> None:
    from signaldesk.pipeline.vault_setup import init_vault

    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(disk)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        vault = disk / "vault"
        init_vault(vault)
        for i in range(60):
            write_note(vault, f"03-resources/d/n{i:03d}.md", section("Topic", f"topic{i} " * 40))
        assert _run_cli(vault, "index", "--json").returncode == 0
        before = counts(vault)
        live = index_db_path(vault, SETTINGS)
        # Leave room for less than a second copy of the index.
        free = shutil.disk_usage(disk).free
        (disk / "filler").write_bytes(b"\0" * max(0, free - live.stat().st_size // 2))
        done = _run_cli(vault, "index", "--full")
        assert done.returncode == 1, done.stderr
        assert "disk is full" in done.stderr and "previous index is kept" in done.stderr
        assert "Traceback" not in done.stderr
        assert index_db_path(vault, SETTINGS) == live and counts(vault) == before
        check_invariants(vault)
        assert not any(name.startswith("index-") for name in _state_files(vault))
        (disk / "filler").unlink()
        assert _run_cli(vault, "index", "--full").returncode == 0
        assert counts(vault) == before
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
