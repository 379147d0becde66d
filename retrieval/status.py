"""What is in the index, read without the writer lock and without loading a model."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from signaldesk.retrieval.errors import StoreError
from signaldesk.retrieval.generations import ReaderLease
from signaldesk.retrieval.records import IndexStatus
from signaldesk.retrieval.schema import VECTOR_TABLE
from signaldesk.retrieval.store import Connection, capabilities, connect, get_meta, index_base_path

if TYPE_CHECKING:
    from signaldesk.retrieval.settings import IndexSettings

__all__ = ["SearchModes", "db_bytes", "index_status", "read_status", "search_modes"]

logger = logging.getLogger(__name__)


def index_status(vault: Path, settings: IndexSettings) -> IndexStatus:
    """Counts, size, model and degraded search modes of the index of ``vault``.

    Never raises for a missing or unreadable index: ``exists`` is then ``False``
    (or ``degraded`` says what is wrong) so ``signaldesk index --status`` and
    ``doctor`` can always report.
    """
    base = index_base_path(Path(vault), settings)
    try:
        # The lease keeps a full rebuild's clean-up from deleting the file meanwhile.
        lease = ReaderLease.take(base)
    except StoreError as exc:
        return IndexStatus(
            db_path=str(base),
            exists=True,
            degraded=(f"{exc.message}: {exc.hint or 'run `signaldesk index --full`'}",),
        )
    if lease is None:
        return IndexStatus(
            db_path=str(base),
            exists=False,
            degraded=("no index yet: run `signaldesk index`",),
        )
    try:
        return _status_of(lease.db)
    finally:
        lease.release()


@dataclass(frozen=True, slots=True)
class SearchModes:
    """Which lists an index can be searched with, and, for each it cannot, why."""

    keyword: bool
    vector: bool
    degraded: tuple[str, ...]


def search_modes(conn: Connection) -> SearchModes:
    """What this SQLite and this index file allow (the one wording of every degraded mode)."""
    caps = capabilities(conn)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    degraded: list[str] = []
    keyword = caps.fts5 and "chunks_fts" in tables
    if not keyword:
        degraded.append("no FTS5 keyword index: vector search only")
    vector = caps.vec and VECTOR_TABLE in tables
    if not caps.vec:
        degraded.append(f"sqlite-vec not loadable ({caps.vec_error}): keyword (BM25) search only")
    elif VECTOR_TABLE not in tables or get_meta(conn, "vector_type") in (None, "none"):
        degraded.append(
            "the index holds no vectors (no model when it was built): keyword (BM25) search only"
        )
    return SearchModes(keyword, vector, tuple(degraded))


def db_bytes(db_path: Path) -> int:
    """The index file and its write-ahead log, in bytes."""
    return sum(
        p.stat().st_size for p in (db_path, db_path.with_name(db_path.name + "-wal")) if p.exists()
    )


def _status_of(db_path: Path) -> IndexStatus:
    size = db_bytes(db_path)
    try:
        conn = connect(db_path, readonly=True)
    except Exception as exc:
        return IndexStatus(
            db_path=str(db_path),
            exists=True,
            db_bytes=size,
            degraded=(f"index unreadable ({exc}): run `signaldesk index` to rebuild it",),
        )
    try:
        return read_status(conn, db_path, size)
    except Exception as exc:
        logger.debug("index status failed", exc_info=True)
        return IndexStatus(
            db_path=str(db_path),
            exists=True,
            db_bytes=size,
            degraded=(f"index unreadable ({exc}): run `signaldesk index` to rebuild it",),
        )
    finally:
        conn.close()


def read_status(conn: Connection, db_path: Path, size: int) -> IndexStatus:
    """Counts, model and degraded modes from an open connection, in one snapshot."""
    own_snapshot = not conn.in_transaction
    if own_snapshot:
        conn.execute("BEGIN")  # one snapshot for every count
    try:
        notes = _count(conn, "notes")
        chunks = _count(conn, "chunks")
        modes = search_modes(conn)
        vectors = _count(conn, VECTOR_TABLE) if modes.vector else 0
        folders: dict[str, int] = {}
        for folder, count in conn.execute(
            "SELECT CASE WHEN instr(path, '/') > 0 THEN substr(path, 1, instr(path, '/') - 1) "
            "ELSE '.' END AS folder, count(*) FROM notes GROUP BY folder ORDER BY folder"
        ):
            folders[str(folder)] = int(count)
        model = get_meta(conn, "model_name") or None
        dims = get_meta(conn, "dimensions")
        last = get_meta(conn, "last_indexed")
        stored = modes.vector and get_meta(conn, "vector_type") not in (None, "none")
    finally:
        if own_snapshot:
            conn.execute("COMMIT")
    degraded = list(modes.degraded)
    if stored and vectors < chunks:
        degraded.append(f"{chunks - vectors} chunks have no vector: run `signaldesk index`")
    last_indexed = None
    if last:
        with contextlib.suppress(ValueError):
            last_indexed = datetime.fromisoformat(last)
    return IndexStatus(
        db_path=str(db_path),
        exists=True,
        notes=notes,
        chunks=chunks,
        vectors=vectors,
        db_bytes=size,
        model=model,
        dimensions=int(dims) if dims and dims.isdigit() and int(dims) > 0 else None,
        last_indexed=last_indexed,
        degraded=tuple(degraded),
        folders=folders,
    )


def _count(conn: Connection, table: str) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
