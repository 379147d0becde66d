"""An in-memory copy of the index's vectors for fast exact KNN.

sqlite-vec (the ``chunk_vectors`` vec0 table) stays the store of record, but its
brute-force scan costs about 30 ms per query at 50k x 256 on these machines,
where one numpy matrix-vector product costs about 4 ms. The matrix is read from
the raw blobs of ``chunk_vectors`` and replaced whenever the index's
``generation`` meta value changes (the indexer bumps it after every commit).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from signaldesk.retrieval.schema import VECTOR_TABLE

__all__ = ["VectorMatrix", "load_matrix", "query_blob"]

logger = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]
IdArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True, eq=False)
class VectorMatrix:
    """Row-normalised float32 vectors and the chunk id of each row.

    ``sorted_ids`` and ``order`` (the ids ascending and the row of each) find
    the row of a chunk id by binary search; build one with :meth:`from_arrays`.
    """

    ids: IdArray
    matrix: FloatArray
    generation: str | None
    sorted_ids: IdArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    order: IdArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)

    @classmethod
    def from_arrays(
        cls,
        ids: IdArray,
        matrix: FloatArray,
        generation: str | None,
        *,
        sorted_ids: IdArray | None = None,
        order: IdArray | None = None,
    ) -> VectorMatrix:
        """A matrix over ``ids``; the id lookup is computed unless given (the cache holds it)."""
        if sorted_ids is None or order is None:
            order = np.argsort(ids, kind="stable").astype(np.int64)
            sorted_ids = ids[order]
        return cls(ids, matrix, generation, sorted_ids, order)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def top_k(
        self, query: FloatArray, k: int, allowed: Iterable[int] | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` chunks most similar to ``query`` (cosine), best first.

        :param allowed: when given, only these chunk ids are eligible (filters).
        """
        if len(self) == 0 or k <= 0:
            return []
        scores = self.matrix @ query
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
        values = self.matrix[idx] @ query
        return {cid: float(v) for cid, v in zip(cids, values.tolist(), strict=True)}


def load_matrix(
    conn: Any, dimensions: int, vector_type: str, generation: str | None
) -> VectorMatrix:
    """Read every vector of ``chunk_vectors`` into a :class:`VectorMatrix`.

    :param vector_type: ``"float"`` (float32 blobs) or ``"int8"`` (round(v*127)).
    """
    dtype = np.int8 if vector_type == "int8" else np.float32
    ids: list[int] = []
    blobs: list[bytes] = []
    for rowid, blob in conn.execute(f"SELECT rowid, embedding FROM {VECTOR_TABLE}"):
        ids.append(int(rowid))
        blobs.append(bytes(blob))
    if not ids:
        empty = np.zeros((0, dimensions), dtype=np.float32)
        return VectorMatrix.from_arrays(np.zeros(0, dtype=np.int64), empty, generation)
    raw = np.frombuffer(b"".join(blobs), dtype=dtype).reshape(len(ids), dimensions)
    matrix = raw.astype(np.float32)
    # Quantised rows are only approximately unit length; normalising again
    # makes the dot product an exact cosine of what is stored.
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    matrix /= norms
    id_array = np.asarray(ids, dtype=np.int64)
    logger.debug("loaded %d vectors (%s, %d dims)", len(ids), vector_type, dimensions)
    return VectorMatrix.from_arrays(id_array, matrix, generation)


def query_blob(query: FloatArray, vector_type: str) -> bytes:
    """The query as sqlite-vec expects it for a ``MATCH`` on ``chunk_vectors``."""
    if vector_type == "int8":
        return bytes(np.clip(np.round(query * 127), -127, 127).astype(np.int8).tobytes())
    return bytes(np.asarray(query, dtype=np.float32).tobytes())
