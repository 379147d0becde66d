"""Text of deleted and excluded notes is gone from the index file after an incremental run.

Issue 12: it stayed readable in ``index.db`` free pages. The writer zeroes what it
deletes (``secure_delete``), rewrites the keyword index after deletions (a contentless
FTS5 table keeps a deleted row's terms until then) and truncates the WAL.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.store import index_db_path
from tests.index_helpers import SETTINGS, db, real_embedder, section, write_note

pytestmark = pytest.mark.anyio

DELETED = ("quarkzephyrine", "blorptastical")
EXCLUDED = ("snorfwiddle", "plimbusquade")


def _raw(vault: Path) -> bytes:
    folder = index_db_path(vault, SETTINGS).parent
    return b"".join(p.read_bytes() for p in sorted(folder.glob("index.db*")) if p.is_file())


def _vectors(vault: Path, path: str) -> list[bytes]:
    conn = db(vault)
    try:
        return [
            bytes(row[0])
            for row in conn.execute(
                "SELECT v.embedding FROM chunk_vectors v JOIN chunks c ON c.id = v.rowid "
                "JOIN notes n ON n.id = c.note_id WHERE n.path = ?",
                (path,),
            )
        ]
    finally:
        conn.close()


async def test_deleted_and_excluded_notes_leave_no_trace_in_the_file(vault: Path) -> None:
    for i in range(20):
        write_note(vault, f"03-resources/keep-{i}.md", section("Body", f"ordinary filler {i}"))
    write_note(vault, "03-resources/gone.md", section("Plans", " ".join(DELETED)))
    write_note(vault, "02-areas/private.md", section("Diary", " ".join(EXCLUDED)))
    embedder = real_embedder()
    await Indexer(vault, SETTINGS, embedder).run()
    vectors = _vectors(vault, "03-resources/gone.md") + _vectors(vault, "02-areas/private.md")
    raw = _raw(vault)
    # The probe works: before the deletion, words and vectors are in the file.
    assert all(word.encode() in raw for word in DELETED + EXCLUDED)
    assert vectors and all(v in raw for v in vectors)

    (vault / "03-resources/gone.md").unlink()
    (vault / ".indexignore").write_text("02-areas/private.md\n", encoding="utf-8")
    await Indexer(vault, SETTINGS, embedder).run()

    raw = _raw(vault)
    for word in DELETED + EXCLUDED:
        # The chunk text, the note row, and the keyword index's (stemmed) term.
        assert word[:9].encode() not in raw, word
    for vector in vectors:
        assert vector not in raw
    wal = index_db_path(vault, SETTINGS).with_name("index.db-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    # The rest of the index still answers.
    conn = db(vault)
    try:
        assert conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 20
        hits = conn.execute(
            "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'ordinary'"
        ).fetchone()[0]
        assert hits == 20
    finally:
        conn.close()
