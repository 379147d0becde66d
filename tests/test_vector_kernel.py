"""The vector scan's mat-vec: one-thread BLAS where OpenBLAS runs in the caller, else
numpy's own loop; either gives a row the same score in a block, a subset and the whole,
and the top k is the head of the whole list."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from signaldesk.retrieval import vector_matrix
from signaldesk.retrieval.vector_matrix import VectorMatrix

_PROBE = (
    "import signaldesk.retrieval.vector_matrix as v, os; "
    "print(v.BLAS_IN_CALLER, os.environ.get('OPENBLAS_NUM_THREADS'))"
)


def _probe(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_signaldesk_asks_for_one_blas_thread_only_before_numpy_loads() -> None:
    # Unset and numpy not loaded: signaldesk sets it, and the scan uses BLAS.
    assert _probe(_PROBE) == "True 1"
    # numpy loaded first has started a thread per core: the variable is left unset
    # (it would no longer say what OpenBLAS runs with) and the scan is numpy's loop.
    assert _probe("import numpy; " + _PROBE) == "False None"
    # The user's own value is kept.
    assert _probe(_PROBE, OPENBLAS_NUM_THREADS="2") == "False 2"


@pytest.mark.parametrize("blas", [True, False])
def test_a_row_scores_the_same_in_a_block_a_subset_and_the_whole(
    monkeypatch: pytest.MonkeyPatch, blas: bool
) -> None:
    monkeypatch.setattr(vector_matrix, "BLAS_IN_CALLER", blas)
    rng = np.random.default_rng(7)
    rows = 9000  # three of the one-shot scan's blocks
    raw = rng.integers(-127, 128, size=(rows, 64), dtype=np.int8)
    ids = np.arange(10, 10 + rows, dtype=np.int64)
    query = rng.standard_normal(64).astype(np.float32)
    query /= np.linalg.norm(query)
    matrix = VectorMatrix.from_arrays(ids, raw, "g1")
    whole = matrix.scores(query)  # block by block, into one small buffer
    # The cosine of the stored row, in float32 (the blocks change nothing but speed).
    expected = (raw.astype(np.float64) @ query) / np.linalg.norm(raw.astype(np.float64), axis=1)
    assert np.allclose(whole, expected, atol=1e-6)
    assert np.array_equal(matrix.scores(query), whole)
    wanted = [int(i) for i in rng.choice(ids, 300, replace=False)]
    subset = matrix.scores_for(query, wanted)
    assert all(subset[cid] == whole[cid - 10] for cid in wanted)
    top = matrix.top_k(query, 20)
    assert [cid for cid, _ in top] == [int(ids[i]) for i in np.argsort(-whole, kind="stable")[:20]]
    assert [score for _, score in top] == [float(whole[cid - 10]) for cid, _ in top]
    # A server's float32 copy of the rows scans to the same bits, and ranks the same.
    dense = matrix.with_dense()
    assert dense.dense is not None and dense.dense.shape == (9008, 64)
    assert np.array_equal(dense.scores(query), whole)
    assert dense.top_k(query, 20) == top
    assert dense.with_dense() is dense
    monkeypatch.setattr(vector_matrix, "_DENSE_LIMIT", 9000 * 64 * 4 - 1)
    assert matrix.with_dense() is matrix  # past the limit the rows are scanned as stored


@pytest.mark.parametrize("k", [1, 5, 100, 2999, 3000, 4000])
def test_the_top_k_is_the_head_of_the_whole_list_sorted_ties_by_id(k: int) -> None:
    """The sampled floor of the top k never loses a row, and equal scores (many here:
    integer rows on four values) come out by ascending chunk id, as a full sort gives."""
    rng = np.random.default_rng(11)
    raw = rng.integers(-2, 2, size=(3000, 8), dtype=np.int8)
    raw[raw.sum(axis=1) == 0, 0] = 1
    ids = rng.permutation(np.arange(100, 3100, dtype=np.int64))
    query = np.ones(8, dtype=np.float32) / np.sqrt(8)
    matrix = VectorMatrix.from_arrays(ids, raw, "g1")
    scores = matrix.scores(query)
    everything = sorted(
        zip(ids.tolist(), scores.tolist(), strict=True), key=lambda r: (-r[1], r[0])
    )
    assert matrix.top_k(query, k) == everything[:k]
    allowed = set(ids[::7].tolist())
    only = [row for row in everything if row[0] in allowed]
    assert matrix.top_k(query, k, allowed) == only[:k]


_SAME_EVERYWHERE = """
import signaldesk.retrieval.vector_matrix as v, numpy as np
rng = np.random.default_rng(3)
raw = rng.integers(-127, 128, size=(5003, 40), dtype=np.int8)
matrix = v.VectorMatrix.from_arrays(np.arange(5003, dtype=np.int64), raw, "g1")
query = rng.standard_normal(40)  # float64, not unit length
whole = matrix.scores(query)
assert whole.dtype == np.float32
assert np.array_equal(whole, matrix.scores(query.astype(np.float32)))
for wanted in ([7], [7, 4999], [5002, 1, 2, 3, 4], list(range(0, 5003, 7))):
    subset = matrix.scores_for(query, wanted)
    assert subset == {i: float(whole[i]) for i in wanted}, wanted
floats = v.VectorMatrix.from_arrays(matrix.ids, raw.astype(np.float32), "g2")
assert np.array_equal(floats.scores(query), whole)
assert np.array_equal(matrix.with_dense().scores(query), whole)
chosen = v.faster_scan(matrix)  # either scan, whichever is faster here: the same scores
assert chosen is matrix or np.array_equal(chosen.scores(query), whole)
assert v.faster_scan(floats) is floats  # float32 rows have nothing to copy
print(v.BLAS_IN_CALLER)
"""


@pytest.mark.parametrize("blas", ["1", None])
def test_a_row_scores_the_same_in_any_subset_with_the_kernel_a_process_runs(
    blas: str | None,
) -> None:
    """In a new process, as the CLI and the server run: one-thread BLAS (signaldesk's
    own setting) or numpy's loop (numpy loaded first). A gathered subset of one, two or
    five rows, the whole matrix, float32 rows, a float32 copy of int8 rows and a float64
    query all agree to the bit."""
    code = _SAME_EVERYWHERE if blas else "import numpy; " + _SAME_EVERYWHERE
    assert _probe(code) == ("True" if blas else "False")
