"""An in-memory copy of the index's vectors for fast exact KNN.

sqlite-vec (the ``chunk_vectors`` vec0 table) stays the store of record, but its
brute-force scan costs about 30 ms per query at 50k x 256 on these machines,
where one numpy matrix-vector product costs 2-4 ms. The matrix is read from
the raw blobs of ``chunk_vectors`` (or mapped from the cache beside the index,
vector_cache.py) and replaced whenever the index's generation changes.

The rows are kept as stored (int8 or float32, mapped from the cache or read) with
each row's norm, and a row's score is ``dot(float32(row), query) / norm``: by default no
float32 copy of the matrix is made. Trigger: the normalised float32 copy of an int8 index
(48 MB at 47k x 256) does not fit this machine's 32 MB L3 cache, so every scan streamed
it from memory: 5.8 ms a scan with one BLAS thread, 6.4 ms inside a hybrid search
(issue 15). Why: the int8 rows are 12 MB and stay cached; converting a block of them
into a small float32 buffer that lives in L2 costs less than reading 4x the bytes.
Outcome: 2.4-2.7 ms a scan, and 48 MB less memory in a server.

A long-lived process (a server, at warm-up) may instead keep a float32 copy of the rows
(:meth:`VectorMatrix.with_dense`) when that scans faster here. Trigger: on a
machine whose last-level cache holds the 48 MB copy (480 MB reported on one), the copy
scanned in 1.7 ms against 2.9 ms for the int8 blocks, whose conversion is then the whole
cost; on the 32 MB machine above it streamed at 5.8 ms. Why measured, not guessed: cache
sizes as reported by virtual machines do not say what the scan sees. Outcome: each server
times both once (:func:`faster_scan`) and keeps the faster (there, the wait for the scan
inside a hybrid query fell from 0.8-1.1 to 0.0-0.4 ms, its p50 from ~6.6 to ~5.9 ms); the
copy holds the same float32 values in the same blocks, so every score is the same to the
last bit.

The product is BLAS's mat-vec when OpenBLAS runs one thread, the caller's (what
``signaldesk/__init__.py`` asks for before numpy loads), else numpy's own
single-threaded ``einsum``. Why not BLAS with its default thread per core: on a
loaded 2-core machine its spinning threads take the core the SQLite lists need
(hybrid p95 ~53 ms against ~27 ms with one thread, issue 15). Every product runs on a
block whose row count is a multiple of BLAS's row groups (:func:`_dot_block`), so a block,
a gathered subset and the whole matrix give the same float32 score for a row
(tests/test_vector_kernel.py).
"""

from __future__ import annotations

import logging
import os
import statistics
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from signaldesk.retrieval.schema import VECTOR_TABLE
from signaldesk.retrieval.store import Connection

__all__ = ["VectorMatrix", "faster_scan", "load_matrix", "query_blob", "row_norms"]

logger = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]
IdArray = npt.NDArray[np.int64]

# Rows converted to float32 at a time: 2 MB at 256 dims, the size of one core's L2
# (2048 measured 2.4 ms a scan at 47k rows, 512 2.9 ms, 8192 2.4-3.0 ms).
_BLOCK_ROWS = 2048
_GROUP = 16  # a multiple of every BLAS mat-vec row group (see _dot_block)
# The largest float32 copy a server keeps (about 260k chunks at 256 dimensions): past it the
# memory is worth more than a faster scan.
_DENSE_LIMIT = 256 * 1024 * 1024
# The copy is kept only if it scans this much faster (timing noise must not flip it).
_DENSE_GAIN = 0.85
# Each scanning thread converts into a buffer of its own, made once (a new 2 MB
# array every scan would be mapped and faulted in afresh).
_buffers = threading.local()


# What OpenBLAS read when numpy loaded (nothing in signaldesk changes it later).
BLAS_IN_CALLER = os.environ.get("OPENBLAS_NUM_THREADS") == "1"


def _dot_rows(rows: FloatArray, query: FloatArray) -> FloatArray:
    out: FloatArray = rows @ query if BLAS_IN_CALLER else np.einsum("ij,j->i", rows, query)
    return out


