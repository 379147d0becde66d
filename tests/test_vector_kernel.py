"""The vector scan's mat-vec: one-thread BLAS where OpenBLAS runs in the caller, else
numpy's own loop; either gives a row the same score in a block, a subset and the whole."""

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
    first = matrix.scores(query)  # block by block, no float32 copy kept
    assert not matrix._dense
    second = matrix.scores(query)  # the whole normalised matrix, built now
    assert matrix._dense
    assert np.array_equal(first, second)
    wanted = [int(i) for i in rng.choice(ids, 300, replace=False)]
    subset = matrix.scores_for(query, wanted)
    assert all(subset[cid] == second[cid - 10] for cid in wanted)
    top = matrix.top_k(query, 20)
    assert [cid for cid, _ in top] == [int(ids[i]) for i in np.argsort(-second, kind="stable")[:20]]
