"""The SQL side of a search on the PostgreSQL index: BM25 from postings, pgvector, metadata.

:class:`PgSource` is a :class:`~retrieval.ranking.RankSource` over one connection inside
one read-only ``REPEATABLE READ`` transaction (one snapshot for every list of a search,
as the SQLite retriever reads inside one transaction), so
:func:`~retrieval.ranking.rank_with` ranks with exactly the SQLite index's fusion.

BM25 is FTS5's ``bm25()``, computed in SQL: for every query token (FTS5's own tokens,
retrieval/fts_terms.py) ``idf = ln((N - n + 0.5) / (n + 0.5))`` (at least 1e-6), the
frequency weighted by column, ``k1 = 1.2``, ``b = 0.75``, the row's length over every
column against the average, ``N`` and the average over the vaults the search may see.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from signaldesk.retrieval.filters import normalise_folder
from signaldesk.retrieval.fts_query import query_terms
from signaldesk.retrieval.fts_terms import query_tokens
from signaldesk.retrieval.pg_status import vault_scope
from signaldesk.retrieval.ranking import NoteLists, RankRequest, note_lists
from signaldesk.retrieval.records import SearchFilters
from signaldesk.retrieval.search_legs import CHUNK_ROW_COLUMNS, ChunkKey, ChunkRow, chunk_row

__all__ = ["EF_SEARCH", "PgSource", "pg_filters_sql", "vector_text"]

# HNSW candidates per query (pgvector's hnsw.ef_search; at most 1000). The default of 40
# would cut the vector list at 40 of the 100 fusion candidates; at 400 the list equals
# the exact scan's on SciFact (bench/quality --backend postgres reports the overlap).
EF_SEARCH = 400

_K1 = 1.2
_B = 0.75


def vector_text(qvec: npt.NDArray[np.float32]) -> str:
    """pgvector's text form of a query vector."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(qvec, dtype=np.float32)) + "]"


def pg_filters_sql(filters: SearchFilters | None, alias: str = "n") -> tuple[str, list[Any]]:
    """:func:`~retrieval.filters.filters_sql` for PostgreSQL: an AND of conditions on the
    notes table ``alias`` (``"true"`` when nothing filters), every value a parameter."""
    if filters is None:
        return "true", []
    n = alias
    clauses: list[str] = []
    params: list[Any] = []
    if filters.vaults is not None:
        clauses.append(f"{n}.vault = ANY(%s)")
        params.append(sorted(filters.vaults))
    if filters.folder:
        folder = normalise_folder(filters.folder)
        if folder:
            clauses.append(f"(left({n}.path, %s) = %s OR {n}.path = %s)")
            params += [len(folder) + 1, folder + "/", folder]
    for column, value in (("type", filters.type), ("domain", filters.domain)):
        if value:
            clauses.append(f"{n}.{column} = %s")
            params.append(value)
    for tag in filters.tags:
        tag = tag.strip().lstrip("#").casefold()
        if not tag:
            continue
        clauses.append(
            f"EXISTS (SELECT 1 FROM jsonb_array_elements_text({n}.tags) AS t(v) WHERE "
            "lower(ltrim(t.v, '#')) = %s OR left(lower(ltrim(t.v, '#')), %s) = %s)"
        )
        params += [tag, len(tag) + 1, tag + "/"]
    if filters.status:
        clauses.append(f"{n}.status = %s")
        params.append(filters.status)
    if filters.since is not None:
        clauses.append(f"left(COALESCE({n}.updated, {n}.created), 10) >= %s")
        params.append(filters.since.isoformat())
    if filters.until is not None:
        clauses.append(f"left(COALESCE({n}.updated, {n}.created), 10) <= %s")
        params.append(filters.until.isoformat())
    if not clauses:
        return "true", []
    return " AND ".join(clauses), params


def _only_vaults(filters: SearchFilters | None) -> bool:
    """Whether ``filters`` restricts nothing but the vaults."""
    if filters is None:
        return True
    return pg_filters_sql(SearchFilters(vaults=None, **_rest(filters)))[0] == "true"


