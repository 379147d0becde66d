"""The item ledger's schema: every table and index, and the versioned migrations.

``MIGRATIONS[n]`` takes a ledger from version ``n`` to ``n + 1``; ``PRAGMA
user_version`` records where a database is. Unlike the search index, the ledger
is not a cache (it is the only record of what was seen, filed and rejected), so
a migration must carry the data forward and never simply clear it.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ITEM_STATUSES",
    "MIGRATIONS",
    "RESUMABLE_STATUSES",
    "SCHEMA_VERSION",
    "SETTLED_STATUSES",
]

# The life of an item. The first three are "in flight": a run that dies leaves
# items there and the next run picks them up again.
ITEM_STATUSES: Final = (
    "discovered",  # recorded from its source; may need its page fetched
    "fetched",  # the source's content is in hand (drop folders start here)
    "extracted",  # full text fetched (or the feed content kept as the fallback)
    "pending",  # normalised, unique: waiting for triage
    "duplicate",  # the same signal as `duplicate_of`
    "parked",  # a permanent error; `last_error` says why
    "filed",  # triage wrote a note (`note_path`)
    "rejected",  # triage scored it below the threshold
)
RESUMABLE_STATUSES: Final = ("discovered", "fetched", "extracted")
# Items a newcomer may be a duplicate of: every unique item that made it through.
SETTLED_STATUSES: Final = ("pending", "filed", "rejected")

_V1 = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- One row per signal ever seen. `id` is a stable identity (see ledger.item_identity),
-- so recording the same entry twice is a no-op (INSERT OR IGNORE).
CREATE TABLE items (
    id              TEXT PRIMARY KEY,
    source_kind     TEXT NOT NULL,
    source_id       TEXT NOT NULL,
    guid            TEXT,
    url             TEXT,
    canonical_url   TEXT,
    title           TEXT NOT NULL,
    status          TEXT NOT NULL,
    duplicate_of    TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT,
    simhash         INTEGER,                 -- signed 64-bit; NULL for short texts
    payload         TEXT NOT NULL,           -- the Item as JSON
    -- Filled by triage (scoring and routing); nullable until then.
    score           REAL,
    scores          TEXT,                    -- JSON object of score parts
    domain          TEXT,
    note_path       TEXT,
    discovered_at   TEXT NOT NULL,           -- ISO 8601 UTC
    updated_at      TEXT NOT NULL,
    settled_at      TEXT                     -- when it left the in-flight statuses
);
CREATE INDEX items_status ON items(status, discovered_at);
CREATE INDEX items_source ON items(source_kind, discovered_at);
CREATE INDEX items_guid ON items(guid) WHERE guid IS NOT NULL;
CREATE INDEX items_canonical_url ON items(canonical_url) WHERE canonical_url IS NOT NULL;

-- Simhash bands of settled unique items: a near-duplicate look-up reads only the
-- rows sharing a band with the newcomer (see pipeline.ledger.dedupe).
CREATE TABLE simhash_bands (
    band     INTEGER NOT NULL,
    item_id  TEXT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    PRIMARY KEY (band, item_id)
) WITHOUT ROWID;
CREATE INDEX simhash_bands_item ON simhash_bands(item_id);

-- Feed subscriptions: sources.rss.FeedState plus what only the registry knows.
CREATE TABLE feeds (
    url               TEXT PRIMARY KEY,
    title             TEXT,
    etag              TEXT,
    last_modified     TEXT,
    next_check_at     TEXT,
    interval_seconds  REAL,
    error_count       INTEGER NOT NULL DEFAULT 0,
    first_error_at    TEXT,
    last_error        TEXT,
    last_status       INTEGER,
    last_success_at   TEXT,
    redirect_to       TEXT,
    redirect_hits     INTEGER NOT NULL DEFAULT 0,
    disabled_reason   TEXT,
    full_text         INTEGER NOT NULL DEFAULT 1,  -- 0: this feed opted out of full text
    ttl_seconds       REAL,
    added_at          TEXT NOT NULL,
    category          TEXT,
    prior             REAL                   -- per-source authority prior, 0..1
);
"""

# Corrections a person made to triage's decisions (pipeline.ledger.corrections): what they
# did with one item, and when it was undone. Scoring learns from the rows not undone.
_V2 = """
CREATE TABLE corrections (
    id           INTEGER PRIMARY KEY,
    item_id      TEXT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    accept       INTEGER,                 -- 1 kept, 0 thrown away, NULL only moved
    domain       TEXT,                    -- the domain the person chose, if any
    how          TEXT NOT NULL,           -- e.g. "moved the note", "`triage reject`"
    recorded_at  TEXT NOT NULL,           -- ISO 8601 UTC
    undone_at    TEXT                     -- set by undo / reset; such rows are ignored
);
CREATE INDEX corrections_item ON corrections(item_id, recorded_at);
"""

# v3: vault paths triage wrote, or moved a clipping away from, that no index run has
# looked at yet. An item is "filed, not yet indexed" while its note's path is here.
# Rows are written in the same transaction as the item's triage outcome, so a run
# killed between filing and indexing leaves them for the next run to catch up on.
_V3 = """
CREATE TABLE index_queue (
    path       TEXT PRIMARY KEY,         -- vault-relative, '/'-separated
    item_id    TEXT,
    queued_at  TEXT NOT NULL             -- ISO 8601 UTC
) WITHOUT ROWID;
"""

MIGRATIONS: Final[tuple[str, ...]] = (_V1, _V2, _V3)
SCHEMA_VERSION: Final = len(MIGRATIONS)
