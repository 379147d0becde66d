"""The PostgreSQL index's schema: several vaults in one database, a vault name on every row.

Versioned like the SQLite schema (``signaldesk.postgres.migrate``, component ``index``):
``MIGRATIONS[n]`` takes the database from version ``n`` to ``n + 1`` and is never edited
once released.

The keyword side is a postings table per level (chunks, notes) rather than a ``tsvector``
ranked with ``ts_rank``: ``ts_rank`` is not BM25 (no IDF, no length normalisation of the
SQLite kind), and the first bar of team mode is the same ranking as the SQLite index. Each
posting holds one term's count in each column of one row and the row's length, so BM25 is
computed in SQL with FTS5's formula and column weights, from FTS5's own tokens
(retrieval/fts_terms.py). Document frequencies are counted from the postings of the vaults
a search may see, so a confined search's statistics never depend on another vault, and two
writers of different vaults never update a shared row.

The vector column depends on the model's dimension, so it is added (with its HNSW index)
by the first writer that records a model (:func:`vector_ddl`), as the SQLite indexer
creates its vector table.
"""

from __future__ import annotations

__all__ = ["COMPONENT", "MIGRATIONS", "vector_ddl"]

COMPONENT = "index"

_V1 = """
-- One row per vault: what signaldesk's SQLite `meta` table holds (model, index format)
-- as JSON, the generation counter, and the totals BM25 averages over.
CREATE TABLE index_vaults (
    vault        text PRIMARY KEY,
    meta         jsonb NOT NULL DEFAULT '{}',
    generation   bigint NOT NULL DEFAULT 0,
    last_indexed timestamptz,
    chunk_rows   bigint NOT NULL DEFAULT 0,
    chunk_tokens bigint NOT NULL DEFAULT 0,
    note_rows    bigint NOT NULL DEFAULT 0,
    note_tokens  bigint NOT NULL DEFAULT 0
);

CREATE TABLE index_notes (
    id           bigserial PRIMARY KEY,
    vault        text NOT NULL,
    path         text NOT NULL,
    title        text NOT NULL,
    type         text,
    domain       text,
    status       text,
    tags         jsonb NOT NULL DEFAULT '[]',
    created      text,
    updated      text,
    frontmatter  jsonb NOT NULL DEFAULT '{}',
    mtime_ns     bigint NOT NULL,
    size         bigint NOT NULL,
    content_hash text NOT NULL,
    indexed_at   timestamptz NOT NULL DEFAULT now(),
    fts_len      integer NOT NULL DEFAULT 0,
    -- The whole note, scrubbed: a team's MCP server may not have the vault on disk.
    body         text NOT NULL DEFAULT '',
    UNIQUE (vault, path)
);
CREATE INDEX index_notes_updated ON index_notes (vault, updated);

CREATE TABLE index_chunks (
    id           bigserial PRIMARY KEY,
    vault        text NOT NULL,
    note_id      bigint NOT NULL REFERENCES index_notes (id) ON DELETE CASCADE,
    ordinal      integer NOT NULL,
    section      text NOT NULL,
    heading_path jsonb NOT NULL,
    text         text NOT NULL,
    start_line   integer NOT NULL,
    embed_hash   text NOT NULL,
    fts_len      integer NOT NULL DEFAULT 0,
    UNIQUE (note_id, ordinal)
);
CREATE INDEX index_chunks_vault ON index_chunks (vault);
CREATE INDEX index_chunks_embed_hash ON index_chunks (embed_hash);

-- Postings. f0..f2: the term's count in the chunk's text, section, context (the SQLite
-- `chunks_fts` columns); len: the chunk's tokens in all three. No foreign key: the
-- writer deletes a chunk's postings itself (a cascade would be one trigger per row).
CREATE TABLE index_chunk_terms (
    vault    text NOT NULL,
    term     text NOT NULL,
    chunk_id bigint NOT NULL,
    f0       integer NOT NULL,
    f1       integer NOT NULL,
    f2       integer NOT NULL,
    len      integer NOT NULL,
    PRIMARY KEY (vault, term, chunk_id)
);
CREATE INDEX index_chunk_terms_chunk ON index_chunk_terms (chunk_id);

-- Note-level postings: title, aliases, file, tags, headings, body (`notes_fts`).
CREATE TABLE index_note_terms (
    vault   text NOT NULL,
    term    text NOT NULL,
    note_id bigint NOT NULL,
    f0      integer NOT NULL,
    f1      integer NOT NULL,
    f2      integer NOT NULL,
    f3      integer NOT NULL,
    f4      integer NOT NULL,
    f5      integer NOT NULL,
    len     integer NOT NULL,
    PRIMARY KEY (vault, term, note_id)
);
CREATE INDEX index_note_terms_note ON index_note_terms (note_id);

-- The names (title, aliases, file name) an exact query may equal.
CREATE TABLE index_note_keys (
    vault   text NOT NULL,
    key     text NOT NULL,
    note_id bigint NOT NULL REFERENCES index_notes (id) ON DELETE CASCADE,
    PRIMARY KEY (vault, key, note_id)
);
CREATE INDEX index_note_keys_note ON index_note_keys (note_id);

-- Files looked at and deliberately left out (boards, drawings, excluded by frontmatter).
CREATE TABLE index_skipped (
    vault    text NOT NULL,
    path     text NOT NULL,
    mtime_ns bigint NOT NULL,
    size     bigint NOT NULL,
    reason   text NOT NULL,
    PRIMARY KEY (vault, path)
);
"""

MIGRATIONS: tuple[str, ...] = (_V1,)


def vector_ddl(dimensions: int) -> tuple[str, ...]:
    """The vector column of ``dimensions`` and its HNSW (cosine) index.

    The stored values are the int8-quantised vectors of the SQLite index (as floats):
    cosine ignores scale, so both backends compare the same vectors.
    """
    dims = int(dimensions)
    return (
        f"ALTER TABLE index_chunks ADD COLUMN IF NOT EXISTS embedding vector({dims})",
        "CREATE INDEX IF NOT EXISTS index_chunks_embedding ON index_chunks "
        "USING hnsw (embedding vector_cosine_ops)",
    )
