"""Shared by the indexer tests: writing notes, counting embeddings, checking invariants."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from signaldesk.retrieval.embedder import BUNDLED_MODEL_NAME, Embedder, load_embedder
from signaldesk.retrieval.settings import IndexSettings
from signaldesk.retrieval.store import connect, index_db_path

SETTINGS = IndexSettings(model=BUNDLED_MODEL_NAME)

_EMBEDDER: Embedder | None = None


def real_embedder() -> Embedder:
    """The bundled model, loaded once per test session."""
    global _EMBEDDER
    if _EMBEDDER is None:
        _EMBEDDER = load_embedder(SETTINGS)
    return _EMBEDDER


class CountingEmbedder:
    """Wraps a real embedder and counts what it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls = 0
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.texts.extend(texts)
        return self.inner.encode(texts)

    def reset(self) -> None:
        self.calls = 0
        self.texts.clear()


def section(title: str, words: str, repeat: int = 12) -> str:
    """An H2 section long enough (> min_chars) to be a chunk of its own."""
    body = " ".join(f"{words} sentence {i} about {title.lower()}." for i in range(repeat))
    return f"## {title}\n\n{body}\n"


def write_note(
    vault: Path, rel: str, body: str, *, title: str | None = None, tags: str = ""
) -> Path:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    front = f"---\ntitle: {title or path.stem}\n" + (f"tags: [{tags}]\n" if tags else "") + "---\n"
    path.write_text(front + body, encoding="utf-8")
    return path


def bump_mtime(path: Path, seconds: float = 5.0) -> None:
    """Move a file's mtime forward without touching its content."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + int(seconds * 1e9)))


def db(vault: Path, settings: IndexSettings = SETTINGS) -> Any:
    return connect(index_db_path(vault, settings), readonly=True)


def counts(vault: Path, settings: IndexSettings = SETTINGS) -> dict[str, int]:
    conn = db(vault, settings)
    try:
        out = {
            name: int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            for name, table in (
                ("notes", "notes"),
                ("chunks", "chunks"),
                ("fts", "chunks_fts"),
                ("vectors", "chunk_vectors"),
            )
        }
    finally:
        conn.close()
    return out


def check_invariants(vault: Path, settings: IndexSettings = SETTINGS) -> dict[str, int]:
    """integrity_check ok; FTS rows = chunks = vectors, all with matching ids; no duplicates."""
    conn = db(vault, settings)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 0)")
        chunk_ids = {r[0] for r in conn.execute("SELECT id FROM chunks")}
        fts_ids = {r[0] for r in conn.execute("SELECT rowid FROM chunks_fts")}
        vec_ids = {r[0] for r in conn.execute("SELECT rowid FROM chunk_vectors")}
        assert chunk_ids == fts_ids == vec_ids
        dupes = conn.execute(
            "SELECT count(*) FROM (SELECT note_id, ordinal FROM chunks "
            "GROUP BY note_id, ordinal HAVING count(*) > 1)"
        ).fetchone()[0]
        assert dupes == 0
        orphans = conn.execute(
            "SELECT count(*) FROM chunks WHERE note_id NOT IN (SELECT id FROM notes)"
        ).fetchone()[0]
        assert orphans == 0
        notes = conn.execute("SELECT count(*) FROM notes").fetchone()[0]
        return {"notes": notes, "chunks": len(chunk_ids)}
    finally:
        conn.close()


def wait_for(condition: Callable[[], bool], *, timeout: float = 60.0, what: str = "") -> None:
    """Poll ``condition`` until it holds (bounded): waiting for a state, not for time."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(0.02)


def fts_paths(vault: Path, query: str, settings: IndexSettings = SETTINGS) -> set[str]:
    conn = db(vault, settings)
    try:
        return {
            r[0]
            for r in conn.execute(
                "SELECT n.path FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
                "JOIN notes n ON n.id = c.note_id WHERE chunks_fts MATCH ?",
                (query,),
            )
        }
    finally:
        conn.close()
