"""One search's ranking inside one read transaction: the lists, the fusion, the results.

Plain synchronous code over one connection (the retriever runs it in a worker
thread). The steps:

1. The lists: chunk BM25 (``chunks_fts``), vector KNN over chunks, note BM25
   (``notes_fts``) and the exact-name lookup (``note_keys``), each with the
   filters applied before its top-N cut.
2. Chunk candidates get both chunk scores (BM25 from the same FTS5 pass, cosine
   from the matrix), so a chunk is not punished for falling just below one
   list's cut; notes found only by the note list or by name bring their chunks.
3. Chunks are fused (``fusion.fuse``) to choose each note's best chunk; notes
   are fused from their note-level BM25, best chunk BM25, best cosine and the
   exact-name bonus (``note_rank.fuse_notes``), plus recency if enabled.
4. Results: notes in fused order, each shown by its best chunk (and up to
   ``per_note`` chunks that a list found), until ``limit``.

An index whose note-level rows are incomplete (built before schema v3 and not
yet re-indexed) is ranked from the chunk lists alone, with a degraded notice.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt

from signaldesk.retrieval import search_legs
from signaldesk.retrieval.bm25_topk import Counts
from signaldesk.retrieval.chunk_keys import ChunkKeyIndex
from signaldesk.retrieval.fusion import NO_RANK, Candidate, FusionParams, fused_array
from signaldesk.retrieval.note_rank import (
    NoteCandidate,
    NoteParams,
    NoteSignals,
    note_array,
    recency_factor,
)
from signaldesk.retrieval.records import SearchFilters, SearchMode
from signaldesk.retrieval.schema import NOTE_FTS_SINCE_FORMAT, NOTE_FTS_TABLE
from signaldesk.retrieval.search_legs import ChunkKey, ChunkRow
from signaldesk.retrieval.store import Connection, get_meta
from signaldesk.retrieval.vector_matrix import VectorMatrix, query_blob
from signaldesk.retrieval.weights import (
    DECISIVE_DEPTH,
    ListWeights,
    resolve_weights,
    vector_weight_for,
)

if TYPE_CHECKING:
    from signaldesk.retrieval.settings import SearchSettings

__all__ = [
    "NOTES_NOT_READY",
    "NoteLists",
    "RankRequest",
    "RankSource",
    "Ranked",
    "note_lists",
    "notes_ready",
    "rank",
    "rank_with",
]

NOTES_NOT_READY = (
    "the index predates note-level ranking (run `signaldesk index` to bring it up to date): "
    "chunks are ranked without the note-level keyword list and title matches"
)


@dataclass(frozen=True, slots=True)
class RankRequest:
    """What one search asks for, already validated by the retriever."""

    mode: SearchMode  # the effective mode
    match: str | None
    key: str
    qvec: npt.NDArray[np.float32] | None
    depth: int
    limit: int
    filters: SearchFilters | None
    settings: SearchSettings
    # The query as typed, for a store that scores BM25 itself from the query's words
    # rather than through the FTS5 MATCH expression (the PostgreSQL index).
    query: str = ""
    # Whether every candidate note is wanted (Ranked.notes), not only those shown.
    explain: bool = False


@dataclass(slots=True)
class Ranked:
    """The outcome: the chunks to show, and every candidate note in fused order when the
    request asked for an explanation (``RankRequest.explain``; else none)."""

    notes: list[NoteCandidate]
    shown: list[Candidate]
    keys: dict[int, ChunkKey]
    rows: dict[int, ChunkRow]
    notes_used: bool
    weights: ListWeights
    note_of_shown: dict[int, NoteCandidate] = field(default_factory=dict)


def notes_ready(conn: Connection) -> bool:
    """Whether every note of the index has its note-level keyword row."""
    fmt = get_meta(conn, "index_format") or ""
    try:
        version = int(fmt.split(":", 1)[0])
    except ValueError:
        return False
    if version < NOTE_FTS_SINCE_FORMAT:
        return False
    row = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE name IN (?, 'note_keys')", (NOTE_FTS_TABLE,)
    ).fetchone()
    return int(row[0]) == 2


def _chunk_params(s: SearchSettings, w: ListWeights) -> FusionParams:
    return FusionParams(method=s.fusion, bm25_weight=w.bm25, vector_weight=w.vector, rrf_k=s.rrf_k)


def _note_params(
    s: SearchSettings, w: ListWeights, mode: SearchMode, use_notes: bool
) -> NoteParams:
    note_w = w.note if use_notes else 0.0
    exact = s.exact_title_boost if use_notes else 0.0
    if mode == "vector":
        note_w, chunk_w, vec_w, exact = 0.0, 0.0, 1.0, 0.0
    elif mode == "bm25":
        chunk_w, vec_w = w.bm25, 0.0
    else:
        chunk_w, vec_w = w.bm25, w.vector  # the caller adapts the vector weight per query
    return NoteParams(
        method=s.fusion,
        note_weight=note_w,
        chunk_weight=chunk_w,
        vector_weight=vec_w,
        exact_boost=exact,
        recency_weight=s.recency_weight,
        rrf_k=s.rrf_k,
    )


T = TypeVar("T")

NoteLists = tuple[list[tuple[int, float]], Mapping[int, float], set[int]]
"""The note BM25 list's top rows, every note's BM25 score, the notes named exactly."""


class RankSource(Protocol):
    """The lists and lookups of one search over one snapshot of an index.

    :func:`rank` reads them from an SQLite index; the PostgreSQL index
    (``retrieval.pg_search``) provides the same, so both rank with the same fusion.
    Ids are the store's own chunk and note ids.
    """

    def model_name(self) -> str | None: ...

    def notes_ready(self) -> bool: ...

    def chunk_bm25(
        self, req: RankRequest
    ) -> tuple[list[tuple[int, float]], Mapping[int, float]]: ...

    def note_bm25(
        self, req: RankRequest
    ) -> tuple[list[tuple[int, float]], Mapping[int, float]]: ...

    def exact_notes(self, key: str, filters: SearchFilters | None) -> set[int]: ...

    def begin_note_lists(
        self, req: RankRequest, timings: dict[str, float], *, with_scan: bool
    ) -> Callable[[], NoteLists]:
        """:func:`note_lists`, possibly read beside the chunk list; the returned
        callable gives the lists. Called before :meth:`begin_vector_top`
        (``with_scan``: it will be called)."""
        ...

    def vector_top(
        self, qvec: npt.NDArray[np.float32], depth: int, filters: SearchFilters | None
    ) -> list[tuple[int, float]]: ...

    def begin_vector_top(
        self,
        qvec: npt.NDArray[np.float32],
        depth: int,
        filters: SearchFilters | None,
        timings: dict[str, float],
        *,
        beside: bool,
    ) -> Callable[[], list[tuple[int, float]]]:
        """:meth:`vector_top`, possibly started in another thread (``beside``: the keyword
        lists run meanwhile); the returned callable gives the list."""
        ...

    def cosines(self, chunk_ids: list[int], qvec: npt.NDArray[np.float32]) -> dict[int, float]: ...

    def chunk_keys(self, chunk_ids: list[int]) -> dict[int, ChunkKey]: ...

    def note_chunks(self, note_ids: list[int]) -> dict[int, ChunkKey]: ...

    def note_updated(self, note_ids: list[int]) -> dict[int, str]: ...

    def chunk_rows(self, chunk_ids: list[int]) -> dict[int, ChunkRow]: ...


class _SqliteSource:
    """:class:`RankSource` over one SQLite connection (FTS5, the matrix or sqlite-vec)."""

    def __init__(
        self,
        conn: Connection,
        matrix_for: Callable[[Any], VectorMatrix | None],
        key_index: ChunkKeyIndex | None = None,
        counts: Counts | None = None,
        side: Connection | None = None,
    ) -> None:
        self.conn = conn
        self._matrix_for = matrix_for
        self._key_index = key_index
        self._counts = counts
        self._side = side
        self._after_scan: Callable[[], None] | None = None
        self._matrix: VectorMatrix | None = None
        self._vector_type = "float"

    def model_name(self) -> str | None:
        return get_meta(self.conn, "model_name")

    def notes_ready(self) -> bool:
        return notes_ready(self.conn)

    def chunk_bm25(self, req: RankRequest) -> tuple[list[tuple[int, float]], Mapping[int, float]]:
        assert req.match is not None
        return search_legs.bm25_list(
            self.conn, req.match, req.depth, req.settings.column_weights, req.filters, self._counts
        )

    def note_bm25(self, req: RankRequest) -> tuple[list[tuple[int, float]], Mapping[int, float]]:
        assert req.match is not None
        return search_legs.note_bm25_list(
            self.conn,
            req.match,
            req.depth,
            req.settings.note_column_weights,
            req.filters,
            self._counts,
        )

    def exact_notes(self, key: str, filters: SearchFilters | None) -> set[int]:
        return search_legs.exact_notes(self.conn, key, filters)

    def begin_note_lists(
        self, req: RankRequest, timings: dict[str, float], *, with_scan: bool
    ) -> Callable[[], NoteLists]:
        lists = _Once[NoteLists]()
        if self._side is not None:
            # Another thread reads the note lists on the side connection (the same
            # commit, see SearchCore) if it gets to them before this one is done with
            # the chunk list. With a vector scan, its thread does once the scan is
            # done: a broad query's two FTS5 passes (~10 ms each) then run side by
            # side, a narrow one's (~2 ms) stay here while the scan runs on the other
            # core. The lists are the same either way.
            side = _SqliteSource(self._side, self._matrix_for, self._key_index, self._counts)
            self._after_scan = lambda: lists.run(lambda: note_lists(side, req, timings))
            if not with_scan:
                _scanner().submit(self._after_scan)

        def result() -> NoteLists:
            lists.run(lambda: note_lists(self, req, timings))
            return lists.result()

        return result

    def vector_top(
        self, qvec: npt.NDArray[np.float32], depth: int, filters: SearchFilters | None
    ) -> list[tuple[int, float]]:
        conn = self.conn
        allowed = search_legs.allowed_chunk_ids(conn, filters)
        matrix = self._matrix_for(conn)
        self._matrix = matrix
        self._vector_type = get_meta(conn, "vector_type") or "float"
        if matrix is not None:
            return matrix.top_k(qvec, depth, allowed)
        return search_legs.vec_knn(
            conn, query_blob(qvec, self._vector_type), self._vector_type, depth, allowed
        )

    def begin_vector_top(
        self,
        qvec: npt.NDArray[np.float32],
        depth: int,
        filters: SearchFilters | None,
        timings: dict[str, float],
        *,
        beside: bool,
    ) -> Callable[[], list[tuple[int, float]]]:
        conn = self.conn
        matrix = self._matrix_for(conn)
        if matrix is None or not beside:
            t = time.perf_counter()
            top = self.vector_top(qvec, depth, filters)
            timings["vector"] = (time.perf_counter() - t) * 1000
            return lambda: top
        # The scan runs beside the keyword lists: numpy and SQLite both let go of the
        # GIL, so a free core takes the mat-vec while this one runs the SQL (the same
        # computation: the same list comes back).
        allowed = search_legs.allowed_chunk_ids(conn, filters)
        self._matrix = matrix
        self._vector_type = get_meta(conn, "vector_type") or "float"
        scan = _scanner().submit(
            _timed_top_k, matrix, qvec, depth, allowed, timings, self._after_scan
        )
        return scan.result

    def cosines(self, chunk_ids: list[int], qvec: npt.NDArray[np.float32]) -> dict[int, float]:
        if self._matrix is not None:
            return self._matrix.scores_for(qvec, chunk_ids)
        vector_type = self._vector_type
        return search_legs.vec_scores_for(
            self.conn, query_blob(qvec, vector_type), vector_type, chunk_ids
        )

    def chunk_keys(self, chunk_ids: list[int]) -> dict[int, ChunkKey]:
        if self._key_index is not None:
            return self._key_index.chunk_keys(chunk_ids)
        return search_legs.chunk_keys(self.conn, chunk_ids)

    def note_chunks(self, note_ids: list[int]) -> dict[int, ChunkKey]:
        if self._key_index is not None:
            return self._key_index.note_chunks(note_ids)
        return search_legs.note_chunks(self.conn, note_ids)

    def note_updated(self, note_ids: list[int]) -> dict[int, str]:
        return search_legs.note_updated(self.conn, note_ids)

    def chunk_rows(self, chunk_ids: list[int]) -> dict[int, ChunkRow]:
        return search_legs.chunk_rows(self.conn, chunk_ids)


def rank(
    conn: Connection,
    req: RankRequest,
    matrix_for: Callable[[Any], VectorMatrix | None],
    timings: dict[str, float],
    key_index: ChunkKeyIndex | None = None,
    counts: Counts | None = None,
    side: Connection | None = None,
) -> Ranked:
    """Run the lists for ``req`` on ``conn`` and fuse them into ranked notes and chunks.

    :param key_index: the chunks' positions in memory for ``conn``'s commit
        (chunk_keys.py); ``None``: read with SQL.
    :param counts: the phrases' row counts known for ``conn``'s commit (bm25_topk.py).
    :param side: a second connection in a read transaction on ``conn``'s commit: the
        note lists are read on it beside the chunk list (``None``: one after the other).
    """
    source = _SqliteSource(
        conn,
        matrix_for if req.settings.vector_matrix else lambda _: None,
        key_index,
        counts,
        side,
    )
    return rank_with(source, req, timings)


def rank_with(source: RankSource, req: RankRequest, timings: dict[str, float]) -> Ranked:
    """Run the lists for ``req`` on ``source`` and fuse them into ranked notes and chunks."""
    s = req.settings
    weights = resolve_weights(s, source.model_name())
    use_bm25 = req.mode in ("hybrid", "bm25") and req.match is not None
    use_vec = req.mode in ("hybrid", "vector") and req.qvec is not None
    use_notes = req.mode in ("hybrid", "bm25") and source.notes_ready()

    pending_notes = source.begin_note_lists(req, timings, with_scan=use_vec) if use_notes else None
    pending_vec: Callable[[], list[tuple[int, float]]] | None = None
    if use_vec:
        assert req.qvec is not None
        # Started before the keyword lists, so a source may run it beside them (SQLite's
        # matrix scan on a free core); the list is the same either way.
        pending_vec = source.begin_vector_top(
            req.qvec, req.depth, req.filters, timings, beside=use_bm25 or use_notes
        )

    bm25: list[tuple[int, float]] = []
    bm25_all: Mapping[int, float] = {}
    if use_bm25:
        t = time.perf_counter()
        bm25, bm25_all = source.chunk_bm25(req)
        timings["bm25"] = (time.perf_counter() - t) * 1000

    note_top: list[tuple[int, float]] = []
    note_all: Mapping[int, float] = {}
    exact: set[int] = set()
    if pending_notes is not None:
        t = time.perf_counter()
        note_top, note_all, exact = pending_notes()
        timings["notes_wait"] = (time.perf_counter() - t) * 1000

    vec: list[tuple[int, float]] = []
    if pending_vec is not None:
        t = time.perf_counter()
        vec = pending_vec()
        timings["vector_wait"] = (time.perf_counter() - t) * 1000

    t = time.perf_counter()
    vec_rank = {cid: i for i, (cid, _) in enumerate(vec, start=1)}
    vec_score = dict(vec)
    keys = source.chunk_keys(list(dict.fromkeys([*(cid for cid, _ in bm25), *vec_rank])))
    # A chunk deleted since its list was read cannot be shown (same snapshot, so
    # this only guards against an inconsistent index).
    seen_notes = {k.note_id for k in keys.values()}
    extra = [nid for nid, _ in note_top if nid not in seen_notes]
    extra += sorted(nid for nid in exact if nid not in seen_notes and nid not in extra)
    if extra:
        # Notes found only by the note list or by name: their chunks join the
        # candidates so the note can be scored and shown by its best chunk.
        keys.update(source.note_chunks(extra))
    # The keyword lists may hold only their top rows; the other candidates' scores are
    # read now, for these chunks and notes only (search_legs.Relevance).
    if isinstance(bm25_all, search_legs.Relevance):
        bm25_all.cover(keys)
    if isinstance(note_all, search_legs.Relevance):
        note_all.cover({k.note_id for k in keys.values()})
    if use_vec and req.qvec is not None and (req.mode == "hybrid" or extra):
        # Every candidate gets both scores, so blending compares like with like.
        missing = [cid for cid in keys if cid not in vec_score]
        if missing:
            vec_score.update(source.cosines(missing, req.qvec))
    lists = _Lists(keys, bm25, bm25_all, vec_rank, vec_score, note_top, note_all, exact)
    fused = _fuse(source, req, weights, use_notes, lists)
    rows = source.chunk_rows([c.chunk_id for c in fused.shown])
    timings["fuse"] = (time.perf_counter() - t) * 1000
    return Ranked(
        fused.notes, fused.shown, keys, rows, use_notes, fused.weights, fused.note_of_shown
    )


@dataclass(frozen=True, slots=True)
class _Lists:
    """What the lists of one search found: the candidate chunks (``keys``), the chunk
    keyword list and every candidate's scores, the vector ranks, the note lists."""

    keys: dict[int, ChunkKey]
    bm25: list[tuple[int, float]]
    bm25_all: Mapping[int, float]
    vec_rank: dict[int, int]
    vec_score: dict[int, float]
    note_top: list[tuple[int, float]]
    note_all: Mapping[int, float]
    exact: set[int]


