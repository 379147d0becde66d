"""The exact BM25 top-k of an any-word query without scoring every match.

Trigger: a broad OR query (``git``, ``de``, ``un`` in a vault of translated
pages) matches 10-30k chunks, and FTS5's ``bm25()`` decodes every matching row's
positions: reading them all into Python took ~2.7 us a row and made the
keyword lists the slowest part of a search (issue 15). Why: most of those rows
match only the common words, whose weight in BM25 is small, and a row can never
score more than the sum of its words' largest possible weights.

FTS5's score of a row (``fts5Bm25Function`` in SQLite's ``fts5_aux.c``) is
``sum over phrases of idf * f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgdl))``
with ``idf = log((N - n + 0.5) / (n + 0.5))`` (``1e-6`` when not positive), ``n``
the rows that contain the phrase, ``N`` the rows of the table and ``f`` the
phrase's column-weighted frequency in the row. With non-negative weights each
term is below ``idf * (k1 + 1)``. So (the MaxScore idea from text retrieval):
take the rarest phrases, score with the *whole* expression only the rows that
contain one of them, and once the k-th best score exceeds the largest score
a row holding only the other phrases could reach, no such row can enter the
top k. The rows and their scores are those FTS5 gives for the whole query:
every row is scored by the same ``bm25()`` over the same expression.

Outcome: the same ``k`` rows with the same float scores, in the same order
(score, then rowid), as sorting every match; the scores of any other rows a
search needs (the vector list's candidates) are read with :func:`scores_for`,
which filters by rowid inside the one pass over the query's doclists.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import MutableMapping

from signaldesk.retrieval.store import Connection, sqlite_module

__all__ = ["PhraseCounts", "row_count", "scores_for", "top_rows"]

# FTS5's bm25() constants (fts5_aux.c); only k1 enters the bound.
_K1 = 1.2
_MIN_IDF = 1e-6
# Room for the rounding of log() and of the sums: a bound may only be too large.
_SLACK = 1.0 + 1e-9
# FTS5 keeps its row count and column token totals in this row of ``<table>_data``.
_AVERAGES_ROWID = 1


# (table, phrase) -> the rows holding the phrase, for one commit of the index.
Counts = MutableMapping[tuple[str, str], int]


class PhraseCounts:
    """How many rows of each table hold each phrase, remembered for one commit.

    Trigger: every search counts the rows of each of its phrases in both keyword
    tables (the bounds below), and a common word costs a ``count(*)`` over its whole
    doclist: 0.6 ms for ``git``, 1.4 ms for ``https`` at 47k chunks. Why: the count
    changes only when the index does, and a server's queries share their common
    words. Outcome: a process that searches again reads each phrase's count once per
    commit (``vector_cache.cache_token``); the bounds, and so the rows, are the same.

    Thread-safe: each commit gets a dict of its own, replaced (never changed in
    place for another commit) when a search sees a newer one.
    """

    def __init__(self, limit: int = 50_000) -> None:
        self._limit = limit  # phrases kept per commit before starting over
        self._token: str | None = None
        self._counts: Counts = {}
        self._lock = threading.Lock()

    def for_commit(self, token: str | None) -> Counts | None:
        """The counts of the commit ``token`` (``None``: an index without one, count)."""
        if token is None:
            return None
        with self._lock:
            if token != self._token or len(self._counts) >= self._limit:
                self._token, self._counts = token, {}
            return self._counts


def row_count(conn: Connection, table: str) -> int | None:
    """FTS5's own count of the rows of ``table`` (the ``N`` of its IDF), or ``None``.

    Read from the averages record (a varint row count, then one varint per
    column), the value ``bm25()`` itself reads through ``xRowCount``.
    """
    try:
        row = conn.execute(
            f"SELECT block FROM {table}_data WHERE id = ?", (_AVERAGES_ROWID,)
        ).fetchone()
    except sqlite_module().Error:  # not an FTS5 table of this layout: score every match
        return None
    if row is None or not isinstance(row[0], bytes) or not row[0]:
        return None
    return _varint(row[0])


def _varint(data: bytes) -> int | None:
    """SQLite's varint (big-endian, 7 bits a byte, a full ninth byte) at the start of ``data``."""
    value = 0
    for i, byte in enumerate(data[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return None


def _bounds(
    conn: Connection, table: str, phrases: list[str], rows: int, counts: Counts | None
) -> list[tuple[float, str, int]]:
    """Each phrase that occurs: the most it can add to a row's score, the phrase and
    how many rows contain it, largest bound first."""
    out: list[tuple[float, int, str, int]] = []
    sql = f"SELECT count(*) FROM {table} WHERE {table} MATCH ?"
    for position, phrase in enumerate(phrases):
        known = None if counts is None else counts.get((table, phrase))
        hits = int(conn.execute(sql, (phrase,)).fetchone()[0]) if known is None else known
        if counts is not None:
            counts[(table, phrase)] = hits
        if hits == 0:
            continue  # adds nothing to any row, and no row is found by it
        idf = math.log((rows - hits + 0.5) / (hits + 0.5))
        out.append(((_K1 + 1.0) * max(idf, _MIN_IDF) * _SLACK, position, phrase, hits))
    out.sort(key=lambda b: (-b[0], b[1]))
    return [(bound, phrase, hits) for bound, _, phrase, hits in out]


def top_rows(
    conn: Connection,
    table: str,
    phrases: list[str],
    weights_sql: str,
    k: int,
    counts: Counts | None = None,
) -> list[tuple[int, float]] | None:
    """The ``k`` best ``(rowid, bm25)`` of ``phrases`` joined with OR (ascending bm25,
    then rowid), exactly as sorting every match would give them.

    :param phrases: the query's quoted phrases (``fts_query.match_phrases``).
    :param weights_sql: the column weights as ``bm25()`` arguments, all non-negative.
    :param counts: the phrases' row counts known for ``conn``'s commit
        (:meth:`PhraseCounts.for_commit`); those counted here are added.
    :returns: ``None`` when the table's row count cannot be read (the caller
        then scores every match).
    """
    rows = row_count(conn, table)
    if rows is None:
        return None
    bounds = _bounds(conn, table, phrases, rows, counts)
    if not bounds:
        return []
    full = " OR ".join(phrases)
    # rest[j]: the most a row containing none of the j rarest phrases can score.
    rest = [0.0] * (len(bounds) + 1)
    for j in range(len(bounds) - 1, -1, -1):
        rest[j] = rest[j + 1] + bounds[j][0]
    score = f"bm25({table}, {weights_sql})"
    # The fewest rarest phrases that can hold k rows at all, and whose bounds outweigh
    # the others'. Trigger: the first pass failed for 330 of 444 lists of bench.scale's
    # queries, and a failed pass reads every doclist of the query for nothing (a quarter
    # of their BM25 time). Why: a pass fails when its k-th score is not above what the
    # other phrases could give a row (rest[j]), and the k-th score was at most the
    # rarest phrases' own bounds in 7 passes of 10. Outcome: 10% less BM25 time over the
    # held-out half of those queries; the rows are the same, whatever pass finds them.
    j, held = 0, 0
    while j < len(bounds) and held < k:
        held += bounds[j][2]
        j += 1
    while j < len(bounds) and rest[0] - rest[j] <= rest[j]:
        j += 1
    while j < len(bounds):
        rarest = " OR ".join(phrase for _, phrase, _ in bounds[:j])
        top = conn.execute(
            f"SELECT rowid, {score} AS s FROM {table} WHERE {table} MATCH ? "
            f"AND +rowid IN (SELECT rowid FROM {table} WHERE {table} MATCH ?) "
            "ORDER BY s, rowid LIMIT ?",
            (full, rarest, k),
        ).fetchall()
        if len(top) < k:
            j += 1  # too few rows to bound the rest by
            continue
        kth = -float(top[-1][1])
        if rest[j] < kth:
            return [(int(r), float(s)) for r, s in top]
        # The k-th best can only rise with more rows: take as many phrases as it
        # already excludes, and check again.
        j = next((i for i in range(j + 1, len(bounds)) if rest[i] < kth), len(bounds))
    top = conn.execute(
        f"SELECT rowid, {score} AS s FROM {table} WHERE {table} MATCH ? ORDER BY s, rowid LIMIT ?",
        (full, k),
    ).fetchall()
    return [(int(r), float(s)) for r, s in top]


def scores_for(
    conn: Connection, table: str, match: str, weights_sql: str, rowids: list[int]
) -> dict[int, float]:
    """The ``bm25()`` of ``match`` for each listed row that matches it.

    ``+rowid`` keeps the id list out of FTS5's plan: given ``rowid IN (...)``
    it would restart the whole MATCH once per id (20-300 ms a search), while a
    filter on the one pass over the doclists scores only the listed rows.
    """
    if not rowids:
        return {}
    sql = (
        f"SELECT rowid, bm25({table}, {weights_sql}) FROM {table} WHERE {table} MATCH ? "
        "AND +rowid IN (SELECT value FROM json_each(?))"
    )
    return {int(r): float(s) for r, s in conn.execute(sql, (match, json.dumps(rowids)))}
