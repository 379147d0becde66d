"""A memory-mapped copy of the vector matrix beside the index, for fast cold starts.

Reading 47k vectors out of sqlite-vec and normalising them takes 0.1-1.6 s, which
every new process paid on its first query (a one-shot `signaldesk search`, a
hook). This file holds exactly what :func:`~vector_matrix.load_matrix` builds
(the stored rows in the same order, as int8 when the index quantises, their
norms and the id lookup), so mapping it gives the same scores in a few
milliseconds, costs ~1.0 byte per dimension per chunk, and its pages are shared
between processes.

sqlite-vec stays the store of record. The file (``<index.db>.vectors``) is only
used when its header names the index's current ``generation_id`` (a fresh random
value the writer records with every commit) and ``generation`` (so that a commit
by an older signaldesk, which bumps only the counter, also retires the file),
its size is what the header says and
its trailer repeats the header's token; anything else (an older index, a file
left from before a rebuild, a torn or truncated write) is ignored and the
matrix is read from sqlite-vec as before. Writes go to a temporary file that is
renamed over the old one, so a reader maps either the old file or the new one.

Layout: ``MAGIC``, a little-endian u32 header length, the JSON header, zero
padding to a 64-byte boundary, the chunk ids (int64), the chunk ids in
ascending order (int64) with their row numbers (int64), the row norms
(float32), the rows as stored (int8 or float32, row-major), then the token
again as the trailer.
"""

from __future__ import annotations

import contextlib
import json
import logging
import mmap
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

from signaldesk.retrieval.store import Connection, get_meta
from signaldesk.retrieval.vector_matrix import VectorMatrix, load_matrix

__all__ = ["cache_path", "cache_token", "load_cached", "refresh_cache", "write_cache"]

logger = logging.getLogger(__name__)

MAGIC = b"SDVECS01"
_ALIGN = 64


def cache_path(db_path: Path) -> Path:
    """Where the matrix cache of the index at ``db_path`` lives."""
    return db_path.with_name(db_path.name + ".vectors")


def cache_token(conn: Connection) -> str | None:
    """What the cache of the snapshot ``conn`` sees must carry (``None``: no cache possible)."""
    generation_id = get_meta(conn, "generation_id")
    if not generation_id:
        return None
    return f"{generation_id}:{get_meta(conn, 'generation') or 0}"


def _pad(n: int) -> int:
    return (-n) % _ALIGN


_DTYPES = {"int8": np.int8, "float32": np.float32}


def _header(token: str, rows: int, dims: int, dtype: str) -> bytes:
    header = json.dumps(
        {"token": token, "rows": rows, "dims": dims, "dtype": dtype}, sort_keys=True
    ).encode()
    return MAGIC + struct.pack("<I", len(header)) + header


def write_cache(db_path: Path, matrix: VectorMatrix, token: str) -> None:
    """Write ``matrix`` as the cache for the index generation ``token`` (atomically)."""
    rows, dims = matrix.raw.shape
    dtype = np.dtype(matrix.raw.dtype).name
    if dtype not in _DTYPES:
        raise ValueError(f"unexpected vector dtype {dtype}")
    head = _header(token, int(rows), int(dims), dtype)
    target = cache_path(db_path)
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    try:
        with tmp.open("wb") as handle:
            handle.write(head + b"\0" * _pad(len(head)))
            handle.write(np.ascontiguousarray(matrix.ids, dtype=np.int64).tobytes())
            handle.write(np.ascontiguousarray(matrix.sorted_ids, dtype=np.int64).tobytes())
            handle.write(np.ascontiguousarray(matrix.order, dtype=np.int64).tobytes())
            handle.write(np.ascontiguousarray(matrix.norms, dtype=np.float32).tobytes())
            handle.write(np.ascontiguousarray(matrix.raw).tobytes())
            handle.write(token.encode())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def load_cached(db_path: Path, token: str | None, dims: int) -> VectorMatrix | None:
    """The cached matrix for generation ``token``, memory-mapped; ``None`` if it does not match."""
    if not token:
        return None
    path = cache_path(db_path)
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < len(MAGIC) + 4:
                return None
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        return _parse(mapped, size, token, dims)
    except (ValueError, KeyError, TypeError, struct.error) as exc:
        logger.debug("vector cache %s unusable: %s", path, exc)
        return None


def _parse(mapped: mmap.mmap, size: int, token: str, dims: int) -> VectorMatrix | None:
    if mapped[: len(MAGIC)] != MAGIC:
        return None
    (length,) = struct.unpack("<I", mapped[len(MAGIC) : len(MAGIC) + 4])
    start = len(MAGIC) + 4
    header: dict[str, Any] = json.loads(mapped[start : start + length])
    dtype = _DTYPES.get(str(header.get("dtype")))
    if header.get("token") != token or dtype is None:
        return None
    rows, width = int(header["rows"]), int(header["dims"])
    if width != dims or rows < 0:
        return None
    offset = start + length + _pad(start + length)
    trailer = token.encode()
    itemsize = np.dtype(dtype).itemsize
    if size != offset + rows * (8 * 3 + 4 + itemsize * width) + len(trailer):
        return None  # truncated or torn
    if mapped[size - len(trailer) :] != trailer:
        return None
    ids = np.frombuffer(mapped, dtype=np.int64, count=rows, offset=offset)
    sorted_ids = np.frombuffer(mapped, dtype=np.int64, count=rows, offset=offset + 8 * rows)
    order = np.frombuffer(mapped, dtype=np.int64, count=rows, offset=offset + 16 * rows)
    norms = np.frombuffer(mapped, dtype=np.float32, count=rows, offset=offset + 24 * rows)
    raw = np.frombuffer(mapped, dtype=dtype, count=rows * width, offset=offset + 28 * rows).reshape(
        rows, width
    )
    return VectorMatrix.from_arrays(
        ids, raw, token, norms=norms.reshape(rows, 1), sorted_ids=sorted_ids, order=order
    )


def refresh_cache(conn: Connection, db_path: Path) -> VectorMatrix | None:
    """Read the matrix from sqlite-vec and write it as the cache of the current generation.

    Best effort: a cache that cannot be written (read-only folder, full disk) is
    logged at debug level; searches then read sqlite-vec as before.
    """
    token = cache_token(conn)
    dims = get_meta(conn, "dimensions")
    if not token or dims is None:
        return None
    vector_type = get_meta(conn, "vector_type") or "float"
    matrix = load_matrix(conn, int(dims), vector_type, token)
    try:
        write_cache(db_path, matrix, token)
    except OSError as exc:
        logger.debug("vector cache %s not written: %s", cache_path(db_path), exc)
    return matrix