@dataclass(frozen=True, slots=True)
class _Fused:
    notes: list[NoteCandidate]
    shown: list[Candidate]
    note_of_shown: dict[int, NoteCandidate]
    weights: ListWeights


def _fuse(
    source: RankSource, req: RankRequest, weights: ListWeights, use_notes: bool, lists: _Lists
) -> _Fused:
    """The candidates fused: chunks scored, grouped by note, notes scored and ordered,
    and the chunks to show (steps 3 and 4 of the module docstring).

    Over one array per signal rather than an object per candidate. Trigger: making,
    grouping, scoring and sorting an object for each of a hybrid query's ~170 candidate
    chunks and ~165 notes took ~0.8 ms of its ~5 ms (issue 15). Why: only the notes shown
    need objects. Outcome: ~0.6 ms, with the same float64 operations in the same order
    (fusion.fused_array, note_rank.note_array), so the same scores and the same order
    (checked result by result over 2,880 searches of the 45k-note vault, explanations
    included); the other notes' objects are made only for an explanation
    (``req.explain``).
    """
    s = req.settings
    cids = list(lists.keys)
    n = len(cids)
    if not n:
        return _Fused([], [], {}, weights)
    bm25_rank = {cid: i for i, (cid, _) in enumerate(lists.bm25, start=1)}
    chunk_keys = [lists.keys[c] for c in cids]
    note_of = np.fromiter((k.note_id for k in chunk_keys), np.int64, n)
    ordinal = np.fromiter((k.ordinal for k in chunk_keys), np.int64, n)
    b_rank = np.fromiter((bm25_rank.get(c, 0) for c in cids), np.int64, n)
    v_rank = np.fromiter((lists.vec_rank.get(c, 0) for c in cids), np.int64, n)
    b_score = np.fromiter((lists.bm25_all.get(c, _NAN) for c in cids), np.float64, n)
    v_score = np.fromiter((lists.vec_score.get(c, _NAN) for c in cids), np.float64, n)
    chunk_score = _score_chunks(b_rank, b_score, v_rank, v_score, req.mode, s, weights)

    # Each note's chunks together, best first (fused score, then position in the note);
    # notes in the order they were first met, as the candidates list them.
    _, first, inverse = np.unique(note_of, return_index=True, return_inverse=True)
    met = first[inverse]
    order = np.lexsort((ordinal, -chunk_score, met))
    grouped = note_of[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    best = order[starts]
    note_ids = note_of[best]
    unranked = np.iinfo(np.int64).max
    chunk_rank = np.minimum.reduceat(np.where(b_rank > 0, b_rank, unranked)[order], starts)
    vector_rank = np.minimum.reduceat(np.where(v_rank > 0, v_rank, unranked)[order], starts)
    chunk_rank[chunk_rank == unranked] = 0
    vector_rank[vector_rank == unranked] = 0
    with np.errstate(invalid="ignore"):  # a note none of whose chunks has the score: NaN
        chunk_best = np.fmax.reduceat(b_score[order], starts)
        vector_best = np.fmax.reduceat(v_score[order], starts)

    nids = note_ids.tolist()
    note_rank_of = {nid: i for i, (nid, _) in enumerate(lists.note_top, start=1)}
    recency_of = _recency(source, nids, s) if s.recency_weight > 0 else {}
    signals = NoteSignals(
        note_rank=np.fromiter((note_rank_of.get(nid, 0) for nid in nids), np.int64, len(nids)),
        note_score=np.fromiter(
            (lists.note_all.get(nid, _NAN) for nid in nids), np.float64, len(nids)
        ),
        chunk_rank=chunk_rank,
        chunk_score=chunk_best,
        vector_rank=vector_rank,
        vector_score=vector_best,
        exact=np.fromiter((nid in lists.exact for nid in nids), bool, len(nids)),
        recency=np.fromiter((recency_of.get(nid, 0.0) for nid in nids), np.float64, len(nids)),
    )
    if req.mode == "vector":
        # One list: its own score (the best cosine), as the chunk list had it.
        scores = np.nan_to_num(vector_best, nan=0.0) + s.recency_weight * signals.recency
    else:
        params = _note_params(s, weights, req.mode, use_notes)
        if req.mode == "hybrid":
            keyword = lists.note_all if use_notes else lists.bm25_all
            top = lists.note_top if use_notes else lists.bm25
            used = vector_weight_for(weights, _leading_scores(top, keyword, req.depth))
            params = replace(params, vector_weight=used)
            weights = replace(weights, vector=used)
        scores = note_array(signals, params)

    paths = [chunk_keys[i].path for i in best.tolist()]
    ranks = np.stack([signals.note_rank, chunk_rank, vector_rank])
    best_rank = np.where(ranks > 0, ranks, NO_RANK).min(axis=0)
    ranked = _note_order(scores, signals.exact, best_rank, paths)

    made: dict[int, NoteCandidate] = {}

    def candidate(i: int) -> NoteCandidate:
        """The object of note ``i``, made once (the note shown and the note explained are
        one object)."""
        note = made.get(i)
        if note is None:
            note = made[i] = NoteCandidate(
                note_id=nids[i],
                path=paths[i],
                best_chunk=cids[int(best[i])],
                note_rank=_rank(signals.note_rank[i]),
                note_score=_score(signals.note_score[i]),
                chunk_rank=_rank(chunk_rank[i]),
                chunk_score=_score(chunk_best[i]),
                vector_rank=_rank(vector_rank[i]),
                vector_score=_score(vector_best[i]),
                exact=bool(signals.exact[i]),
                recency=float(signals.recency[i]),
                score=float(scores[i]),
            )
        return note

    ends = [*starts.tolist()[1:], n]
    shown: list[Candidate] = []
    note_of_shown: dict[int, NoteCandidate] = {}
    per_note = s.per_note if s.per_note > 0 else None
    for i in ranked:
        if len(shown) >= req.limit:
            break
        note = candidate(i)
        members = order[starts[i] : ends[i]].tolist()
        # The best chunk always; more only if a list found them themselves.
        picked = members[:1] + [j for j in members[1:] if b_rank[j] or v_rank[j]]
        for j in picked[:per_note]:
            if len(shown) >= req.limit:
                break
            shown.append(
                Candidate(
                    cids[j],
                    bm25_rank=_rank(b_rank[j]),
                    bm25_score=_score(b_score[j]),
                    vector_rank=_rank(v_rank[j]),
                    vector_score=_score(v_score[j]),
                    score=float(chunk_score[j]),
                )
            )
            note_of_shown[cids[j]] = note
    notes = [candidate(i) for i in ranked] if req.explain else []
    return _Fused(notes, shown, note_of_shown, weights)


_SCAN_THREADS = 2  # concurrent searches beyond this wait for a scan thread
_scan_pool: list[ThreadPoolExecutor] = []
_scan_pool_lock = threading.Lock()


def _scanner() -> ThreadPoolExecutor:
    """The threads that run vector scans beside the keyword lists (made on first use)."""
    if not _scan_pool:
        with _scan_pool_lock:
            if not _scan_pool:
                _scan_pool.append(
                    ThreadPoolExecutor(_SCAN_THREADS, thread_name_prefix="signaldesk-scan")
                )
    return _scan_pool[0]


def note_lists(source: RankSource, req: RankRequest, timings: dict[str, float]) -> NoteLists:
    """The note-level lists of ``req`` from ``source``, timed as ``notes``."""
    t = time.perf_counter()
    top: list[tuple[int, float]] = []
    every: Mapping[int, float] = {}
    if req.match is not None:
        top, every = source.note_bm25(req)
    exact = source.exact_notes(req.key, req.filters)
    timings["notes"] = (time.perf_counter() - t) * 1000
    return top, every, exact


def _timed_top_k(
    matrix: VectorMatrix,
    qvec: npt.NDArray[np.float32],
    depth: int,
    allowed: set[int] | None,
    timings: dict[str, float],
    then: Callable[[], None] | None = None,
) -> list[tuple[int, float]]:
    t = time.perf_counter()
    top = matrix.top_k(qvec, depth, allowed)
    timings["vector"] = (time.perf_counter() - t) * 1000  # the scan's own time, beside the SQL
    if then is not None:
        then()
    return top


class _Once(Generic[T]):
    """A value computed once, by the first thread that runs it; the others wait for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._taken = False
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    def run(self, compute: Callable[[], T]) -> None:
        """Compute the value here, unless another thread has begun to (never raises)."""
        with self._lock:
            if self._taken:
                return
            self._taken = True
        try:
            self._value = compute()
        except BaseException as exc:  # re-raised by result(), in the thread that asks
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> T:
        """The value, once computed (after :meth:`run` was called in some thread)."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return cast("T", self._value)


def _leading_scores(
    top: list[tuple[int, float]], every: Mapping[int, float], depth: int
) -> Iterable[float]:
    """The scores :func:`~weights.decisiveness` reads: its 10 best are the list's first 10.

    ``top`` holds the ``depth`` best of ``every``, so when ``depth`` covers the
    10 that decisiveness compares, the same values come from the short list.
    """
    return (score for _, score in top) if depth >= DECISIVE_DEPTH else every.values()


def _note_order(
    scores: npt.NDArray[np.float64],
    exact: npt.NDArray[np.bool_],
    best_rank: npt.NDArray[np.int64],
    paths: list[str],
) -> list[int]:
    """The notes in :func:`~note_rank.note_sort_key` order: the fused score (high first),
    an exact name match, the best rank in any list, the path; then the order the notes
    were met (a path may repeat across vaults). The numbers are sorted as arrays; the
    paths are compared only where everything else ties, which is rare (sorting every
    path as an array cost more than all the rest of the order)."""
    order = np.lexsort((best_rank, ~exact, -scores))  # stable: ties stay in the order met
    keyed = np.stack([-scores[order], exact[order], best_rank[order]])
    # Position i ties with i + 1; a run of such positions i..j is one tie, i..j + 1.
    tied = np.flatnonzero((keyed[:, 1:] == keyed[:, :-1]).all(axis=0))
    ranked: list[int] = order.tolist()
    for run in np.split(tied, np.flatnonzero(np.diff(tied) != 1) + 1):
        if run.size:
            low, high = int(run[0]), int(run[-1]) + 2
            ranked[low:high] = sorted(ranked[low:high], key=lambda j: (paths[j], j))
    return ranked


def _score_chunks(
    b_rank: npt.NDArray[np.int64],
    b_score: npt.NDArray[np.float64],
    v_rank: npt.NDArray[np.int64],
    v_score: npt.NDArray[np.float64],
    mode: SearchMode,
    s: SearchSettings,
    w: ListWeights,
) -> npt.NDArray[np.float64]:
    """Each chunk's own score, used to choose and order a note's chunks."""
    if mode == "hybrid":
        return fused_array(b_rank, b_score, v_rank, v_score, _chunk_params(s, w))
    if mode == "bm25":
        return np.nan_to_num(b_score, nan=0.0)
    return np.nan_to_num(v_score, nan=-1.0)


_NAN = float("nan")


def _rank(value: Any) -> int | None:
    return int(value) or None


def _score(value: Any) -> float | None:
    return None if math.isnan(value) else float(value)


def _recency(source: RankSource, note_ids: list[int], s: SearchSettings) -> dict[int, float]:
    now = datetime.now(UTC)
    out: dict[int, float] = {}
    for nid, value in source.note_updated(note_ids).items():
        when = _parse_when(value)
        if when is not None:
            age = (now - when).total_seconds() / 86400
            out[nid] = recency_factor(age, s.recency_half_life_days)
    return out


def _parse_when(value: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        try:
            day = date.fromisoformat(value.strip()[:10])
        except ValueError:
            return None
        when = datetime(day.year, day.month, day.day)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
