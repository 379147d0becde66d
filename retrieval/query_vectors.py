"""The vector side of a query: is the vector list usable, the query's embedding, the matrix.

A :class:`~retrieval.retriever.Retriever` holds one :class:`QueryVectors`; its threads
share it (the model is called under a lock, the matrix is loaded once per index
generation).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from signaldesk.retrieval.embedder import Embedder, fingerprint_for
from signaldesk.retrieval.errors import ModelError
from signaldesk.retrieval.store import Connection, get_meta
from signaldesk.retrieval.vector_cache import cache_token, load_cached, refresh_cache
from signaldesk.retrieval.vector_matrix import VectorMatrix, faster_scan, load_matrix

__all__ = ["NO_MODEL", "QueryVectors"]

NO_MODEL = "no embedding model: keyword (BM25) search only"
"""What a search without an embedding model says it cannot do."""

logger = logging.getLogger(__name__)


class QueryVectors:
    """The model and the vector matrix a retriever searches with.

    :param embedder: the query model (``None``: keyword search only).
    :param available: sqlite-vec loads and the index has a vector table.
    """

    def __init__(self, embedder: Embedder | None, *, available: bool) -> None:
        self.embedder = embedder
        self.available = available
        self.matrix: VectorMatrix | None = None
        self._matrix_lock = threading.Lock()
        self._embed_lock = threading.Lock()
        self._model_problem: str | None = None
        self._model_checked = False
        # Scan a float32 copy of each matrix (decided by warm_matrix; a one-shot
        # process never decides, and scans the rows as stored).
        self._dense = False

    def new_generation(self, *, available: bool) -> None:
        """A full rebuild was published: the matrix is reloaded on the next search."""
        with self._matrix_lock:
            self.available = available
            self.matrix = None

    def problem(self, conn: Connection) -> str | None:
        """Why the vector list cannot be used right now (``None``: it can)."""
        if self.embedder is None:
            return NO_MODEL
        if not self.available:
            return "vectors unavailable: keyword (BM25) search only"
        if self._model_problem is not None and self._model_checked:
            return self._model_problem
        stored_fp = get_meta(conn, "model_fingerprint")
        try:
            # The index's own fingerprint when it recorded these model files: a
            # one-shot search then never hashes the model.
            fingerprint = fingerprint_for(
                self.embedder, stored_fp, get_meta(conn, "model_source_key")
            )
            dims = self.embedder.dimensions
        except Exception as exc:  # a model that cannot load means BM25 only, not a crash
            logger.warning("embedding model unavailable: %s", exc, exc_info=True)
            self._model_problem = f"embedding model unavailable ({exc}): keyword search only"
            self._model_checked = True
            return self._model_problem
        stored_dims = get_meta(conn, "dimensions")
        if stored_fp is not None and stored_fp != fingerprint:
            return (
                f"the index's vectors come from another model ({get_meta(conn, 'model_name')}); "
                "run `signaldesk index` to re-embed: keyword search only"
            )
        if stored_dims is not None and int(stored_dims) != dims:
            return "the index's vector size differs from the model's: keyword search only"
        return None

    def warm_matrix(self) -> None:
        """Page in the loaded matrix and choose its scan for this machine (a server, once).

        The float32 copy :func:`~vector_matrix.faster_scan` may choose is made again for
        every later generation's matrix.
        """
        matrix = self.matrix
        if matrix is None or matrix.dense is not None:
            return  # nothing loaded, or chosen already
        matrix.warm()
        chosen = faster_scan(matrix)
        with self._matrix_lock:
            self._dense = chosen.dense is not None
            if self.matrix is matrix:
                self.matrix = chosen

    def embed(self, query: str) -> npt.NDArray[np.float32]:
        """The query's unit vector (one model call at a time)."""
        assert self.embedder is not None
        with self._embed_lock:
            try:
                vectors = self.embedder.encode([query])
            except Exception as exc:
                raise ModelError(f"could not embed the query: {exc}") from exc
        vec = np.asarray(vectors, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def current_matrix(self, conn: Connection) -> VectorMatrix | None:
        """The matrix for the snapshot ``conn`` sees, reloaded on a new generation.

        Mapped from the cache beside the index when it belongs to this generation
        (vector_cache.py), else read from sqlite-vec, and then written as the cache
        so that the next process maps it.
        """
        token = cache_token(conn)
        generation = token or get_meta(conn, "generation")
        matrix = self.matrix
        if matrix is not None and matrix.generation == generation:
            return matrix
        with self._matrix_lock:
            matrix = self.matrix
            if matrix is not None and matrix.generation == generation:
                return matrix
            dims = get_meta(conn, "dimensions")
            if dims is None:
                return None
            started = time.perf_counter()
            # The file this snapshot reads (the pool may already open a newer one).
            db_file = Path(conn.execute("PRAGMA database_list").fetchone()[2])
            matrix = load_cached(db_file, token, int(dims))
            source = "mapped from the cache"
            if matrix is None:
                source = "read from sqlite-vec"
                if token:
                    matrix = refresh_cache(conn, db_file)
                if matrix is None:
                    vector_type = get_meta(conn, "vector_type") or "float"
                    matrix = load_matrix(conn, int(dims), vector_type, generation)
            logger.info(
                "vector matrix %s: %d rows in %.0f ms",
                source,
                len(matrix),
                (time.perf_counter() - started) * 1000,
            )
            if self._dense:
                matrix = matrix.with_dense()
            self.matrix = matrix
            return matrix
