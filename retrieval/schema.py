"""The index database's schema: every table, index and trigger, in one place.

Migrations are explicit: ``MIGRATIONS[n]`` takes a database from version ``n``
to ``n + 1`` and ``PRAGMA user_version`` records where it is. The index is a
cache of the vault, so a migration may also simply clear it (the indexer then
rebuilds from the notes).
"""

from __future__ import annotations

SCHEMA_VERSION = 3

# The keyword tables' tokenizer (written out in the migrations below, which are never
# edited). The PostgreSQL index tokenises with FTS5 itself under the same tokenizer
# (retrieval/fts_terms.py), so both backends see the same words.
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"

_V1 = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- One row per indexed note; the stat fields drive the cheap incremental scan.
CREATE TABLE notes (
    id           INTEGER PRIMARY KEY,
    path         TEXT NOT NULL UNIQUE,          -- vault-relative, '/'-separated
    title        TEXT NOT NULL,
    type         TEXT,
    domain       TEXT,
    status       TEXT,
    tags         TEXT NOT NULL DEFAULT '[]',    -- JSON array
    created      TEXT,
    updated      TEXT,
    frontmatter  TEXT NOT NULL DEFAULT '{}',    -- JSON object, scrubbed
    mtime_ns     INTEGER NOT NULL,
    size         INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    indexed_at   TEXT NOT NULL
);
CREATE INDEX notes_updated ON notes(updated);
CREATE INDEX notes_domain ON notes(domain);

-- One row per chunk. `embed_hash` identifies the exact text that was embedded,
-- so an unchanged chunk keeps its vector when its note is edited elsewhere.
CREATE TABLE chunks (
    id           INTEGER PRIMARY KEY,
    note_id      INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    ordinal      INTEGER NOT NULL,
    section      TEXT NOT NULL,                 -- the chunk's own heading ('' before any)
    heading_path TEXT NOT NULL,                 -- JSON array, outermost heading first
    text         TEXT NOT NULL,                 -- scrubbed text as shown to a reader
    start_line   INTEGER NOT NULL,
    embed_hash   TEXT NOT NULL,
    UNIQUE (note_id, ordinal)
);
CREATE INDEX chunks_embed_hash ON chunks(embed_hash);

-- Keyword index. Contentless: the indexed text is prepared for the tokenizer
-- (CJK runs split into overlapping bigrams), which differs from what is shown,
-- and keeping a second copy would double the database. Columns are weighted
-- text 1.0, section 0.5, context (title, tags, heading path) 0.3 at query time.
-- Porter stemming (English suffixes; other scripts pass through unchanged) is
-- worth +0.02 nDCG@10 on SciFact, see docs/ranking.md.
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    text, section, context,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Keep the keyword index in step with chunks whichever way a chunk goes.
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunks_fts WHERE rowid = old.id;
END;
"""

# v2: files the indexer looked at and deliberately left out (Excalidraw and
# Kanban boards, unreadable files). Remembering their stat keeps the incremental
# scan from reading them again on every run.
_V2 = """
CREATE TABLE skipped (
    path     TEXT PRIMARY KEY,
    mtime_ns INTEGER NOT NULL,
    size     INTEGER NOT NULL,
    reason   TEXT NOT NULL
) WITHOUT ROWID;
"""

# v3: note-level ranking. `notes_fts` holds one row per note (rowid = notes.id):
# its title, aliases, file name, tags, every heading and the whole body, so BM25
# can weigh a title match strongly and normalise by the length of the *note*
# (one 278 KB list note must not outrank the short note that answers). Rows are
# written by the indexer; an index built before v3 has none until every note
# has been re-prepared, which the indexer does by itself on its next run (the
# index format changes to 4), and until then the retriever ranks chunks only and
# says so. `note_keys` maps a normalised title, alias or file name to its note,
# for the exact-title lookup.
_V3 = """
CREATE VIRTUAL TABLE notes_fts USING fts5(
    title, aliases, file, tags, headings, body,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
    DELETE FROM notes_fts WHERE rowid = old.id;
END;

CREATE TABLE note_keys (
    key     TEXT NOT NULL,
    note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    PRIMARY KEY (key, note_id)
) WITHOUT ROWID;
CREATE INDEX note_keys_note ON note_keys(note_id);
"""

MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3)

# Used by a full rebuild, which empties the keyword indexes in one statement each
# and re-creates the triggers it dropped to delete the chunks and notes in bulk.
FTS_TABLE = "chunks_fts"
FTS_DELETE_ALL = f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('delete-all')"
FTS_DELETE_TRIGGER = f"""
CREATE TRIGGER IF NOT EXISTS chunks_fts_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM {FTS_TABLE} WHERE rowid = old.id;
END;
"""
NOTE_FTS_TABLE = "notes_fts"
# `meta.index_format` (its first part) from which every note has its `notes_fts`
# row; an index upgraded from v2 reaches it when the indexer has re-prepared all
# notes, and the retriever ranks chunks only until then.
NOTE_FTS_SINCE_FORMAT = 4
NOTE_FTS_COLUMNS = ("title", "aliases", "file", "tags", "headings", "body")
NOTE_FTS_DELETE_ALL = f"INSERT INTO {NOTE_FTS_TABLE}({NOTE_FTS_TABLE}) VALUES ('delete-all')"
NOTE_FTS_DELETE_TRIGGER = f"""
CREATE TRIGGER IF NOT EXISTS notes_fts_delete AFTER DELETE ON notes BEGIN
    DELETE FROM {NOTE_FTS_TABLE} WHERE rowid = old.id;
END;
"""

# The vector table depends on the model's dimension, so it is created (and
# re-created on a model change) by the indexer rather than by a migration.
VECTOR_TABLE = "chunk_vectors"


def vector_table_ddl(dimensions: int, element_type: str = "float") -> str:
    """DDL for the sqlite-vec table holding one embedding per chunk (rowid = chunks.id).

    :param element_type: ``"float"`` (float32) or ``"int8"`` (quantised).
    """
    if element_type not in {"float", "int8"}:
        raise ValueError(f"unsupported vector element type {element_type!r}")
    return (
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {VECTOR_TABLE} USING vec0("
        f"embedding {element_type}[{int(dimensions)}] distance_metric=cosine)"
    )


VECTOR_DELETE_TRIGGER = f"""
CREATE TRIGGER IF NOT EXISTS chunks_vec_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM {VECTOR_TABLE} WHERE rowid = old.id;
END;
"""
