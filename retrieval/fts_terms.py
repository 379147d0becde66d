"""FTS5's own tokenizer, for an index that keeps its keyword postings elsewhere (PostgreSQL).

PostgreSQL's text search parser and its Snowball stemmer cut and stem words differently
from FTS5's ``porter unicode61 remove_diacritics 2`` (hyphenated words, URLs, numbers,
Porter 1 against Porter 2), so the same query would find and weigh different words on the
two backends. Instead the PostgreSQL index asks FTS5 itself: the text goes into a private
in-memory FTS5 table with the same tokenizer, and ``fts5vocab`` (``instance``) reads back
every token with its row and column. Both backends then count exactly the same terms, and
BM25 computed from those counts equals FTS5's ``bm25()`` (tests/test_pg_index.py checks).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from signaldesk.retrieval.schema import FTS_TOKENIZE
from signaldesk.retrieval.store import sqlite_module

__all__ = ["Postings", "query_tokens", "term_postings"]

_local = threading.local()


@dataclass(frozen=True, slots=True)
class Postings:
    """The terms of a batch of rows: ``(term, row index, count per column)`` and each
    row's length in tokens (every column together, as FTS5's ``bm25()`` counts it)."""

    entries: list[tuple[str, int, tuple[int, ...]]]
    lengths: list[int]


def _table(columns: int) -> Any:  # the SQLite module's own connection type
    """This thread's in-memory FTS5 table of ``columns`` columns (created once)."""
    tables: dict[int, Any] | None = getattr(_local, "tables", None)
    if tables is None:
        tables = _local.tables = {}
    conn = tables.get(columns)
    if conn is None:
        conn = sqlite_module().connect(":memory:", check_same_thread=False)
        names = ", ".join(f"c{i}" for i in range(columns))
        conn.execute(
            f"CREATE VIRTUAL TABLE t USING fts5({names}, content = '', tokenize = '{FTS_TOKENIZE}')"
        )
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        tables[columns] = conn
    return conn


def term_postings(rows: Sequence[Sequence[str]], columns: int) -> Postings:
    """Tokenise ``rows`` (each ``columns`` texts) as the SQLite keyword tables do."""
    conn = _table(columns)
    marks = ", ".join("?" * (columns + 1))
    names = ", ".join(f"c{i}" for i in range(columns))
    counts = ", ".join(f"sum(col = 'c{i}')" for i in range(columns))
    conn.execute("BEGIN")
    try:
        conn.executemany(
            f"INSERT INTO t (rowid, {names}) VALUES ({marks})",
            ((i + 1, *row) for i, row in enumerate(rows)),
        )
        # The vocabulary is walked term by term, so grouping by (term, doc) needs no sort.
        found = conn.execute(f"SELECT term, doc, {counts} FROM v GROUP BY term, doc").fetchall()
    finally:
        conn.execute("ROLLBACK")  # nothing is kept: the table is empty for the next batch
    lengths = [0] * len(rows)
    entries: list[tuple[str, int, tuple[int, ...]]] = []
    for term, doc, *per_column in found:
        index = int(doc) - 1
        tf = tuple(int(c) for c in per_column)
        lengths[index] += sum(tf)
        entries.append((str(term), index, tf))
    return Postings(entries, lengths)


def query_tokens(terms: Sequence[str]) -> list[str]:
    """The tokens of each query term (``fts_query.query_terms``), in order.

    A term FTS5 would cut into several tokens (a phrase) gives each of them; a term
    repeated after stemming ("run", "running") stays twice, as FTS5 scores each phrase
    of an OR query on its own.
    """
    if not terms:
        return []
    postings = term_postings([(t,) for t in terms], 1)
    by_row: dict[int, list[str]] = {}
    for term, index, _tf in postings.entries:
        by_row.setdefault(index, []).append(term)
    out: list[str] = []
    for index in range(len(terms)):
        out.extend(by_row.get(index, ()))
    return out
