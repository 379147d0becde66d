"""The memory-mapped vector cache beside the index and the recorded model fingerprint.

A real vault indexed by the real indexer with the bundled model; the cache file is
damaged in the ways a crash or an old file can leave it, and every search must
still give exactly the matrix's results.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from signaldesk.retrieval import embedder as embedder_module
from signaldesk.retrieval.embedder import (
    Embedder,
    LazyEmbedder,
    bundled_model_path,
    fingerprint_for,
    load_embedder,
    source_key,
)
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.retrieval.static_model import read_folder
from signaldesk.retrieval.store import connect, get_meta, index_db_path
from signaldesk.retrieval.vector_cache import cache_path, cache_token, load_cached
from signaldesk.retrieval.vector_matrix import VectorMatrix, load_matrix
from tests.index_helpers import section, write_note

pytestmark = pytest.mark.anyio

SETTINGS = IndexSettings()
TOPICS = {
    "garden/tomatoes.md": ("Tomatoes", "water the tomato plants deeply and mulch with straw"),
    "kitchen/bread.md": ("Sourdough", "feed the sourdough starter flour and water daily"),
    "ops/keys.md": ("Rotation", "rotate every leaked access key and review the audit log"),
    "ops/pods.md": ("Pods", "kubectl rollout undo returns the deployment to its last version"),
}


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return load_embedder(SETTINGS)


def _vault(root: Path, embedder: Embedder) -> Path:
    vault = root / "vault"
    for rel, (title, words) in TOPICS.items():
        write_note(vault, rel, f"# {title}\n\n" + section(title, words), title=title)
    Indexer(vault, SETTINGS, embedder).run_sync()
    return vault


def _db(vault: Path) -> Path:
    return index_db_path(vault, SETTINGS)


async def _search(vault: Path, embedder: Embedder, query: str) -> list[tuple[str, float]]:
    async with await Retriever.open(vault, SETTINGS, SearchSettings(), embedder) as retriever:
        return [(r.path, r.score) for r in await retriever.search(query, limit=4)]


def _reference(vault: Path) -> tuple[np.ndarray, np.ndarray, str]:
    """The ids, the normalised rows and the commit token read from sqlite-vec."""
    conn = connect(_db(vault), readonly=True)
    try:
        token = cache_token(conn)
        assert token
        matrix = load_matrix(conn, 256, get_meta(conn, "vector_type") or "float", token)
    finally:
        conn.close()
    return matrix.ids, _normalised(matrix), token


def _normalised(matrix: VectorMatrix) -> np.ndarray:
    return matrix.raw.astype(np.float32) / matrix.norms


async def test_the_indexer_writes_the_matrix_exactly(tmp_path: Path, embedder: Embedder) -> None:
    vault = _vault(tmp_path, embedder)
    ids, matrix, token = _reference(vault)
    cached = load_cached(_db(vault), token, 256)
    assert cached is not None
    assert np.array_equal(cached.ids, ids) and np.array_equal(_normalised(cached), matrix)
    some = [int(ids[2]), int(ids[0]), 10**9]
    assert cached.scores_for(matrix[1], some).keys() == {int(ids[2]), int(ids[0])}


async def test_a_change_to_the_vault_rewrites_the_cache(tmp_path: Path, embedder: Embedder) -> None:
    vault = _vault(tmp_path, embedder)
    _, _, before = _reference(vault)
    write_note(vault, "new/compost.md", "# Compost\n\n" + section("Compost", "turn the heap"))
    Indexer(vault, SETTINGS, embedder).run_sync()
    _, matrix, after = _reference(vault)
    assert after != before
    assert load_cached(_db(vault), before, 256) is None
    cached = load_cached(_db(vault), after, 256)
    assert cached is not None and np.array_equal(_normalised(cached), matrix)
    assert (await _search(vault, embedder, "compost heap"))[0][0] == "new/compost.md"


@pytest.mark.parametrize(
    "damage", ["truncated", "trailer", "stale", "old-writer", "garbage", "missing"]
)
async def test_a_bad_cache_falls_back_to_sqlite_vec(
    tmp_path: Path, embedder: Embedder, damage: str
) -> None:
    vault = _vault(tmp_path, embedder)
    good = await _search(vault, embedder, "leaked key rotation")
    path = cache_path(_db(vault))
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "trailer":
        path.write_bytes(data[:-4] + b"XXXX")
    elif damage == "stale":
        # A cache from another generation (the file left from before a rebuild).
        conn = sqlite3.connect(_db(vault))
        conn.execute("UPDATE meta SET value = 'other' WHERE key = 'generation_id'")
        conn.commit()
        conn.close()
    elif damage == "old-writer":
        # A commit by a signaldesk from before the cache bumps only the counter.
        conn = sqlite3.connect(_db(vault))
        conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
        conn.commit()
        conn.close()
    elif damage == "garbage":
        path.write_bytes(os.urandom(len(data)))
    else:
        path.unlink()
    _, _, token = _reference(vault)
    assert load_cached(_db(vault), token, 256) is None
    assert await _search(vault, embedder, "leaked key rotation") == good
    # The search read sqlite-vec and wrote a cache the next process can map.
    repaired = load_cached(_db(vault), token, 256)
    assert repaired is not None
    assert await _search(vault, embedder, "leaked key rotation") == good


async def test_the_index_records_the_model_files(tmp_path: Path, embedder: Embedder) -> None:
    vault = _vault(tmp_path, embedder)
    conn = connect(_db(vault), readonly=True)
    stored_fp = get_meta(conn, "model_fingerprint")
    stored_key = get_meta(conn, "model_source_key")
    conn.close()
    assert stored_key == source_key(embedder) and stored_key is not None
    # A new process's embedder trusts the recorded fingerprint without hashing the model.
    fresh = LazyEmbedder(SETTINGS)
    assert fingerprint_for(fresh, stored_fp, stored_key) == stored_fp
    loaded = fresh._embedder
    assert loaded is not None and loaded._fingerprint is None  # type: ignore[attr-defined]
    # A key that does not match means hashing, and the true fingerprint.
    assert fingerprint_for(fresh, "not-it", "other-key") == embedder.fingerprint


def test_model_files_that_change_change_the_key(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (folder / name).write_bytes((bundled_model_path() / name).read_bytes())
    first = embedder_module._source_key(folder, "m", 256)
    assert first == embedder_module._source_key(folder, "m", 256)
    stat = (folder / "model.safetensors").stat()
    os.utime(folder / "model.safetensors", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert embedder_module._source_key(folder, "m", 256) != first
    (folder / "tokenizer.json").unlink()
    assert embedder_module._source_key(folder, "m", 256) is None


def test_the_plain_loader_builds_the_same_model() -> None:
    from model2vec import StaticModel

    folder = bundled_model_path()
    plain = read_folder(folder)
    reference = StaticModel.from_pretrained(folder, force_download=False)
    assert plain is not None
    assert embedder_module._fingerprint(plain, "x") == embedder_module._fingerprint(reference, "x")
    texts = ["git rebase interactive", "日本語の文章", "word " * 3000, ""]
    assert np.array_equal(plain.encode(texts), reference.encode(texts, normalize=False))


async def test_a_rebuild_writes_the_cache_of_its_new_generation(
    tmp_path: Path, embedder: Embedder
) -> None:
    vault = _vault(tmp_path, embedder)
    first = _db(vault)
    Indexer(vault, SETTINGS, embedder).run_sync(full=True)
    live = _db(vault)
    assert live != first  # a full rebuild publishes a new generation file
    _, matrix, token = _reference(vault)
    cached = load_cached(live, token, 256)
    assert cached is not None and np.array_equal(_normalised(cached), matrix)
    # The old generation's cache went with it.
    assert sorted(p.name for p in live.parent.glob("*.vectors")) == [cache_path(live).name]
    assert (await _search(vault, embedder, "sourdough starter"))[0][0] == "kitchen/bread.md"
