"""Where every chunk sits (note path, ordinal, section, note id), in memory, per commit.

Trigger: each search looks up the ~200 candidates of its lists with a
``json_each`` join on ``chunks`` and ``notes`` (~1 ms of SQL a query at 47k
chunks, issue 15), then every chunk of the notes found only by the note list.
Why: a process that searches again and again (the MCP server) can hold all of
it in two dicts for a few MB. Outcome: from a process's second search on the
same commit, :class:`ChunkKeyIndex` answers what ``search_legs.chunk_keys`` and
``search_legs.note_chunks`` answer (same keys, same order); a one-shot search
(one query) never pays for loading it.

The index is tied to the commit it was read in: ``vector_cache.cache_token``
(the ``generation_id`` the writer changes with every commit, and the
generation), so a search on a newer snapshot never sees stale positions; an
index without that token is always asked with SQL.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from signaldesk.retrieval.search_legs import ChunkKey
from signaldesk.retrieval.store import Connection
from signaldesk.retrieval.vector_cache import cache_token

__all__ = ["ChunkKeyIndex", "ChunkKeys"]


@dataclass(frozen=True, slots=True)
class ChunkKeyIndex:
    """Every chunk's :class:`ChunkKey` of one commit, and each note's chunks."""

    token: str
    keys: dict[int, ChunkKey]
    by_note: dict[int, tuple[int, ...]]

    @classmethod
    def read(cls, conn: Connection, token: str) -> ChunkKeyIndex:
        keys: dict[int, ChunkKey] = {}
        grouped: dict[int, list[tuple[int, int]]] = {}
        sql = (
            "SELECT c.id, n.path, c.ordinal, c.section, c.note_id FROM chunks c "
            "JOIN notes n ON n.id = c.note_id"
        )
        for cid, path, ordinal, section, note_id in conn.execute(sql):
            key = ChunkKey(str(path), int(ordinal), str(section), int(note_id))
            keys[int(cid)] = key
            grouped.setdefault(key.note_id, []).append((key.ordinal, int(cid)))
        by_note = {nid: tuple(cid for _, cid in sorted(rows)) for nid, rows in grouped.items()}
        return cls(token, keys, by_note)

    def chunk_keys(self, chunk_ids: list[int]) -> dict[int, ChunkKey]:
        """As :func:`search_legs.chunk_keys`: the listed chunks that exist, by ascending id."""
        keys = self.keys
        return {cid: keys[cid] for cid in sorted(set(chunk_ids)) if cid in keys}

    def note_chunks(self, note_ids: list[int]) -> dict[int, ChunkKey]:
        """As :func:`search_legs.note_chunks`: each listed note's chunks, by note then ordinal."""
        keys = self.keys
        return {
            cid: keys[cid] for nid in sorted(set(note_ids)) for cid in self.by_note.get(nid, ())
        }


class ChunkKeys:
    """A retriever's chunk positions: SQL on a commit's first search, memory after.

    Thread-safe: searches run in several worker threads; the index is an
    immutable object replaced under a lock when the commit changes.
    """

    def __init__(self) -> None:
        self._index: ChunkKeyIndex | None = None
        self._asked: str | None = None  # the commit the last search saw
        self._lock = threading.Lock()

    def index_for(self, conn: Connection, *, load: bool = False) -> ChunkKeyIndex | None:
        """The in-memory index for ``conn``'s snapshot: read on the commit's second
        search (or now, with ``load``); ``None`` means ask SQL."""
        token = cache_token(conn)
        if token is None:
            return None
        index = self._index
        if index is not None and index.token == token:
            return index
        with self._lock:
            index = self._index
            if index is not None and index.token == token:
                return index
            if self._asked != token and not load:
                self._asked = token  # a first search: SQL, and remember the commit
                return None
            self._index = index = ChunkKeyIndex.read(conn, token)
            return index
