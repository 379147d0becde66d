"""The reference row: plain FTS5 BM25 over whole notes, one SQL query per question.

What someone would build in an afternoon instead of signaldesk: every note file
as one FTS5 row (its file name, and the file's text as is), the same tokenizer
as the product (``porter unicode61 remove_diacritics 2``) and the same safe
any-word ``MATCH`` (``retrieval.fts_query.build_match``), ranked by FTS5's
``bm25()`` with equal column weights. No chunks, no vectors, no fusion. The
table lives in its own database file beside the bench's index and is rebuilt
when the vault's files change.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from pathlib import Path
from typing import Any

from bench.quality.datasets import Dataset
from bench.quality.metrics import evaluate
from bench.quality.runner import DEPTH, ModeResult, ranked_docs
from signaldesk.retrieval.fts_query import build_match
from signaldesk.retrieval.store import sqlite_module

__all__ = ["LABEL", "run_note_fts"]

LABEL = "whole-note FTS5 (reference)"

_QUERY = "SELECT path FROM notes WHERE notes MATCH ? ORDER BY bm25(notes) LIMIT ?"


def _fingerprint(files: list[Path], vault: Path) -> str:
    digest = hashlib.blake2b(digest_size=12)
    for f in files:
        st = f.stat()
        digest.update(
            f"{f.relative_to(vault).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode()
        )
    return digest.hexdigest()


def _open(vault: Path, db_path: Path) -> Any:
    files = sorted(p for p in vault.rglob("*.md") if p.is_file())
    stamp = _fingerprint(files, vault)
    conn = sqlite_module().connect(str(db_path))
    conn.execute("CREATE TABLE IF NOT EXISTS stamp (value TEXT)")
    row = conn.execute("SELECT value FROM stamp").fetchone()
    if row is not None and row[0] == stamp:
        return conn
    conn.execute("DROP TABLE IF EXISTS notes")
    conn.execute(
        "CREATE VIRTUAL TABLE notes USING fts5("
        "path UNINDEXED, name, body, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    conn.executemany(
        "INSERT INTO notes (path, name, body) VALUES (?, ?, ?)",
        (
            (f.relative_to(vault).as_posix(), f.stem, f.read_text("utf-8", errors="replace"))
            for f in files
        ),
    )
    conn.execute("DELETE FROM stamp")
    conn.execute("INSERT INTO stamp (value) VALUES (?)", (stamp,))
    conn.commit()
    return conn


def run_note_fts(dataset: Dataset, vault: Path, db_path: Path) -> ModeResult:
    """Every query of ``dataset`` as one whole-note FTS5 query."""
    conn = _open(vault, db_path)
    run: dict[str, list[str]] = {}
    latencies: list[float] = []
    try:
        for qid, query in dataset.queries.items():
            started = time.perf_counter()
            match = build_match(query)
            rows = [] if match is None else conn.execute(_QUERY, (match, DEPTH)).fetchall()
            latencies.append((time.perf_counter() - started) * 1000)
            run[qid] = ranked_docs(dataset, [str(r[0]) for r in rows])
    finally:
        conn.close()
    return ModeResult(
        LABEL,
        evaluate(run, dataset.qrels),
        statistics.median(latencies) if latencies else 0.0,
        run,
    )