def row_norms(raw: npt.NDArray[Any]) -> FloatArray:
    """Each stored row's L2 norm as float32, 1 for an all-zero row (the divisor of a row).

    Block by block (each row's norm is its own reduction, so the values are those
    of one call over the whole matrix), without a float32 copy of every row.
    """
    norms: FloatArray = np.empty((raw.shape[0], 1), dtype=np.float32)
    for start in range(0, raw.shape[0], _BLOCK_ROWS):
        block = raw[start : start + _BLOCK_ROWS].astype(np.float32)
        norms[start : start + _BLOCK_ROWS] = np.linalg.norm(block, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return norms


def _whole_groups(rows: int) -> int:
    """``rows`` rounded up to a multiple of ``_GROUP`` (the row count every product runs on)."""
    return -(-rows // _GROUP) * _GROUP


def _dot_block(rows: npt.NDArray[Any], query: FloatArray) -> FloatArray:
    """``rows @ query`` for at most ``_BLOCK_ROWS`` stored rows, computed in this thread's
    float32 buffer with the row count rounded up to a multiple of ``_GROUP`` (zero rows).

    Why the rounding: BLAS's mat-vec computes rows in groups (of 4 or 8) and the rows
    left over by another loop, whose sums can differ in the last bit; with every real row
    in a full group, a row scores the same in a block, in a gathered subset of two rows
    and in the whole matrix.
    """
    n, dims = rows.shape
    buffer: FloatArray | None = getattr(_buffers, "rows", None)
    if buffer is None or buffer.shape[1] != dims:
        buffer = np.empty((_BLOCK_ROWS, dims), dtype=np.float32)
        _buffers.rows = buffer
    padded = min(_whole_groups(n), _BLOCK_ROWS)
    block = buffer[:padded]
    block[:n] = rows
    block[n:] = 0.0
    return _dot_rows(block, query)[:n]


@dataclass(frozen=True, slots=True, eq=False)
class VectorMatrix:
    """The stored vectors (``raw``: int8 or float32 rows), their norms and chunk ids.

    ``sorted_ids`` and ``order`` (the ids ascending and the row of each) find
    the row of a chunk id by binary search. Build one with :meth:`from_arrays`.
    """

    ids: IdArray
    raw: npt.NDArray[Any]
    norms: FloatArray
    generation: str | None
    sorted_ids: IdArray
    order: IdArray
    # The rows as float32, zero rows up to a multiple of _GROUP (:meth:`with_dense`).
    dense: FloatArray | None = None

    @classmethod
    def from_arrays(
        cls,
        ids: IdArray,
        raw: npt.NDArray[Any],
        generation: str | None,
        *,
        norms: FloatArray | None = None,
        sorted_ids: IdArray | None = None,
        order: IdArray | None = None,
    ) -> VectorMatrix:
        """A matrix over ``ids``; norms and the id lookup are computed unless given."""
        if norms is None:
            norms = row_norms(raw)
        if sorted_ids is None or order is None:
            order = np.argsort(ids, kind="stable").astype(np.int64)
            sorted_ids = ids[order]
        return cls(ids, raw, norms, generation, sorted_ids, order)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def warm(self) -> None:
        """Read every row once: a server pages in the mapped cache before its first
        request rather than during it."""
        self.scores(np.zeros(self.raw.shape[1], dtype=np.float32))

    def with_dense(self) -> VectorMatrix:
        """This matrix with a float32 copy of its rows to scan (the same scores); itself
        when it has one, its rows are float32 already or the copy would pass the limit."""
        rows, dims = self.raw.shape
        too_large = rows * dims * 4 > _DENSE_LIMIT
        if self.dense is not None or self.raw.dtype == np.float32 or rows == 0 or too_large:
            return self
        dense: FloatArray = np.zeros((_whole_groups(rows), dims), dtype=np.float32)
        for start in range(0, rows, _BLOCK_ROWS):
            stop = min(start + _BLOCK_ROWS, rows)
            dense[start:stop] = self.raw[start:stop]
        return replace(self, dense=dense)

    def scores(self, query: FloatArray) -> FloatArray:
        """The cosine of ``query`` with every row."""
        query = np.asarray(query, dtype=np.float32)  # every path multiplies in float32
        out = np.empty(len(self), dtype=np.float32)
        dense = self.dense
        for start in range(0, len(self), _BLOCK_ROWS):
            stop = min(start + _BLOCK_ROWS, len(self))
            if dense is None:
                out[start:stop] = _dot_block(self.raw[start:stop], query)
            else:
                # The rows _dot_block would put in its buffer, zero padding included.
                padded = start + _whole_groups(stop - start)
                out[start:stop] = _dot_rows(dense[start:padded], query)[: stop - start]
        out /= self.norms[:, 0]
        return out

    def top_k(
        self, query: FloatArray, k: int, allowed: Iterable[int] | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` chunks most similar to ``query`` (cosine), best first; equal
        scores by ascending chunk id, so a query is repeatable.

        :param allowed: when given, only these chunk ids are eligible (filters).
        """
        if len(self) == 0 or k <= 0:
            return []
        scores = self.scores(query)
        if allowed is not None:
            mask = np.isin(self.ids, np.fromiter(allowed, dtype=np.int64))
            scores = np.where(mask, scores, np.float32(-np.inf))
            k = min(k, int(mask.sum()))
            if k == 0:
                return []
        rows = _best_rows(scores, min(k, len(self)))
        # By score, then by chunk id: the first k of the whole list sorted that way.
        ranked = rows[np.lexsort((self.ids[rows], -scores[rows]))][:k]
        return list(zip(self.ids[ranked].tolist(), scores[ranked].tolist(), strict=True))

    def rows_of(self, chunk_ids: Iterable[int]) -> tuple[list[int], IdArray]:
        """The listed chunk ids that have a vector, and their rows (same order)."""
        wanted = np.fromiter(chunk_ids, dtype=np.int64)
        if wanted.size == 0 or len(self) == 0:
            return [], np.zeros(0, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.sorted_ids, wanted), len(self) - 1)
        found = self.sorted_ids[at] == wanted
        return wanted[found].tolist(), self.order[at[found]]

    def scores_for(self, query: FloatArray, chunk_ids: Iterable[int]) -> dict[int, float]:
        """Cosine of ``query`` with each listed chunk that has a vector."""
        cids, idx = self.rows_of(chunk_ids)
        if not cids:
            return {}
        query = np.asarray(query, dtype=np.float32)
        values = np.empty(len(cids), dtype=np.float32)
        for start in range(0, len(cids), _BLOCK_ROWS):
            rows = idx[start : start + _BLOCK_ROWS]
            values[start : start + len(rows)] = _dot_block(self.raw[rows], query)
        values /= self.norms[idx, 0]
        return dict(zip(cids, values.tolist(), strict=True))


def faster_scan(matrix: VectorMatrix, runs: int = 7) -> VectorMatrix:
    """``matrix``, or ``matrix`` with a float32 copy of its rows if scanning the copy beats
    the int8 blocks on this machine (timed in turn, medians; int8 rows without a copy)."""
    dense = matrix.with_dense()
    if dense is matrix:
        return matrix
    query = np.zeros(matrix.raw.shape[1], dtype=np.float32)
    query[0] = 1.0
    times: dict[bool, list[float]] = {False: [], True: []}
    dense.scores(query)  # the new copy's pages are faulted in, not timed
    for _ in range(runs):
        for copy, candidate in ((False, matrix), (True, dense)):
            started = time.perf_counter()
            candidate.scores(query)
            times[copy].append(time.perf_counter() - started)
    faster = statistics.median(times[True]) < _DENSE_GAIN * statistics.median(times[False])
    logger.debug(
        "vector scan: int8 blocks %.2f ms, float32 copy %.2f ms: %s",
        statistics.median(times[False]) * 1000,
        statistics.median(times[True]) * 1000,
        "keeping the copy" if faster else "scanning the int8 rows",
    )
    return dense if faster else matrix


def _best_rows(scores: FloatArray, k: int) -> IdArray:
    """The rows of every score at least the ``k``-th largest (ties at it included).

    Trigger: ``argpartition`` over all 47k scores took 0.8 ms, a third of the scan.
    Why: the ``k``-th largest of a sample is never above the ``k``-th largest of the
    whole, so the rows at or above it hold the whole top ``k``. Outcome: a partition
    of ~1k sampled scores, one comparison over all, and a partition of the few
    thousand rows left.
    """
    n = len(scores)
    if k >= n:
        return np.arange(n)
    # Every stride-th score: at least 8k of them (so at least k), about 1,000 at 47k.
    sample = scores[:: max(1, n // max(8 * k, 1024))]
    floor = np.partition(sample, len(sample) - k)[len(sample) - k]
    rows: IdArray = np.flatnonzero(scores >= floor)
    kept = scores[rows]
    kth = np.partition(kept, len(kept) - k)[len(kept) - k]
    best: IdArray = rows[kept >= kth]
    return best


def load_matrix(
    conn: Connection, dimensions: int, vector_type: str, generation: str | None
) -> VectorMatrix:
    """Read every vector of ``chunk_vectors`` into a :class:`VectorMatrix`.

    :param vector_type: ``"float"`` (float32 blobs) or ``"int8"`` (round(v*127)).
    """
    dtype = np.dtype(np.int8 if vector_type == "int8" else np.float32)
    width = dimensions * dtype.itemsize
    ids: list[int] = []
    # The rows go straight into one buffer (no list of 47k blobs beside a joined
    # copy): the indexer rebuilds the cache with this after every commit.
    buffer = bytearray()
    for rowid, blob in conn.execute(f"SELECT rowid, embedding FROM {VECTOR_TABLE}"):
        if len(blob) != width:
            raise ValueError(f"vector {rowid} has {len(blob)} bytes, expected {width}")
        ids.append(int(rowid))
        buffer += blob
    if not ids:
        empty = np.zeros((0, dimensions), dtype=dtype)
        return VectorMatrix.from_arrays(np.zeros(0, dtype=np.int64), empty, generation)
    # Quantised rows are only approximately unit length; dividing by each row's
    # norm makes the dot product an exact cosine of what is stored.
    raw = np.frombuffer(buffer, dtype=dtype).reshape(len(ids), dimensions)
    id_array = np.asarray(ids, dtype=np.int64)
    logger.debug("loaded %d vectors (%s, %d dims)", len(ids), vector_type, dimensions)
    return VectorMatrix.from_arrays(id_array, raw, generation)


def query_blob(query: FloatArray, vector_type: str) -> bytes:
    """The query as sqlite-vec expects it for a ``MATCH`` on ``chunk_vectors``."""
    if vector_type == "int8":
        return bytes(np.clip(np.round(query * 127), -127, 127).astype(np.int8).tobytes())
    return bytes(np.asarray(query, dtype=np.float32).tobytes())
