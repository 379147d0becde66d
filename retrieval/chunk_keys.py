"""Where every chunk sits (note path, ordinal, section, note id), in memory, per commit.

Trigger: each search looks up the ~200 candidates of its lists with a
``json_each`` join on ``chunks`` and ``notes`` (~1 ms of SQL a query at 47k
chunks, issue 15), then every chunk of the notes found only by the note list.
Why: a process that searches again and again (the MCP server) can hold all of
it in a few dicts (~10 MB). Outcome: once a process has searched one commit
``_LOAD_AFTER`` times (or warmed up), :class:`ChunkKeyIndex` answers what
``search_legs.chunk_keys`` and ``search_legs.note_chunks`` answer (same keys,
same order); a one-shot search never pays for loading it.

The index is tied to the commit it was read in: ``vector_cache.cache_token``
(the ``generation_id`` the writer changes with every commit, and the
generation), so a search on a newer snapshot never sees stale positions; an
index without that token is always asked with SQL.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from signaldesk.retrieval.search_legs import ChunkKey
from signaldesk.retrieval.store import Connection
from signaldesk.retrieval.vector_cache import cache_token

__all__ = ["ChunkKeyIndex", "ChunkKeys"]

# Reading the index costs ~60-90 ms at 47k chunks and saves ~0.8 ms a search:
# it is read once a commit has been searched this many times (a one-shot search,
# or a server whose watcher commits between a few searches, never pays for it).
_LOAD_AFTER = 16


# (note id, ordinal, section) of a chunk, as read.
_Row = tuple[int, int, str]


@dataclass(frozen=True, slots=True)
class ChunkKeyIndex:
    """Every chunk's note, ordinal and section of one commit, the notes' paths, and
    each note's chunks; a :class:`ChunkKey` is made the first time its chunk is asked for
    and kept (making ~170 per search cost ~0.4 ms; making all 47k when the index is read
    would add ~75 ms to a read that a server repeats after every commit)."""

    token: str
    rows: dict[int, _Row]
    paths: dict[int, str]
    by_note: dict[int, tuple[int, ...]]
    made: dict[int, ChunkKey] = field(default_factory=dict, repr=False)

    @classmethod
    def read(cls, conn: Connection, token: str) -> ChunkKeyIndex:
        rows: dict[int, _Row] = {
            cid: (nid, ordinal, section)
            for cid, nid, ordinal, section in conn.execute(
                "SELECT id, note_id, ordinal, section FROM chunks ORDER BY note_id, ordinal"
            )
        }
        paths: dict[int, str] = dict(conn.execute("SELECT id, path FROM notes"))
        # Read in (note, ordinal) order, so each note's chunks come out in order.
        grouped: dict[int, list[int]] = {}
        for cid, row in rows.items():
            grouped.setdefault(row[0], []).append(cid)
        by_note = {nid: tuple(cids) for nid, cids in grouped.items()}
        return cls(token, rows, paths, by_note)

    def _key(self, cid: int) -> ChunkKey | None:
        key = self.made.get(cid)
        if key is not None:
            return key
        row = self.rows.get(cid)
        if row is None:
            return None
        path = self.paths.get(row[0])
        # A chunk whose note is gone is not a candidate (the SQL joins on notes).
        if path is None:
            return None
        # Searches in several threads may both make it: the same value either way.
        key = self.made[cid] = ChunkKey(path, row[1], row[2], row[0])
        return key

    def chunk_keys(self, chunk_ids: list[int]) -> dict[int, ChunkKey]:
        """As :func:`search_legs.chunk_keys`: the listed chunks that exist, by ascending id."""
        out: dict[int, ChunkKey] = {}
        for cid in sorted(set(chunk_ids)):
            key = self._key(cid)
            if key is not None:
                out[cid] = key
        return out

    def note_chunks(self, note_ids: list[int]) -> dict[int, ChunkKey]:
        """As :func:`search_legs.note_chunks`: each listed note's chunks, by note then ordinal."""
        out: dict[int, ChunkKey] = {}
        for nid in sorted(set(note_ids)):
            for cid in self.by_note.get(nid, ()):
                key = self._key(cid)
                if key is not None:
                    out[cid] = key
        return out


class ChunkKeys:
    """A retriever's chunk positions: SQL on a commit's first search, memory after.

    Thread-safe: searches run in several worker threads; the index is an
    immutable object replaced under a lock when the commit changes.
    """

    def __init__(self) -> None:
        self._index: ChunkKeyIndex | None = None
        self._asked: tuple[str | None, int] = (None, 0)  # a commit and its searches so far
        self._lock = threading.Lock()

    def index_for(self, conn: Connection, *, load: bool = False) -> ChunkKeyIndex | None:
        """The in-memory index for ``conn``'s snapshot: read on the commit's
        ``_LOAD_AFTER``-th search (or now, with ``load``); ``None`` means ask SQL."""
        return self.index_at(conn, cache_token(conn), load=load)

    def index_at(
        self, conn: Connection, token: str | None, *, load: bool = False
    ) -> ChunkKeyIndex | None:
        """:meth:`index_for` when the caller has read ``conn``'s ``cache_token``."""
        if token is None:
            return None
        index = self._index
        if index is not None and index.token == token:
            return index
        with self._lock:
            index = self._index
            if index is not None and index.token == token:
                return index
            seen, searches = self._asked
            searches = searches + 1 if seen == token else 1
            self._asked = (token, searches)
            if searches < _LOAD_AFTER and not load:
                return None
            self._index = index = ChunkKeyIndex.read(conn, token)
            return index
