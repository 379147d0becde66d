"""An in-memory copy of the index's vectors for fast exact KNN.

sqlite-vec (the ``chunk_vectors`` vec0 table) stays the store of record, but its
brute-force scan costs about 30 ms per query at 50k x 256 on these machines,
where one numpy matrix-vector product costs 2-4 ms. The matrix is read from
the raw blobs of ``chunk_vectors`` (or mapped from the cache beside the index,
vector_cache.py) and replaced whenever the index's generation changes.

The rows are kept as stored (int8 or float32) with each row's norm. A process
that asks once (a one-shot CLI search) scores them block by block, converting
and normalising each block on the fly, so it never holds the float32 matrix
(4x the int8 size); from the second full scan on, the normalised float32 matrix
is built once and kept. Both give bit-for-bit the same scores: the same float32
rows (``raw / norm``) and the same per-row dot product (below).

The product is BLAS's mat-vec when OpenBLAS runs one thread, the caller's (what
``signaldesk/__init__.py`` asks for before numpy loads), else numpy's own
single-threaded ``einsum``. Why not BLAS with its default thread per core: on a
loaded 2-core machine its spinning threads take the core the SQLite lists need
(hybrid p95 ~53 ms against ~27 ms with one thread, issue 15). Why BLAS when it is one
thread: at 47k x 256 it measured 1.9 / 2.1 ms p50 / p95 against einsum's 2.2 / 6.2 ms,
and inside a hybrid search, beside the SQL, 4.8 ms against 7.0 ms (``einsum`` was the
faster on the machine that chose it first, 2.1 against 4.5 ms: CPUs differ). Either
kernel computes each row on its own, so a block, a gathered subset and the whole
matrix give the same float32 score for a row (tests/test_vector_kernel.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from signaldesk.retrieval.schema import VECTOR_TABLE
from signaldesk.retrieval.store import Connection

__all__ = ["VectorMatrix", "load_matrix", "query_blob", "row_norms"]

logger = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]
IdArray = npt.NDArray[np.int64]

_BLOCK_ROWS = 4096  # 4 MB of float32 at 256 dims: a one-shot scan's working set


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
    # The normalised float32 matrix once built, and how many full scans were asked for.
    _dense: list[FloatArray] = field(default_factory=list, repr=False)
    _scans: list[int] = field(default_factory=lambda: [0], repr=False)

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

    @property
    def matrix(self) -> FloatArray:
        """The row-normalised float32 matrix (built once, on first use)."""
        if not self._dense:
            dense = self.raw.astype(np.float32)
            dense /= self.norms
            self._dense.append(dense)
        return self._dense[0]

    def _rows(self, start: int, stop: int) -> FloatArray:
        if self._dense:
            return self._dense[0][start:stop]
        block: FloatArray = self.raw[start:stop].astype(np.float32)
        block /= self.norms[start:stop]
        return block

    def scores(self, query: FloatArray) -> FloatArray:
        """The cosine of ``query`` with every row."""
        self._scans[0] += 1
        if self._dense or self._scans[0] > 1:
            return _dot_rows(self.matrix, query)
        out = np.empty(len(self), dtype=np.float32)
        for start in range(0, len(self), _BLOCK_ROWS):
            stop = min(start + _BLOCK_ROWS, len(self))
            out[start:stop] = _dot_rows(self._rows(start, stop), query)
        return out

    def top_k(
        self, query: FloatArray, k: int, allowed: Iterable[int] | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` chunks most similar to ``query`` (cosine), best first.

        :param allowed: when given, only these chunk ids are eligible (filters).
        """
        if len(self) == 0 or k <= 0:
            return []
        scores = self.scores(query)
        if allowed is not None:
            mask = np.isin(self.ids, np.fromiter(allowed, dtype=np.int64))
            scores = np.where(mask, scores, -np.inf)
            eligible = int(mask.sum())
            k = min(k, eligible)
            if k == 0:
                return []
        k = min(k, len(self))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(self) else np.arange(len(self))
        # Stable order for equal scores: by chunk id, so a query is repeatable.
        order = sorted(top.tolist(), key=lambda i: (-float(scores[i]), int(self.ids[i])))
        return [(int(self.ids[i]), float(scores[i])) for i in order]

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
        if self._dense:
            rows = self._dense[0][idx]
        else:
            rows = self.raw[idx].astype(np.float32)
            rows /= self.norms[idx]
        values = _dot_rows(rows, query)
        return {cid: float(v) for cid, v in zip(cids, values.tolist(), strict=True)}


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
