"""The indexer's side of the PostgreSQL index: one vault's rows, one connection, one writer.

Like :class:`~retrieval._writer.IndexWriter` for SQLite: every method that writes does so
in one transaction that also bumps the vault's ``generation`` and refreshes its BM25
totals, so a reader that sees a new generation sees all of that transaction's rows. The
rows of other vaults are never touched, and one writer per vault is guaranteed by a
session advisory lock (:meth:`PgIndexWriter.lock`); writers of different vaults run at
once. A full rebuild (:meth:`PgIndexWriter.rebuilding`) is one transaction: readers keep
seeing the vault's old rows until it commits, and a failed or stopped rebuild rolls back.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from signaldesk.postgres import PostgresError, PostgresSettings, connect, migrate, server_info
from signaldesk.retrieval._prepare import PreparedNote, SkippedNote
from signaldesk.retrieval._writer import ModelMeta
from signaldesk.retrieval.errors import IndexLockedError, StoreError
from signaldesk.retrieval.fts_terms import term_postings
from signaldesk.retrieval.pg_schema import COMPONENT, MIGRATIONS, vector_ddl

__all__ = ["PgIndexWriter", "open_database", "pg_text", "vector_literal"]

logger = logging.getLogger(__name__)

_VECTOR_HINT = (
    "install pgvector on the server (https://github.com/pgvector/pgvector), or use an image "
    "that has it (pgvector/pgvector)"
)
# Keys of the advisory lock of one vault's writer: (this constant, hashtext(vault)).
_LOCK_CLASS = 0x5D1D


def pg_text(value: str) -> str:
    """``value`` without NUL characters, which PostgreSQL text and jsonb cannot hold."""
    return value.replace("\x00", "\ufffd") if "\x00" in value else value


def vector_literal(blob: bytes) -> str:
    """pgvector's text form of an int8 vector blob (the values as they are: cosine
    ignores scale, and integers print fast and exactly)."""
    return "[" + ",".join(map(str, np.frombuffer(blob, dtype=np.int8).tolist())) + "]"


def _vector_blob(text: str) -> bytes:
    values = np.array(text.strip("[]").split(","), dtype=np.float32)
    return np.rint(values).astype(np.int8).tobytes()


def open_database(settings: PostgresSettings) -> Any:  # psycopg.Connection
    """A connection to the team database with the index schema migrated and pgvector on.

    :raises PostgresError: the server is unreachable, or has no pgvector.
    """
    conn = connect(settings, autocommit=True)
    try:
        info = server_info(conn)
        if info.vector_available is None:
            raise PostgresError(
                f"the PostgreSQL server ({info.server_version}) has no pgvector extension",
                hint=_VECTOR_HINT,
            )
        if info.vector_installed is None:
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except Exception as exc:
                raise PostgresError(
                    f"pgvector is not installed in this database and cannot be ({exc})",
                    hint="run `CREATE EXTENSION vector` as the database owner",
                ) from exc
        migrate(conn, COMPONENT, MIGRATIONS)
    except BaseException:
        conn.close()
        raise
    return conn


class PgIndexWriter:
    """Write access to one vault's rows in the team database."""

    has_vec = True

    def __init__(self, conn: Any, vault: str) -> None:
        self.conn = conn
        self.vault = vault
        self._meta: dict[str, str] = {}
        self._depth = 0  # open transactions (a rebuild holds the outer one)
        self._locked = False
        conn.execute(
            "INSERT INTO index_vaults (vault) VALUES (%s) ON CONFLICT (vault) DO NOTHING",
            (vault,),
        )
        self._reload_meta()

    @classmethod
    def open(cls, settings: PostgresSettings, vault: str) -> PgIndexWriter:
        conn = open_database(settings)
        try:
            return cls(conn, vault)
        except BaseException:
            conn.close()
            raise

    def _reload_meta(self) -> None:
        row = self.conn.execute(
            "SELECT meta FROM index_vaults WHERE vault = %s", (self.vault,)
        ).fetchone()
        self._meta = {str(k): str(v) for k, v in (row[0] if row else {}).items()}

    @property
    def vector_type(self) -> str:
        return self._meta.get("vector_type") or "none"

    def lock(self, timeout: float) -> None:
        """Take this vault's writer lock, waiting up to ``timeout`` seconds.

        :raises IndexLockedError: another writer of the same vault kept it.
        """
        import psycopg

        ms = max(1, int(timeout * 1000))
        try:
            self.conn.execute(f"SET lock_timeout = {ms}")
            self.conn.execute(
                "SELECT pg_advisory_lock(%s, hashtext(%s))", (_LOCK_CLASS, self.vault)
            )
        except psycopg.errors.LockNotAvailable as exc:
            raise IndexLockedError(
                f"another indexer is writing vault {self.vault!r} in the team database",
                hint="wait for it to finish, then run `signaldesk index` again",
            ) from exc
        finally:
            self.conn.execute("SET lock_timeout = 0")
        self._locked = True

    def analyze(self) -> None:
        """Refresh the planner's statistics of the index tables after a bulk write (as the
        SQLite writer runs ``PRAGMA optimize``): a plan chosen on an empty table's
        statistics would scan postings instead of looking terms up."""
        for table in ("index_chunk_terms", "index_note_terms", "index_chunks", "index_notes"):
            self.conn.execute(f"ANALYZE {table}")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._locked:
                self.conn.execute(
                    "SELECT pg_advisory_unlock(%s, hashtext(%s))", (_LOCK_CLASS, self.vault)
                )
        with contextlib.suppress(Exception):
            self.conn.close()

    # -- reading ---------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        return self._meta.get(key)

    def model_meta(self) -> ModelMeta | None:
        fingerprint = self._meta.get("model_fingerprint")
        if fingerprint is None:
            return None
        return ModelMeta(
            name=self._meta.get("model_name", ""),
            fingerprint=fingerprint,
            dimensions=int(self._meta.get("dimensions") or 0),
            vector_type=self.vector_type,
        )

    def note_count(self) -> int:
        row = self.conn.execute(
            "SELECT count(*) FROM index_notes WHERE vault = %s", (self.vault,)
        ).fetchone()
        return int(row[0])

    def load_known(self) -> dict[str, tuple[int, int, bool]]:
        """Every file of this vault the index knows: ``(mtime_ns, size, skipped)``."""
        rows = self.conn.execute(
            "SELECT path, mtime_ns, size, false FROM index_notes WHERE vault = %s UNION ALL "
            "SELECT path, mtime_ns, size, true FROM index_skipped WHERE vault = %s",
            (self.vault, self.vault),
        ).fetchall()
        return {str(p): (int(m), int(s), bool(k)) for p, m, s, k in rows}

    def known_hashes(self, paths: list[str]) -> dict[str, str]:
        if not paths:
            return {}
        rows = self.conn.execute(
            "SELECT path, content_hash FROM index_notes WHERE vault = %s AND path = ANY(%s)",
            (self.vault, paths),
        ).fetchall()
        return {str(p): str(h) for p, h in rows}

    def lookup_vectors(self, hashes: Iterable[str]) -> dict[str, bytes]:
        """Stored vectors with these embed hashes, in any vault built with the same model."""
        wanted = list(hashes)
        fingerprint = self._meta.get("model_fingerprint")
        if self.vector_type == "none" or not wanted or fingerprint is None:
            return {}
        rows = self.conn.execute(
            "SELECT DISTINCT ON (c.embed_hash) c.embed_hash, c.embedding::text "
            "FROM index_chunks c JOIN index_vaults v ON v.vault = c.vault "
            "WHERE c.embed_hash = ANY(%s) AND c.embedding IS NOT NULL "
            "AND v.meta->>'model_fingerprint' = %s",
            (wanted, fingerprint),
        ).fetchall()
        return {str(h): _vector_blob(str(v)) for h, v in rows}

    # -- writing ---------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction (a savepoint inside a rebuild) ending with the generation bump."""
        self._depth += 1
        try:
            with self.conn.transaction():
                yield
                self._bump()
        except BaseException:
            if self._depth == 1:
                self._reload_meta()
            raise
        finally:
            self._depth -= 1

    @contextlib.contextmanager
    def rebuilding(self) -> Iterator[None]:
        """A full rebuild of this vault in one transaction: the old rows go first, the
        new ones are written by the run; an exception (or a stop) rolls everything back."""
        with self.transaction():
            self._delete_vault()
            yield

    def _bump(self) -> None:
        v = self.vault
        c = self.conn
        c.execute(
            "UPDATE index_vaults SET generation = generation + 1, last_indexed = now(), "
            "meta = %s::jsonb, "
            "chunk_rows = (SELECT count(*) FROM index_chunks WHERE vault = %s), "
            "chunk_tokens = (SELECT coalesce(sum(fts_len), 0) FROM index_chunks WHERE vault = %s), "
            "note_rows = (SELECT count(*) FROM index_notes WHERE vault = %s), "
            "note_tokens = (SELECT coalesce(sum(fts_len), 0) FROM index_notes WHERE vault = %s) "
            "WHERE vault = %s",
            (json.dumps(self._meta), v, v, v, v, v),
        )

    def _delete_vault(self) -> None:
        for table in ("index_chunk_terms", "index_note_terms", "index_note_keys"):
            self.conn.execute(f"DELETE FROM {table} WHERE vault = %s", (self.vault,))
        for table in ("index_chunks", "index_notes", "index_skipped"):
            self.conn.execute(f"DELETE FROM {table} WHERE vault = %s", (self.vault,))

    def set_model(self, model: ModelMeta, index_format: str) -> None:
        """Record ``model`` (and create the vector column for its dimension)."""
        with self.transaction():
            if model.vector_type != "none":
                self._vector_column(model.dimensions)
            self._meta.update(
                model_name=model.name,
                model_fingerprint=model.fingerprint,
                dimensions=str(model.dimensions),
                vector_type=model.vector_type,
                index_format=index_format,
            )
            if model.source_key:
                self._meta["model_source_key"] = model.source_key
            else:
                self._meta.pop("model_source_key", None)

    def prepare_vectors(self, model: ModelMeta) -> None:
        """Create the vector column for ``model`` now, in a transaction of its own.

        A rebuild calls this before its long transaction: adding a column locks the
        chunks table until commit, which must not keep readers waiting for a rebuild.
        """
        if model.vector_type != "none":
            with self.conn.transaction():
                self._vector_column(model.dimensions)

    def _vector_column(self, dimensions: int) -> None:
        # One vector column for the database: its dimension is the first model's. Only
        # its creation is serialised (a lock held to the end of the transaction).
        present = self._vector_dimensions()
        if present is None:
            self.conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_LOCK_CLASS,))
            present = self._vector_dimensions()
            if present is None:
                for statement in vector_ddl(dimensions):
                    self.conn.execute(statement)
                return
        if present != int(dimensions):
            raise StoreError(
                f"the team database holds {present}-dimensional vectors; this model "
                f"makes {dimensions}",
                hint="use the same [index] model on every machine that indexes into it",
            )

    def _vector_dimensions(self) -> int | None:
        row = self.conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'index_chunks'::regclass "
            "AND attname = 'embedding' AND NOT attisdropped"
        ).fetchone()
        return None if row is None else int(row[0])

    def set_index_format(self, index_format: str) -> None:
        with self.transaction():
            self._meta["index_format"] = index_format

    def set_source_key(self, key: str) -> None:
        with self.transaction():
            self._meta["model_source_key"] = key

    def delete_paths(self, paths: Sequence[str]) -> None:
        with self.transaction():
            self._delete(list(paths))

    def _delete(self, paths: list[str]) -> None:
        if not paths:
            return
        c, v = self.conn, self.vault
        notes = "SELECT id FROM index_notes WHERE vault = %s AND path = ANY(%s)"
        c.execute(
            "DELETE FROM index_chunk_terms WHERE chunk_id IN "
            f"(SELECT id FROM index_chunks WHERE note_id IN ({notes}))",
            (v, paths),
        )
        c.execute(f"DELETE FROM index_note_terms WHERE note_id IN ({notes})", (v, paths))
        c.execute("DELETE FROM index_notes WHERE vault = %s AND path = ANY(%s)", (v, paths))
        c.execute("DELETE FROM index_skipped WHERE vault = %s AND path = ANY(%s)", (v, paths))

    def _ids(self, sequence: str, count: int) -> list[int]:
        if count == 0:
            return []
        rows = self.conn.execute(
            "SELECT nextval(%s) FROM generate_series(1, %s)", (sequence, count)
        ).fetchall()
        return [int(r[0]) for r in rows]

    def write_batch(
        self,
        notes: Sequence[PreparedNote],
        skipped: Sequence[SkippedNote],
        touched: Sequence[tuple[str, int, int, bool]],
        vectors: dict[str, bytes],
    ) -> None:
        """Replace ``notes`` and ``skipped``, refresh ``touched`` stats, in one transaction."""
        v = self.vault
        chunk_count = sum(len(n.chunks) for n in notes)
        with self.transaction():
            self._delete([n.path for n in notes] + [s.path for s in skipped])
            note_ids = self._ids("index_notes_id_seq", len(notes))
            chunk_ids = iter(self._ids("index_chunks_id_seq", chunk_count))
            note_fields = [
                (
                    (f.title, f.aliases, f.file, f.tags, f.headings, f.body)
                    if (f := n.fts) is not None
                    else ("",) * 6
                )
                for n in notes
            ]
            note_post = term_postings(note_fields, 6)
            chunk_rows: list[tuple[Any, ...]] = []
            chunk_fields: list[tuple[str, str, str]] = []
            for note_id, note in zip(note_ids, notes, strict=True):
                for chunk in note.chunks:
                    chunk_fields.append((chunk.fts_text, chunk.fts_section, chunk.fts_context))
                    blob = vectors.get(chunk.embed_hash)
                    chunk_rows.append(
                        (
                            next(chunk_ids),
                            v,
                            note_id,
                            chunk.ordinal,
                            pg_text(chunk.section),
                            pg_text(chunk.heading_path),
                            pg_text(chunk.text),
                            chunk.start_line,
                            chunk.embed_hash,
                            None if blob is None or self.vector_type == "none" else blob,
                        )
                    )
            chunk_post = term_postings(chunk_fields, 3)
            self._copy_notes(notes, note_ids, note_post.lengths)
            self._copy_chunks(chunk_rows, chunk_post.lengths)
            ids = [r[0] for r in chunk_rows]
            with self.conn.cursor().copy(
                "COPY index_chunk_terms (vault, term, chunk_id, f0, f1, f2, len) FROM STDIN"
            ) as copy:
                lengths = chunk_post.lengths
                for term, i, tf in chunk_post.entries:
                    copy.write_row((v, pg_text(term), ids[i], *tf, lengths[i]))
            with self.conn.cursor().copy(
                "COPY index_note_terms (vault, term, note_id, f0, f1, f2, f3, f4, f5, len) "
                "FROM STDIN"
            ) as copy:
                lengths = note_post.lengths
                for term, i, tf in note_post.entries:
                    copy.write_row((v, pg_text(term), note_ids[i], *tf, lengths[i]))
            with self.conn.cursor().copy(
                "COPY index_note_keys (vault, key, note_id) FROM STDIN"
            ) as copy:
                for note_id, note in zip(note_ids, notes, strict=True):
                    for key in dict.fromkeys(note.fts.keys if note.fts else ()):
                        copy.write_row((v, pg_text(key), note_id))
            self._write_skipped(skipped)
            self._touch(touched)

    def _copy_notes(
        self, notes: Sequence[PreparedNote], ids: list[int], lengths: list[int]
    ) -> None:
        with self.conn.cursor().copy(
            "COPY index_notes (id, vault, path, title, type, domain, status, tags, created, "
            "updated, frontmatter, mtime_ns, size, content_hash, fts_len, body) FROM STDIN"
        ) as copy:
            for note_id, note, length in zip(ids, notes, lengths, strict=True):
                copy.write_row(
                    (
                        note_id,
                        self.vault,
                        note.path,
                        pg_text(note.title),
                        _opt(note.note_type),
                        _opt(note.domain),
                        _opt(note.status),
                        _json(note.tags),
                        _opt(note.created),
                        _opt(note.updated),
                        _json(note.frontmatter),
                        note.mtime_ns,
                        note.size,
                        note.content_hash,
                        length,
                        pg_text(note.text),
                    )
                )

    def _copy_chunks(self, rows: list[tuple[Any, ...]], lengths: list[int]) -> None:
        with self.conn.cursor().copy(
            "COPY index_chunks (id, vault, note_id, ordinal, section, heading_path, text, "
            "start_line, embed_hash, fts_len, embedding) FROM STDIN"
        ) as copy:
            for row, length in zip(rows, lengths, strict=True):
                blob = row[-1]
                copy.write_row((*row[:-1], length, None if blob is None else vector_literal(blob)))

    def _write_skipped(self, skipped: Sequence[SkippedNote]) -> None:
        if not skipped:
            return
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO index_skipped (vault, path, mtime_ns, size, reason) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (vault, path) DO UPDATE SET "
                "mtime_ns = excluded.mtime_ns, size = excluded.size, reason = excluded.reason",
                [(self.vault, s.path, s.mtime_ns, s.size, s.reason) for s in skipped],
            )

    def _touch(self, touched: Sequence[tuple[str, int, int, bool]]) -> None:
        if not touched:
            return
        with self.conn.cursor() as cur:
            for table, want in (("index_notes", False), ("index_skipped", True)):
                rows = [
                    (m, s, self.vault, p) for p, m, s, is_skipped in touched if is_skipped == want
                ]
                if rows:
                    cur.executemany(
                        f"UPDATE {table} SET mtime_ns = %s, size = %s "
                        "WHERE vault = %s AND path = %s",
                        rows,
                    )


def _opt(value: str | None) -> str | None:
    return None if value is None else pg_text(value)


def _json(text: str) -> str:
    # JSON text as SQLite stores it; jsonb refuses \u0000 as well as a raw NUL.
    return pg_text(text).replace("\\u0000", "\\ufffd")
