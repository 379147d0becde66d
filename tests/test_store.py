"""The index database: opening, migrating, the vector table, corruption detection, the lock."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

from signaldesk.retrieval._writer import quantize
from signaldesk.retrieval.errors import IndexLockedError, IndexUnavailableError, StoreError
from signaldesk.retrieval.lock import IndexLock
from signaldesk.retrieval.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    VECTOR_DELETE_TRIGGER,
    vector_table_ddl,
)
from signaldesk.retrieval.settings import IndexSettings
from signaldesk.retrieval.store import (
    PAGE_SIZE,
    capabilities,
    connect,
    get_meta,
    index_db_path,
    is_corruption_error,
    migrate,
    set_meta,
    sqlite_module,
)


def test_a_new_database_is_migrated_to_the_latest_version(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.db")
    try:
        assert migrate(conn) == 0
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert migrate(conn) == SCHEMA_VERSION  # idempotent
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert {"meta", "notes", "chunks", "chunks_fts", "skipped"} <= tables
    finally:
        conn.close()


def test_a_v1_database_gains_the_skipped_table(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.db")
    try:
        conn.executescript(f"BEGIN; {MIGRATIONS[0]} PRAGMA user_version = 1; COMMIT;")
        conn.execute(
            "INSERT INTO notes (path, title, mtime_ns, size, content_hash, indexed_at) "
            "VALUES ('a.md', 'a', 1, 1, 'h', 'now')"
        )
        conn.commit()
        assert migrate(conn) == 1
        assert conn.execute("SELECT count(*) FROM skipped").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 1  # data kept
    finally:
        conn.close()


def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.db")
    try:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        with pytest.raises(StoreError) as info:
            migrate(conn)
        assert "newer" in info.value.message and info.value.hint
    finally:
        conn.close()


def test_meta_round_trip_and_paths(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.db")
    try:
        migrate(conn)
        assert get_meta(conn, "generation") is None
        set_meta(conn, "generation", "1")
        set_meta(conn, "generation", "2")
        assert get_meta(conn, "generation") == "2"
    finally:
        conn.close()
    vault = tmp_path / "vault"
    assert index_db_path(vault, IndexSettings()) == vault / ".signaldesk" / "index.db"
    absolute = tmp_path / "elsewhere.db"
    assert index_db_path(vault, IndexSettings(db_path=str(absolute))) == absolute


def test_readonly_connect_to_a_missing_index_says_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(IndexUnavailableError) as info:
        connect(tmp_path / "missing.db", readonly=True)
    assert "signaldesk index" in (info.value.hint or "")


def test_capabilities_on_this_machine(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.db")
    try:
        caps = capabilities(conn)
    finally:
        conn.close()
    assert caps.fts5 and caps.vec and caps.vec_version
    assert tuple(int(x) for x in caps.sqlite_version.split(".")[:2]) >= (3, 43)
    # This Python's stdlib sqlite3 cannot load extensions, so sqlean's is used.
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        assert sqlite_module() is not sqlite3


def test_int8_cosine_vectors_and_the_delete_trigger(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.db")
    try:
        migrate(conn)
        conn.execute(vector_table_ddl(8, "int8"))
        conn.executescript(VECTOR_DELETE_TRIGGER)
        rng = np.random.default_rng(7)
        vectors = rng.standard_normal((20, 8)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        blobs = quantize(vectors, "int8")
        assert all(len(b) == 8 for b in blobs)
        conn.execute(
            "INSERT INTO notes (id, path, title, mtime_ns, size, content_hash, indexed_at) "
            "VALUES (1, 'a.md', 'a', 1, 1, 'h', 'now')"
        )
        for i, blob in enumerate(blobs, start=1):
            conn.execute(
                "INSERT INTO chunks (id, note_id, ordinal, section, heading_path, text, "
                "start_line, embed_hash) VALUES (?, 1, ?, '', '[]', 't', 1, 'e')",
                (i, i),
            )
            conn.execute(
                "INSERT INTO chunks_fts (rowid, text, section, context) VALUES (?, 'x', '', '')",
                (i,),
            )
            conn.execute(
                "INSERT INTO chunk_vectors (rowid, embedding) VALUES (?, vec_int8(?))", (i, blob)
            )
        query = quantize(vectors[4:5], "int8")[0]
        rows = conn.execute(
            "SELECT rowid, distance FROM chunk_vectors WHERE embedding MATCH vec_int8(?) AND k = 3",
            (query,),
        ).fetchall()
        assert rows[0][0] == 5 and rows[0][1] == pytest.approx(0.0, abs=1e-3)
        # Cosine on int8 agrees with cosine on the float vectors.
        expected = 1 - vectors @ vectors[4]
        for rowid, distance in rows:
            assert distance == pytest.approx(expected[rowid - 1], abs=0.02)
        conn.execute("DELETE FROM chunks WHERE id = 5")
        assert conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0] == 19
        assert conn.execute("SELECT count(*) FROM chunks_fts").fetchone()[0] == 19
    finally:
        conn.close()


def test_corruption_is_told_apart_from_other_errors(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    path.write_bytes(b"garbage" * 1000)
    module = sqlite_module()
    with pytest.raises(module.DatabaseError) as info:
        connect(path)
    assert is_corruption_error(info.value)
    assert not is_corruption_error(module.OperationalError("database is locked"))
    assert not is_corruption_error(ValueError("file is not a database"))


def test_the_lock_is_exclusive_and_bounded(tmp_path: Path) -> None:
    db_path = tmp_path / "index.db"
    first = IndexLock(db_path)
    first.acquire()
    try:
        with pytest.raises(IndexLockedError) as info:
            IndexLock(db_path, timeout=0.1).acquire()
        assert "another process" in info.value.message
        # A waiter gets the lock once the holder lets go.
        got = threading.Event()
        waiter = IndexLock(db_path, timeout=30)

        def wait() -> None:
            with waiter:
                got.set()

        thread = threading.Thread(target=wait)
        thread.start()
    finally:
        first.release()
    thread.join(timeout=30)
    assert got.is_set() and not waiter.held