def _rest(filters: SearchFilters) -> dict[str, Any]:
    return {
        "folder": filters.folder,
        "type": filters.type,
        "domain": filters.domain,
        "tags": filters.tags,
        "status": filters.status,
        "since": filters.since,
        "until": filters.until,
    }


_BM25 = """
WITH q(term, i) AS (SELECT * FROM unnest(%(terms)s::text[]) WITH ORDINALITY),
hit AS (
    SELECT p.{id} AS id, ({freq})::float8 AS f, p.len, count(*) OVER (PARTITION BY q.i) AS n
    FROM q JOIN {table} p ON p.term = q.term {scope}
)
SELECT h.id, sum(
    greatest(ln((%(rows)s::float8 - h.n + 0.5::float8) / (h.n + 0.5::float8)), 1e-6::float8)
    * h.f * {k1_1}::float8
    / (h.f + {k1}::float8 * (1::float8 - {b}::float8 + {b}::float8 * h.len / %(avg)s::float8))
)
FROM hit h {join}
GROUP BY h.id
"""


class PgSource:
    """:class:`~retrieval.ranking.RankSource` over one PostgreSQL snapshot.

    :param vaults: the vaults this search may see (``None``: all).
    """

    def __init__(self, conn: Any, vaults: frozenset[str] | None) -> None:
        self.conn = conn
        self.vaults = vaults
        self._tokens: list[str] | None = None
        self._vault_rows: list[tuple[str, dict[str, Any], int, int, int, int]] | None = None

    # -- what the vaults hold ----------------------------------------------------

    def _vaults(self) -> list[tuple[str, dict[str, Any], int, int, int, int]]:
        """The vaults this search sees: name, meta, chunk rows and tokens, note rows and
        tokens (read once per search: every list needs some of it)."""
        if self._vault_rows is None:
            scope, params = vault_scope(self.vaults, "vault")
            self._vault_rows = [
                (str(r[0]), dict(r[1]), int(r[2]), int(r[3]), int(r[4]), int(r[5]))
                for r in self.conn.execute(
                    "SELECT vault, meta, chunk_rows, chunk_tokens, note_rows, note_tokens "
                    f"FROM index_vaults WHERE true {scope} ORDER BY vault",
                    params,
                ).fetchall()
            ]
        return self._vault_rows

    def _totals(self, level: str) -> tuple[int, float]:
        """Rows and average length (in tokens) of the ``chunk`` or ``note`` level."""
        vaults = self._vaults()
        if level == "chunk":
            count, total = sum(v[2] for v in vaults), sum(v[3] for v in vaults)
        else:
            count, total = sum(v[4] for v in vaults), sum(v[5] for v in vaults)
        return count, (total / count if count else 1.0)

    def model_name(self) -> str | None:
        return next((str(v[1]["model_name"]) for v in self._vaults() if "model_name" in v[1]), None)

    def notes_ready(self) -> bool:
        return True  # every PostgreSQL index row was written with its note-level row

    # -- keyword lists -------------------------------------------------------------

    def _query_tokens(self, req: RankRequest) -> list[str]:
        if self._tokens is None:
            self._tokens = query_tokens(query_terms(req.query))
        return self._tokens

    def _bm25(
        self,
        req: RankRequest,
        *,
        table: str,
        id_column: str,
        weights: tuple[float, ...],
        level: str,
        join: str,
    ) -> tuple[list[tuple[int, float]], Mapping[int, float]]:
        tokens = self._query_tokens(req)
        if not tokens:
            return [], {}
        rows, avg = self._totals(level)
        if rows == 0:
            return [], {}
        freq = " + ".join(f"p.f{i} * {float(w)!r}::float8" for i, w in enumerate(weights))
        where, params = pg_filters_sql(_without_vaults(req.filters))
        # The vaults are named even when every vault may be searched: the postings' key
        # starts with the vault, and a term alone would scan the whole table.
        scope = "AND p.vault = ANY(%(vaults)s)"
        named: dict[str, Any] = {"terms": tokens, "rows": rows, "avg": avg}
        named["vaults"] = [v[0] for v in self._vaults()]
        join_sql = ""
        if where != "true":
            # Positional filter parameters become named ones for this statement.
            for i, value in enumerate(params):
                named[f"f{i}"] = value
                where = where.replace("%s", f"%(f{i})s", 1)
            join_sql = f"{join} WHERE {where}"
        sql = _BM25.format(
            id=id_column,
            freq=freq,
            table=table,
            scope=scope,
            k1_1=repr(_K1 + 1),
            k1=repr(_K1),
            b=repr(_B),
            join=join_sql,
        )
        found = self.conn.execute(sql, named).fetchall()
        every = {int(i): float(s) for i, s in found}
        top = heapq.nsmallest(req.depth, every.items(), key=lambda hit: (-hit[1], hit[0]))
        return top, every

    def chunk_bm25(self, req: RankRequest) -> tuple[list[tuple[int, float]], Mapping[int, float]]:
        return self._bm25(
            req,
            table="index_chunk_terms",
            id_column="chunk_id",
            weights=req.settings.column_weights,
            level="chunk",
            join="JOIN index_chunks c ON c.id = h.id JOIN index_notes n ON n.id = c.note_id",
        )

    def note_bm25(self, req: RankRequest) -> tuple[list[tuple[int, float]], Mapping[int, float]]:
        return self._bm25(
            req,
            table="index_note_terms",
            id_column="note_id",
            weights=req.settings.note_column_weights,
            level="note",
            join="JOIN index_notes n ON n.id = h.id",
        )

    def exact_notes(self, key: str, filters: SearchFilters | None) -> set[int]:
        if not key:
            return set()
        where, params = pg_filters_sql(self._scoped(filters))
        rows = self.conn.execute(
            "SELECT k.note_id FROM index_note_keys k JOIN index_notes n ON n.id = k.note_id "
            f"WHERE k.key = %s AND {where}",
            [key, *params],
        ).fetchall()
        return {int(r[0]) for r in rows}

    def _scoped(self, filters: SearchFilters | None) -> SearchFilters:
        base = filters or SearchFilters()
        return SearchFilters(vaults=self.vaults, **_rest(base))

    # -- vectors -------------------------------------------------------------------

    def vector_top(
        self, qvec: npt.NDArray[np.float32], depth: int, filters: SearchFilters | None
    ) -> list[tuple[int, float]]:
        """The ``depth`` nearest chunks: through the HNSW index when only vaults restrict
        the search, else (or when the index returns too few) by an exact scan."""
        vec = vector_text(qvec)
        where, params = self._vector_where(filters)
        sql = (
            "SELECT c.id, 1 - (c.embedding <=> %s::vector) AS score "
            f"{where} ORDER BY c.embedding <=> %s::vector LIMIT %s"
        )
        args = [vec, *params, vec, depth]
        if _only_vaults(filters):
            self.conn.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, depth)}")
            rows = self.conn.execute(sql, args).fetchall()
            if len(rows) >= depth or len(rows) >= self._vector_rows(where, params):
                return _best_first(rows)
        # A selective filter: HNSW filters after its candidate list and would come back
        # short, so the filtered rows are scanned exactly.
        self.conn.execute("SET LOCAL enable_indexscan = off")
        try:
            return _best_first(self.conn.execute(sql, args).fetchall())
        finally:
            self.conn.execute("SET LOCAL enable_indexscan = on")

    def _vector_where(self, filters: SearchFilters | None) -> tuple[str, list[Any]]:
        """``FROM ... WHERE ...`` of the chunks with a vector this search may see."""
        where, params = pg_filters_sql(_without_vaults(filters))
        scope, vault_params = vault_scope(self.vaults, "c.vault")
        # The notes are joined only to filter: the HNSW scan then feeds the LIMIT directly.
        notes = " JOIN index_notes n ON n.id = c.note_id" if where != "true" else ""
        return (
            f"FROM index_chunks c{notes} WHERE c.embedding IS NOT NULL {scope} AND {where}",
            [*vault_params, *params],
        )

    def _vector_rows(self, where: str, params: list[Any]) -> int:
        row = self.conn.execute(f"SELECT count(*) {where}", params).fetchone()
        return int(row[0])

    def begin_note_lists(
        self, req: RankRequest, timings: dict[str, float], *, with_scan: bool
    ) -> Callable[[], NoteLists]:
        lists = note_lists(self, req, timings)  # one connection: read here, in order
        return lambda: lists

    def begin_vector_top(
        self,
        qvec: npt.NDArray[np.float32],
        depth: int,
        filters: SearchFilters | None,
        timings: dict[str, float],
        *,
        beside: bool,
    ) -> Callable[[], list[tuple[int, float]]]:
        # One connection runs one statement at a time: the list is read here, in order.
        t = time.perf_counter()
        top = self.vector_top(qvec, depth, filters)
        timings["vector"] = (time.perf_counter() - t) * 1000
        return lambda: top

    def cosines(self, chunk_ids: list[int], qvec: npt.NDArray[np.float32]) -> dict[int, float]:
        if not chunk_ids:
            return {}
        rows = self.conn.execute(
            "SELECT id, 1 - (embedding <=> %s::vector) FROM index_chunks "
            "WHERE id = ANY(%s) AND embedding IS NOT NULL",
            (vector_text(qvec), chunk_ids),
        ).fetchall()
        return {int(i): float(s) for i, s in rows}

    # -- metadata ------------------------------------------------------------------

    def chunk_keys(self, chunk_ids: list[int]) -> dict[int, ChunkKey]:
        if not chunk_ids:
            return {}
        rows = self.conn.execute(
            "SELECT c.id, n.path, c.ordinal, c.section, c.note_id FROM index_chunks c "
            "JOIN index_notes n ON n.id = c.note_id WHERE c.id = ANY(%s)",
            (chunk_ids,),
        ).fetchall()
        return {int(r[0]): ChunkKey(str(r[1]), int(r[2]), str(r[3]), int(r[4])) for r in rows}

    def note_chunks(self, note_ids: list[int]) -> dict[int, ChunkKey]:
        if not note_ids:
            return {}
        rows = self.conn.execute(
            "SELECT c.id, n.path, c.ordinal, c.section, c.note_id FROM index_chunks c "
            "JOIN index_notes n ON n.id = c.note_id WHERE c.note_id = ANY(%s)",
            (note_ids,),
        ).fetchall()
        return {int(r[0]): ChunkKey(str(r[1]), int(r[2]), str(r[3]), int(r[4])) for r in rows}

    def note_updated(self, note_ids: list[int]) -> dict[int, str]:
        if not note_ids:
            return {}
        rows = self.conn.execute(
            "SELECT id, COALESCE(updated, created) FROM index_notes WHERE id = ANY(%s)",
            (note_ids,),
        ).fetchall()
        return {int(r[0]): str(r[1]) for r in rows if r[1] is not None}

    def chunk_rows(self, chunk_ids: list[int]) -> dict[int, ChunkRow]:
        return chunk_rows(self.conn, chunk_ids)


def chunk_rows(conn: Any, chunk_ids: list[int]) -> dict[int, ChunkRow]:
    """Chunk and note fields for each listed chunk that still exists."""
    if not chunk_ids:
        return {}
    rows = conn.execute(
        f"SELECT {CHUNK_ROW_COLUMNS}, n.vault FROM index_chunks c "
        "JOIN index_notes n ON n.id = c.note_id WHERE c.id = ANY(%s)",
        (chunk_ids,),
    ).fetchall()
    return {int(r[0]): chunk_row(r, vault=str(r[12])) for r in rows}


def _without_vaults(filters: SearchFilters | None) -> SearchFilters | None:
    return None if filters is None else SearchFilters(**_rest(filters))


def _best_first(rows: list[Any]) -> list[tuple[int, float]]:
    # Equal distances are ordered by chunk id, as the in-memory matrix orders them.
    return sorted(((int(i), float(s)) for i, s in rows), key=lambda hit: (-hit[1], hit[0]))
