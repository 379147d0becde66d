"""Hybrid search over the team database: the SQLite retriever's search, on PostgreSQL.

:class:`PgRetriever` is a :class:`~retrieval.retriever.Retriever` whose snapshot is a
read-only ``REPEATABLE READ`` transaction on a pooled connection and whose lists come from
:class:`~retrieval.pg_search.PgSource`; the query handling, the fusion, the budget and the
explanations are the SQLite retriever's own. Every search, listing, status and note read
is confined to a set of vaults: :meth:`PgRetriever.confined` makes a view on a narrower
set that shares the connection pool and the model (cheap: one per request is fine), and a
view can only narrow, never widen, what it may see.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from signaldesk.postgres import PostgresError, PostgresSettings, connect, schema_version
from signaldesk.retrieval.context_block import ContextExcerpts
from signaldesk.retrieval.embedder import Embedder, fingerprint_for
from signaldesk.retrieval.errors import IndexUnavailableError, RetrievalError
from signaldesk.retrieval.explanation import SearchExplanation
from signaldesk.retrieval.fusion import Candidate
from signaldesk.retrieval.links import link_targets
from signaldesk.retrieval.pg_schema import COMPONENT, MIGRATIONS
from signaldesk.retrieval.pg_search import PgSource, chunk_rows, pg_filters_sql
from signaldesk.retrieval.pg_status import read_pg_status, vault_scope
from signaldesk.retrieval.query_vectors import NO_MODEL, QueryVectors
from signaldesk.retrieval.ranking import Ranked, RankRequest, rank_with
from signaldesk.retrieval.records import (
    IndexStatus,
    NoteInfo,
    SearchFilters,
    SearchResult,
)
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.search_core import SearchRequest
from signaldesk.retrieval.settings import IndexSettings, SearchSettings

__all__ = ["PgRetriever"]

logger = logging.getLogger(__name__)

_POOL_SIZE = 8
_NO_INDEX_HINT = 'run `signaldesk index` with `[index] backend = "postgres"` to build it'
T = TypeVar("T")


class _Pool:
    """A few blocking connections, each used by one search at a time (in a worker thread)."""

    def __init__(self, settings: PostgresSettings, size: int) -> None:
        self.settings = settings
        self._limiter = anyio.CapacityLimiter(size)
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        if self._closed:
            raise RetrievalError("the retriever is closed")
        async with self._limiter:
            with self._lock:
                idle = self._idle.pop() if self._idle else None
            conn: Any = idle
            if conn is None:
                conn = await anyio.to_thread.run_sync(self._open)
            try:
                yield conn
            finally:
                if conn.closed or conn.broken or self._closed:
                    with contextlib.suppress(Exception):
                        conn.close()
                else:
                    with self._lock:
                        self._idle.append(conn)

    def _open(self) -> Any:
        conn = connect(self.settings, autocommit=True)
        # Never server-side prepared: a generic plan cannot see how many query terms or
        # ids an array holds, and chose scans of whole postings tables (55 ms against 5).
        conn.prepare_threshold = None
        return conn

    async def aclose(self) -> None:
        self._closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()


def _narrow(scope: frozenset[str] | None, wanted: frozenset[str] | None) -> frozenset[str] | None:
    if scope is None:
        return wanted
    return scope if wanted is None else scope & wanted


class PgRetriever(Retriever):
    """Read-only hybrid search over the vaults of the team database. Create with
    :meth:`connect`; narrow with :meth:`confined`."""

    def __init__(
        self,
        pool: _Pool,
        index: IndexSettings,
        search: SearchSettings,
        vectors: QueryVectors,
        *,
        vaults: frozenset[str] | None,
        owner: bool,
    ) -> None:
        self._pg = pool
        self._index = index
        self._settings = search
        self._vectors = vectors
        self._fts_ok = True
        self._static_degraded: tuple[str, ...] = () if vectors.embedder is not None else (NO_MODEL,)
        self._closed = False
        self._scope = vaults
        self._owner = owner

    @classmethod
    async def open(
        cls, vault: Path, index: IndexSettings, search: SearchSettings, embedder: Embedder | None
    ) -> Retriever:
        raise TypeError("a PostgreSQL index is opened with PgRetriever.connect")

    @classmethod
    async def connect(
        cls,
        postgres: PostgresSettings,
        index: IndexSettings,
        search: SearchSettings,
        embedder: Embedder | None,
        *,
        vaults: frozenset[str] | None = None,
        pool_size: int = _POOL_SIZE,
    ) -> PgRetriever:
        """Open the team database for searching ``vaults`` (``None``: every vault).

        :raises PostgresError: the server cannot be reached.
        :raises IndexUnavailableError: the database holds no index yet.
        """
        pool = _Pool(postgres, pool_size)
        retriever = cls(
            pool,
            index,
            search,
            QueryVectors(embedder, available=True),
            vaults=vaults,
            owner=True,
        )
        try:
            await retriever._run(_check_schema)
        except BaseException:
            await pool.aclose()
            raise
        return retriever

    @property
    def vaults(self) -> frozenset[str] | None:
        """The vaults this retriever may see (``None``: all)."""
        return self._scope

    def confined(self, vaults: frozenset[str] | set[str] | tuple[str, ...]) -> PgRetriever:
        """A view that sees only ``vaults`` (and only those this retriever sees), sharing
        the pool and the model; closing it closes nothing."""
        return PgRetriever(
            self._pg,
            self._index,
            self._settings,
            self._vectors,
            vaults=_narrow(self._scope, frozenset(vaults)),
            owner=False,
        )

    async def _warm_store(self) -> None:
        """Nothing to preload: the server keeps the postings and vectors."""

    async def aclose(self) -> None:
        self._closed = True
        if self._owner:
            await self._pg.aclose()

    def _scoped(self, filters: SearchFilters | None) -> SearchFilters:
        base = filters or SearchFilters()
        return dataclasses.replace(base, vaults=_narrow(self._scope, base.vaults))

    async def _run(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn(conn)`` in a worker thread inside one read-only snapshot."""
        import psycopg

        if self._closed:
            raise RetrievalError("the retriever is closed")

        def in_snapshot(conn: Any) -> T:
            try:
                with conn.transaction():
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    return fn(conn)
            except psycopg.errors.UndefinedTable as exc:
                raise IndexUnavailableError(
                    "the team database holds no index yet", hint=_NO_INDEX_HINT
                ) from exc
            except psycopg.OperationalError as exc:
                raise IndexUnavailableError(
                    f"the team database cannot be read: {_first_line(exc)}",
                    hint="check the server and [postgres] dsn (`signaldesk doctor`)",
                ) from exc
            except psycopg.Error as exc:
                raise RetrievalError(f"index query failed: {_first_line(exc)}") from exc

        try:
            async with self._pg.connection() as conn:
                return await anyio.to_thread.run_sync(in_snapshot, conn)
        except PostgresError as exc:
            raise IndexUnavailableError(exc.message, hint=exc.hint) from exc

    # -- the hooks of Retriever's search --------------------------------------------

    async def _execute(self, request: SearchRequest, *, explain: bool) -> SearchExplanation:
        scoped = dataclasses.replace(request, filters=self._scoped(request.filters))
        return await super()._execute(scoped, explain=explain)

    async def _run_beside(self, fn: Callable[[Any, Any], T]) -> T:
        return await self._run(lambda conn: fn(conn, None))  # one snapshot, one connection

    def _vector_problem(self, conn: Any) -> str | None:
        embedder = self._vectors.embedder
        if embedder is None:
            return NO_MODEL
        scope, params = vault_scope(self._scope, "vault")
        rows = conn.execute(
            f"SELECT vault, meta FROM index_vaults WHERE true {scope} ORDER BY vault", params
        ).fetchall()
        embedded = [(v, m) for v, m in rows if m.get("vector_type") not in (None, "none")]
        if not embedded:
            return "the index holds no vectors: keyword (BM25) search only"
        first = embedded[0][1]
        try:
            mine = fingerprint_for(
                embedder, first.get("model_fingerprint"), first.get("model_source_key")
            )
        except Exception as exc:  # a model that cannot load means BM25 only, not a crash
            return f"embedding model unavailable ({exc}): keyword search only"
        others = [v for v, m in embedded if m.get("model_fingerprint") != mine]
        if others:
            return (
                f"vault(s) {', '.join(others)} were embedded with another model "
                f"({embedded[0][1].get('model_name')}); use the same [index] model: "
                "keyword search only"
            )
        return None

    def _rank(
        self,
        conn: Any,
        request: RankRequest,
        timings: dict[str, float],
        side: Any,  # always None (_run_beside): the lists run in order
    ) -> Ranked:
        vaults = request.filters.vaults if request.filters is not None else self._scope
        return rank_with(PgSource(conn, vaults), request, timings)

    # -- context, listing, status, notes ----------------------------------------------

    async def context(self, topic: str, *, filters: SearchFilters | None = None) -> ContextExcerpts:
        return await super().context(topic, filters=self._scoped(filters))

    async def _linked(
        self, results: list[SearchResult], filters: SearchFilters | None
    ) -> list[tuple[SearchResult, str]]:
        """The notes the results link to, in the linking note's own vault."""
        limit = self._settings.context_links
        targets = link_targets(((r.path, r.text) for r in results), limit) if limit else []
        if not targets:
            return []
        vault_of: dict[str, str | None] = {}
        for r in results:
            vault_of.setdefault(r.path, r.vault)
        shown = {(r.vault, r.path) for r in results}
        where, params = pg_filters_sql(self._scoped(filters))
        sql = (
            "SELECT n.vault, n.path, (SELECT c.id FROM index_chunks c WHERE c.note_id = n.id "
            "ORDER BY c.ordinal LIMIT 1) FROM index_notes n WHERE n.vault = %s AND "
            "(lower(n.path) = %s OR lower(right(n.path, %s)) = %s OR lower(n.title) = %s) "
            f"AND {where} ORDER BY length(n.path), n.path LIMIT 1"
        )

        def run(conn: Any) -> list[tuple[SearchResult, str]]:
            found: list[tuple[int, str]] = []
            taken = set(shown)
            for target, source in targets:
                name = target.casefold()
                suffix = f"/{name}.md"
                row = conn.execute(
                    sql, (vault_of.get(source), f"{name}.md", len(suffix), suffix, name, *params)
                ).fetchone()
                if row is None or row[2] is None or (row[0], row[1]) in taken:
                    continue
                taken.add((row[0], row[1]))
                found.append((int(row[2]), source))
            rows = chunk_rows(conn, [cid for cid, _ in found])
            return [
                (self._result(Candidate(cid), rows[cid], rows[cid].text), source)
                for cid, source in found
                if cid in rows
            ]

        return await self._run(run)

    async def list_notes(
        self, filters: SearchFilters | None = None, *, limit: int = 50
    ) -> list[NoteInfo]:
        """Indexed notes passing ``filters``, most recently updated first."""
        where, params = pg_filters_sql(self._scoped(filters))
        sql = (
            "SELECT n.path, n.title, n.type, n.domain, n.tags, n.status, n.created, n.updated, "
            "n.mtime_ns, n.frontmatter, n.vault FROM index_notes n "
            f"WHERE {where} ORDER BY COALESCE(n.updated, n.created, '') DESC, n.path, n.vault "
            "LIMIT %s"
        )

        def run(conn: Any) -> list[NoteInfo]:
            out = []
            for r in conn.execute(sql, (*params, max(1, int(limit)))).fetchall():
                tags = r[4] if isinstance(r[4], list) else []
                out.append(
                    NoteInfo(
                        path=r[0],
                        title=r[1],
                        note_type=r[2],
                        domain=r[3],
                        tags=tuple(str(t) for t in tags),
                        status=r[5],
                        created=r[6],
                        updated=r[7],
                        mtime=int(r[8]) / 1e9,
                        frontmatter=r[9] if isinstance(r[9], dict) else {},
                        vault=r[10],
                    )
                )
            return out

        return await self._run(run)

    async def read_note(self, vault: str, path: str) -> str | None:
        """The scrubbed text of ``path`` in ``vault`` as indexed (``None``: this retriever
        holds no such note, or may not see that vault)."""
        if self._scope is not None and vault not in self._scope:
            return None

        def run(conn: Any) -> str | None:
            row = conn.execute(
                "SELECT body FROM index_notes WHERE vault = %s AND path = %s", (vault, path)
            ).fetchone()
            return None if row is None else str(row[0])

        return await self._run(run)

    async def vault_names(self) -> frozenset[str]:
        """The indexed vaults this retriever may see."""
        scope, params = vault_scope(self._scope, "vault")

        def run(conn: Any) -> frozenset[str]:
            rows = conn.execute(f"SELECT vault FROM index_vaults WHERE true {scope}", params)
            return frozenset(str(r[0]) for r in rows)

        return await self._run(run)

    async def status(self) -> IndexStatus:
        """Counts, model, last run and any degraded mode of the vaults this retriever sees."""

        def run(conn: Any) -> IndexStatus:
            status = read_pg_status(conn, self._scope, self._pg.settings.dsn)
            degraded = list(status.degraded)
            for problem in (*self._static_degraded, self._vector_problem(conn)):
                if problem is not None and problem not in degraded:
                    degraded.append(problem)
            return dataclasses.replace(status, degraded=tuple(degraded))

        return await self._run(run)


def _check_schema(conn: Any) -> None:
    """Raise :class:`IndexUnavailableError` unless the database holds an index this
    signaldesk can read."""
    version = schema_version(conn, COMPONENT)
    if version == 0:
        raise IndexUnavailableError("the team database holds no index yet", hint=_NO_INDEX_HINT)
    if version > len(MIGRATIONS):
        raise IndexUnavailableError(
            f"the index schema in PostgreSQL is version {version}, newer than this signaldesk "
            f"knows ({len(MIGRATIONS)})",
            hint="upgrade signaldesk on this machine",
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
