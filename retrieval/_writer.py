"""The indexer's side of the database: one synchronous connection, explicit transactions.

Every method that writes does so in one ``BEGIN IMMEDIATE`` ... ``COMMIT`` and
bumps the ``generation`` meta value inside the same transaction, so a reader
that sees a new generation also sees all of that transaction's rows, and a
crash (even ``kill -9``) loses at most the transaction in flight.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from signaldesk.retrieval._prepare import ISO_UTC, PreparedNote, SkippedNote
from signaldesk.retrieval.errors import StoreError
from signaldesk.retrieval.schema import (
    FTS_DELETE_ALL,
    FTS_DELETE_TRIGGER,
    FTS_TABLE,
    NOTE_FTS_DELETE_ALL,
    NOTE_FTS_DELETE_TRIGGER,
    NOTE_FTS_TABLE,
    VECTOR_DELETE_TRIGGER,
    VECTOR_TABLE,
    vector_table_ddl,
)
from signaldesk.retrieval.store import (
    Connection,
    capabilities,
    connect,
    get_meta,
    migrate,
    set_meta,
)

__all__ = ["IndexWriter", "ModelMeta", "WriterLike", "quantize"]

logger = logging.getLogger(__name__)

# SQLite's default limit on host parameters is 32766 since 3.32; stay well below.
_IN_BATCH = 500

_INSERT_NOTE = (
    "INSERT INTO notes (id, path, title, type, domain, status, tags, created, updated, "
    "frontmatter, mtime_ns, size, content_hash, indexed_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_CHUNK = (
    "INSERT INTO chunks (id, note_id, ordinal, section, heading_path, text, start_line, "
    "embed_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_FTS = f"INSERT INTO {FTS_TABLE} (rowid, text, section, context) VALUES (?, ?, ?, ?)"
_INSERT_NOTE_FTS = (
    f"INSERT INTO {NOTE_FTS_TABLE} (rowid, title, aliases, file, tags, headings, body) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_NOTE_KEY = "INSERT OR IGNORE INTO note_keys (key, note_id) VALUES (?, ?)"
_INSERT_SKIPPED = (
    "INSERT INTO skipped (path, mtime_ns, size, reason) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (path) DO UPDATE SET mtime_ns = excluded.mtime_ns, size = excluded.size, "
    "reason = excluded.reason"
)


@dataclass(frozen=True, slots=True)
class ModelMeta:
    """The embedding model (and vector format) an index was built with."""

    name: str
    fingerprint: str
    dimensions: int
    vector_type: str  # "float" | "int8" | "none"
    source_key: str | None = None  # embedder.source_key: lets a reader skip hashing the model


class WriterLike(Protocol):
    """What an indexing run needs of its store: the SQLite :class:`IndexWriter` or the
    PostgreSQL one (``retrieval.pg_writer.PgIndexWriter``)."""

    @property
    def has_vec(self) -> bool: ...

    @property
    def vector_type(self) -> str: ...

    def meta(self, key: str) -> str | None: ...

    def model_meta(self) -> ModelMeta | None: ...

    def note_count(self) -> int: ...

    def known_hashes(self, paths: list[str]) -> dict[str, str]: ...

    def lookup_vectors(self, hashes: Iterable[str]) -> dict[str, bytes]: ...

    def delete_paths(self, paths: Sequence[str]) -> None: ...

    def write_batch(
        self,
        notes: Sequence[PreparedNote],
        skipped: Sequence[SkippedNote],
        touched: Sequence[tuple[str, int, int, bool]],
        vectors: dict[str, bytes],
    ) -> None: ...


def quantize(vectors: npt.NDArray[np.float32], vector_type: str) -> list[bytes]:
    """Blobs for ``chunk_vectors``: float32 as is, or int8 as ``round(v * 127)``.

    The vectors are L2-normalised, so every component is in [-1, 1] and 127 keeps
    the full int8 range; the retriever divides by 127 (or re-normalises).
    """
    if vector_type == "int8":
        q = np.clip(np.rint(vectors * 127.0), -127, 127).astype(np.int8)
        return [row.tobytes() for row in q]
    as_float = np.ascontiguousarray(vectors, dtype=np.float32)
    return [row.tobytes() for row in as_float]


class IndexWriter:
    """Write access to one index database (the caller holds the writer lock)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        conn.isolation_level = None  # transactions are explicit below
        conn.execute("PRAGMA cache_size = -65536")
        conn.execute("PRAGMA temp_store = MEMORY")
        # Deleted content is overwritten with zeros, not left in free pages (issue 12).
        conn.execute("PRAGMA secure_delete = ON")
        caps = capabilities(conn)
        self.has_vec = caps.vec
        self.has_fts = caps.fts5
        self.generation = int(get_meta(conn, "generation") or 0)
        self._next_note_id = self._max_id("notes") + 1
        self._next_chunk_id = self._max_id("chunks") + 1
        self.vector_type = get_meta(conn, "vector_type") or "none"
        self.wrote = False
        self.purge = False  # rows were deleted: purge their traces when closing
        self._closed = False

    @classmethod
    def open(cls, db_path: Path) -> IndexWriter:
        """Open (creating and migrating as needed).

        :raises DatabaseError: of the SQLite module in use, when the file is
            not a usable database (:func:`is_corruption_error` tells).
        """
        conn = connect(db_path)
        try:
            migrate(conn)
            # Touch every table the run relies on, so corruption shows up here.
            conn.execute("SELECT count(*) FROM meta").fetchone()
            conn.execute("SELECT max(id) FROM notes").fetchone()
            conn.execute("SELECT max(id) FROM chunks").fetchone()
            return cls(conn)
        except BaseException:
            conn.close()
            raise

    def quick_check(self) -> str | None:
        """What ``PRAGMA quick_check`` finds wrong with the file (``None``: nothing).

        It reads every page (about a second per 100 MB), so only a whole-vault run
        asks for it; a run over a few written paths relies on SQLite's own errors.
        """
        rows = [str(r[0]) for r in self.conn.execute("PRAGMA quick_check(5)")]
        return None if rows == ["ok"] else "; ".join(rows)

    def seed_generation(self, value: int) -> None:
        """Start this (new, empty) file's ``generation`` counter at ``value``."""
        self.generation = value

    def seal(self) -> None:
        """Copy the WAL into the database file and fsync it, before the file is published.

        With ``synchronous = NORMAL`` a commit is not fsynced until a checkpoint; a
        rebuilt file must be durable before the pointer names it.
        """
        busy, _, _ = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise StoreError("the new index could not be checkpointed (still in use)")

    def close(self) -> None:
        """Close the connection (again: a no-op)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            if self.purge and self.has_fts:
                # Trigger: notes deleted, excluded or replaced. Why: the keyword index
                # keeps a deleted row's terms (contentless_delete only marks it) until
                # its segment is rewritten; so does the note-level one, which holds the
                # whole note's words. Outcome: one rewrite of each (0.3 s for the chunk
                # index at 45k notes), their freed pages zeroed by secure_delete.
                for table in (FTS_TABLE, NOTE_FTS_TABLE):
                    self.conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            if self.wrote:
                self.conn.execute("PRAGMA optimize")
                # TRUNCATE after a purge: stale WAL frames would still hold the old pages.
                mode = "TRUNCATE" if self.purge else "PASSIVE"
                self.conn.execute(f"PRAGMA wal_checkpoint({mode})")
        self.conn.close()

    # -- reading ---------------------------------------------------------------

    def model_meta(self) -> ModelMeta | None:
        fingerprint = get_meta(self.conn, "model_fingerprint")
        if fingerprint is None:
            return None
        return ModelMeta(
            name=get_meta(self.conn, "model_name") or "",
            fingerprint=fingerprint,
            dimensions=int(get_meta(self.conn, "dimensions") or 0),
            vector_type=get_meta(self.conn, "vector_type") or "none",
        )

    def meta(self, key: str) -> str | None:
        return get_meta(self.conn, key)

    def known_hashes(self, paths: list[str]) -> dict[str, str]:
        """The stored content hash of each of ``paths`` that is an indexed note."""
        from signaldesk.retrieval._scan import known_hashes

        return known_hashes(self.conn, paths)

    def note_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM notes").fetchone()[0])

    def vector_table_exists(self) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = ?", (VECTOR_TABLE,)
        ).fetchone()
        return row is not None

    def lookup_vectors(self, hashes: Iterable[str]) -> dict[str, bytes]:
        """Stored vectors for any chunk, anywhere in the index, with these embed hashes."""
        if self.vector_type == "none":
            return {}
        ids: dict[str, int] = {}
        for part in _parts(list(hashes)):
            marks = ",".join("?" * len(part))
            for digest, chunk_id in self.conn.execute(
                f"SELECT embed_hash, min(id) FROM chunks WHERE embed_hash IN ({marks}) "
                "GROUP BY embed_hash",
                part,
            ):
                ids[digest] = chunk_id
        found: dict[str, bytes] = {}
        for digest, chunk_id in ids.items():
            row = self.conn.execute(
                f"SELECT embedding FROM {VECTOR_TABLE} WHERE rowid = ?", (chunk_id,)
            ).fetchone()
            if row is not None:
                found[digest] = bytes(row[0])
        return found

    # -- writing ---------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` with the generation bump inside it."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.generation += 1
            set_meta(self.conn, "generation", str(self.generation))
            # Unique across rebuilds and re-created files (the counter is not): what
            # the vector cache beside the index is checked against (vector_cache.py).
            set_meta(self.conn, "generation_id", uuid.uuid4().hex)
            set_meta(self.conn, "last_indexed", datetime.now(UTC).strftime(ISO_UTC))
            self.conn.execute("COMMIT")
        except BaseException:
            self.generation = int(self._rollback_generation())
            raise
        self.wrote = True

    def _rollback_generation(self) -> int:
        with contextlib.suppress(Exception):
            self.conn.execute("ROLLBACK")
        try:
            return int(get_meta(self.conn, "generation") or 0)
        except Exception:
            return self.generation

    def reset(self, model: ModelMeta, index_format: str) -> None:
        """Empty the index and record ``model``, in one transaction (a full rebuild starts here).

        The delete triggers are dropped while the tables are emptied in bulk (one
        statement each instead of one trigger call per chunk) and re-created.
        """
        with self.transaction():
            c = self.conn
            c.execute("DROP TRIGGER IF EXISTS chunks_fts_delete")
            c.execute("DROP TRIGGER IF EXISTS chunks_vec_delete")
            c.execute("DROP TRIGGER IF EXISTS notes_fts_delete")
            c.execute("DELETE FROM chunks")
            c.execute("DELETE FROM note_keys")
            c.execute("DELETE FROM notes")
            c.execute("DELETE FROM skipped")
            c.execute(FTS_DELETE_ALL)
            c.execute(FTS_DELETE_TRIGGER)
            c.execute(NOTE_FTS_DELETE_ALL)
            c.execute(NOTE_FTS_DELETE_TRIGGER)
            if self.has_vec:
                c.execute(f"DROP TABLE IF EXISTS {VECTOR_TABLE}")
            self._record_model(model, index_format)
        self._next_note_id = 1
        self._next_chunk_id = 1

    def set_model(self, model: ModelMeta, index_format: str) -> None:
        """Record ``model`` on an index that has no vectors yet (a first build)."""
        with self.transaction():
            self._record_model(model, index_format)

    def set_index_format(self, index_format: str) -> None:
        with self.transaction():
            set_meta(self.conn, "index_format", index_format)

    def _record_model(self, model: ModelMeta, index_format: str) -> None:
        c = self.conn
        if model.vector_type != "none" and self.has_vec:
            c.execute(vector_table_ddl(model.dimensions, model.vector_type))
            c.execute(VECTOR_DELETE_TRIGGER)
        set_meta(c, "model_name", model.name)
        set_meta(c, "model_fingerprint", model.fingerprint)
        set_meta(c, "dimensions", str(model.dimensions))
        set_meta(c, "vector_type", model.vector_type)
        set_meta(c, "index_format", index_format)
        if model.source_key:
            set_meta(c, "model_source_key", model.source_key)
        else:  # a key left from another model must never vouch for this fingerprint
            c.execute("DELETE FROM meta WHERE key = 'model_source_key'")
        self.vector_type = model.vector_type if self.has_vec else "none"

    def touch(self) -> None:
        """Commit nothing but a new generation (and its ``generation_id``)."""
        with self.transaction():
            pass

    def set_source_key(self, key: str) -> None:
        """Record the files the (unchanged) model is loaded from, for readers to trust."""
        with self.transaction():
            set_meta(self.conn, "model_source_key", key)

    def delete_paths(self, paths: Sequence[str]) -> None:
        """Remove notes (their chunks, keyword rows and vectors go with them) and skip rows."""
        with self.transaction():
            self._delete(paths)

    def _delete(self, paths: Sequence[str]) -> None:
        rows = [(p,) for p in paths]
        c = self.conn
        chunks = c.executemany(
            "DELETE FROM chunks WHERE note_id = (SELECT id FROM notes WHERE path = ?)", rows
        ).rowcount
        notes = c.executemany("DELETE FROM notes WHERE path = ?", rows).rowcount
        self.purge = self.purge or chunks > 0 or notes > 0
        c.executemany("DELETE FROM skipped WHERE path = ?", rows)

    def write_batch(
        self,
        notes: Sequence[PreparedNote],
        skipped: Sequence[SkippedNote],
        touched: Sequence[tuple[str, int, int, bool]],
        vectors: dict[str, bytes],
    ) -> None:
        """Replace ``notes`` and ``skipped`` files, refresh ``touched`` stats, in one transaction.

        :param touched: ``(path, mtime_ns, size, is_skipped)`` of files whose content
            did not change.
        :param vectors: blob per embed hash; a chunk without one gets no vector.
        """
        now = datetime.now(UTC).strftime(ISO_UTC)
        note_rows: list[tuple[Any, ...]] = []
        chunk_rows: list[tuple[Any, ...]] = []
        fts_rows: list[tuple[Any, ...]] = []
        note_fts_rows: list[tuple[Any, ...]] = []
        key_rows: list[tuple[str, int]] = []
        vec_rows: list[tuple[int, bytes]] = []
        note_id, chunk_id = self._next_note_id, self._next_chunk_id
        for note in notes:
            note_rows.append(
                (
                    note_id,
                    note.path,
                    note.title,
                    note.note_type,
                    note.domain,
                    note.status,
                    note.tags,
                    note.created,
                    note.updated,
                    note.frontmatter,
                    note.mtime_ns,
                    note.size,
                    note.content_hash,
                    now,
                )
            )
            if note.fts is not None:
                f = note.fts
                note_fts_rows.append(
                    (note_id, f.title, f.aliases, f.file, f.tags, f.headings, f.body)
                )
                key_rows.extend((key, note_id) for key in f.keys)
            for chunk in note.chunks:
                chunk_rows.append(
                    (
                        chunk_id,
                        note_id,
                        chunk.ordinal,
                        chunk.section,
                        chunk.heading_path,
                        chunk.text,
                        chunk.start_line,
                        chunk.embed_hash,
                    )
                )
                fts_rows.append((chunk_id, chunk.fts_text, chunk.fts_section, chunk.fts_context))
                blob = vectors.get(chunk.embed_hash)
                if blob is not None:
                    vec_rows.append((chunk_id, blob))
                chunk_id += 1
            note_id += 1
        c = self.conn
        with self.transaction():
            self._delete([n.path for n in notes] + [s.path for s in skipped])
            c.executemany(_INSERT_NOTE, note_rows)
            c.executemany(_INSERT_CHUNK, chunk_rows)
            c.executemany(_INSERT_NOTE_KEY, key_rows)
            if self.has_fts:
                c.executemany(_INSERT_FTS, fts_rows)
                c.executemany(_INSERT_NOTE_FTS, note_fts_rows)
            if vec_rows and self.vector_type != "none":
                wrap = "vec_int8(?)" if self.vector_type == "int8" else "?"
                c.executemany(
                    f"INSERT INTO {VECTOR_TABLE} (rowid, embedding) VALUES (?, {wrap})", vec_rows
                )
            c.executemany(
                _INSERT_SKIPPED, [(s.path, s.mtime_ns, s.size, s.reason) for s in skipped]
            )
            c.executemany(
                "UPDATE notes SET mtime_ns = ?, size = ? WHERE path = ?",
                [(m, s, p) for p, m, s, is_skipped in touched if not is_skipped],
            )
            c.executemany(
                "UPDATE skipped SET mtime_ns = ?, size = ? WHERE path = ?",
                [(m, s, p) for p, m, s, is_skipped in touched if is_skipped],
            )
        self._next_note_id, self._next_chunk_id = note_id, chunk_id

    def _max_id(self, table: str) -> int:
        return int(self.conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0])


def _parts(items: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), _IN_BATCH):
        yield items[start : start + _IN_BATCH]
