"""The transformer tier: the shipped ONNX export, its vectors, its checks, no silent fallback."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from signaldesk.retrieval.embedder import BUNDLED_MODEL_NAME, LazyEmbedder, load_embedder
from signaldesk.retrieval.errors import ModelError
from signaldesk.retrieval.onnx_embedder import (
    ONNX_MODEL_NAME,
    OnnxEmbedder,
    bundled_onnx_path,
    is_onnx_folder,
)
from signaldesk.retrieval.settings import IndexSettings

REFERENCE = Path(__file__).resolve().parent / "data" / "minilm_l6_reference.json"


@pytest.fixture(scope="module")
def tier() -> OnnxEmbedder:
    embedder = load_embedder(IndexSettings(model=ONNX_MODEL_NAME))
    assert isinstance(embedder, OnnxEmbedder)
    return embedder


def _copy_model(tmp_path: Path) -> Path:
    folder = tmp_path / "onnx-copy"
    shutil.copytree(bundled_onnx_path(), folder)
    return folder


def _rewrite_sums(folder: Path) -> None:
    lines = [
        f"{hashlib.sha256((folder / name).read_bytes()).hexdigest()}  {name}\n"
        for name in ("model.onnx", "tokenizer.json", "config.json")
    ]
    (folder / "SHA256SUMS").write_text("".join(lines))


def test_the_tier_ships_with_its_licence_checksums_and_attribution() -> None:
    folder = bundled_onnx_path()
    assert is_onnx_folder(folder)
    for name in ("model.onnx", "tokenizer.json", "config.json", "SHA256SUMS", "LICENSE"):
        assert (folder / name).is_file(), name
    assert "Apache License" in (folder / "LICENSE").read_text()
    readme = (folder / "README.md").read_text()
    assert "sentence-transformers/all-MiniLM-L6-v2" in readme
    assert "tools/export_onnx_model.py" in readme
    for line in (folder / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ")
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name
        assert digest in readme
    size = sum(p.stat().st_size for p in folder.iterdir())
    assert size < 30_000_000


def test_vectors_are_normalised_float32_and_empty_texts_are_zero(tier: OnnxEmbedder) -> None:
    assert tier.name == ONNX_MODEL_NAME
    assert tier.dimensions == 384
    vectors = tier.encode(["A short note about sleep.", "", "   ", "Zweiter Satz.", "x" * 500])
    assert vectors.dtype == np.float32
    assert vectors.shape == (5, 384)
    norms = np.linalg.norm(vectors, axis=1)
    assert norms[[0, 3]] == pytest.approx([1.0, 1.0], abs=1e-5)
    # Nothing but special or unknown word pieces: an all-zero row, as the protocol says.
    assert not vectors[1].any()
    assert not vectors[2].any()
    assert not vectors[4].any()
    assert tier.encode([]).shape == (0, 384)
    with pytest.raises(TypeError):
        tier.encode("a bare string")


def test_vectors_match_the_torch_model(tier: OnnxEmbedder) -> None:
    # Written by tools/export_onnx_model.py from the original fp32 model in torch.
    reference = json.loads(REFERENCE.read_text())
    texts = [row["text"] for row in reference["sentences"]]
    expected = np.array([row["vector"] for row in reference["sentences"]], dtype=np.float32)
    one_by_one = np.vstack([tier.encode([text]) for text in texts])
    batched = tier.encode(texts * 2)[: len(texts)]  # more than a query: the batch session
    for got in (one_by_one, batched):
        cosines = (got * expected).sum(axis=1)
        assert cosines.min() > 0.97, cosines
        assert cosines.mean() > 0.985, cosines
    # The int8 activation scale is computed per batch, so a text's companions move its
    # vector a little (cosine 0.992-0.996 measured), no more.
    assert (one_by_one * batched).sum(axis=1).min() > 0.985


def test_the_tier_captures_meaning(tier: OnnxEmbedder) -> None:
    notes = [
        "Obsidian Git: backup your vault with Git, commit and push on a schedule.",
        "Kanban: create markdown-backed Kanban boards to organise tasks.",
        "Citations: insert references from your Zotero library into a note.",
        "Vitamin D and the risk of multiple sclerosis in a cohort study.",
    ]
    questions = [
        "back up my vault automatically",
        "a board with columns to manage my to-dos",
        "add a bibliography entry from my reference manager",
        "does sunlight exposure matter for MS",
    ]
    vectors = tier.encode(notes)
    for i, question in enumerate(questions):
        assert int(np.argmax(vectors @ tier.encode([question])[0])) == i, question


def test_texts_are_cut_at_the_token_cap(tier: OnnxEmbedder) -> None:
    long = " ".join(f"word{i % 50} means something" for i in range(400))
    assert tier.max_tokens == 256
    a, b = tier.encode([long]), tier.encode([long + " and a different ending entirely"])
    np.testing.assert_array_equal(a, b)
    assert tier.encode([long[:200]]) @ a[0] < 0.999


def test_fingerprint_is_stable_and_names_the_model(tier: OnnxEmbedder, tmp_path: Path) -> None:
    again = load_embedder(IndexSettings(model=ONNX_MODEL_NAME))
    assert again.fingerprint == tier.fingerprint
    static = load_embedder(IndexSettings(model=BUNDLED_MODEL_NAME))
    assert static.fingerprint != tier.fingerprint
    # A folder written by the export script is loaded as the tier too, under its path.
    copy = load_embedder(IndexSettings(model=str(_copy_model(tmp_path))))
    assert isinstance(copy, OnnxEmbedder)
    assert copy.name == str((tmp_path / "onnx-copy").resolve())
    assert copy.fingerprint != tier.fingerprint
    # Another export (here: another token cap) is another fingerprint.
    folder = tmp_path / "onnx-copy"
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "max_tokens": 128}))
    _rewrite_sums(folder)
    recut = load_embedder(IndexSettings(model=str(folder)))
    assert isinstance(recut, OnnxEmbedder)
    assert recut.max_tokens == 128
    assert recut.fingerprint != copy.fingerprint


def test_threads_for_batches_are_configurable(tier: OnnxEmbedder) -> None:
    one = load_embedder(IndexSettings(model=ONNX_MODEL_NAME, embed_threads=1))
    assert isinstance(one, OnnxEmbedder)
    assert one.batch_threads == 1
    assert tier.batch_threads >= 1
    texts = [f"note {i} about gardening and tomatoes" for i in range(9)]
    np.testing.assert_allclose(one.encode(texts), tier.encode(texts), atol=1e-5)


def test_a_damaged_model_file_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    folder = _copy_model(tmp_path)
    data = bytearray((folder / "model.onnx").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (folder / "model.onnx").write_bytes(bytes(data))
    with pytest.raises(ModelError, match="does not match its SHA-256") as excinfo:
        load_embedder(IndexSettings(model=str(folder)))
    assert excinfo.value.hint is not None


def test_a_model_onnxruntime_rejects_fails_the_load(tmp_path: Path) -> None:
    folder = _copy_model(tmp_path)
    (folder / "model.onnx").write_bytes(b"this is not an ONNX graph")
    _rewrite_sums(folder)
    with pytest.raises(ModelError, match="onnxruntime cannot load"):
        load_embedder(IndexSettings(model=str(folder)))


def test_a_config_without_what_the_runtime_needs_is_an_error(tmp_path: Path) -> None:
    folder = _copy_model(tmp_path)
    (folder / "config.json").write_text(json.dumps({"format": "signaldesk-onnx-embedder/1"}))
    _rewrite_sums(folder)
    with pytest.raises(ModelError, match="not a usable model description"):
        load_embedder(IndexSettings(model=str(folder)))


def test_missing_files_are_an_error(tmp_path: Path) -> None:
    folder = _copy_model(tmp_path)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelError, match="incomplete"):
        load_embedder(IndexSettings(model=str(folder)))


def test_without_onnxruntime_the_tier_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import raises ImportError
    lazy = LazyEmbedder(IndexSettings(model=ONNX_MODEL_NAME))
    with pytest.raises(ModelError, match="needs onnxruntime") as excinfo:
        lazy.warm_up()
    assert excinfo.value.hint is not None
    assert "signaldesk[onnx]" in excinfo.value.hint
    assert not lazy.loaded
