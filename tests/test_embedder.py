"""The embedder: the bundled offline model, configured models, fallback and lazy loading."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import huggingface_hub.constants
import numpy as np
import pytest
from model2vec import StaticModel
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from signaldesk.retrieval import embedder as embedder_module
from signaldesk.retrieval.embedder import (
    BUNDLED_MODEL_NAME,
    Embedder,
    LazyEmbedder,
    bundled_model_path,
    load_embedder,
)
from signaldesk.retrieval.errors import ModelError
from signaldesk.retrieval.settings import IndexSettings

_TINY_WORDS = ["[UNK]", "[PAD]", "alpha", "beta", "gamma", "delta", "epsilon"]


def _save_tiny_model(folder: Path, seed: int = 0, dims: int = 8) -> Path:
    """A real Model2Vec model with a 7-word vocabulary, saved the way model2vec saves one."""
    tokenizer = Tokenizer(
        models.WordLevel({w: i for i, w in enumerate(_TINY_WORDS)}, unk_token="[UNK]")
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.normalizer = normalizers.Lowercase()
    vectors = np.random.default_rng(seed).normal(size=(len(_TINY_WORDS), dims))
    model = StaticModel(vectors=vectors.astype(np.float32), tokenizer=tokenizer, normalize=True)
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def bundled() -> Embedder:
    return load_embedder(IndexSettings(model=BUNDLED_MODEL_NAME))


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty Hugging Face hub cache of our own, so the real one is never consulted."""
    cache = tmp_path / "hf-hub"
    cache.mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    yield cache


def _cache_model(cache: Path, repo_id: str, model_folder: Path) -> None:
    """Lay ``model_folder`` out in ``cache`` exactly as huggingface_hub stores a snapshot."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    shutil.copytree(model_folder, repo / "snapshots" / commit)


def test_bundled_model_ships_with_the_package() -> None:
    folder = bundled_model_path()
    for name in ("model.safetensors", "tokenizer.json", "config.json", "README.md", "LICENSE"):
        assert (folder / name).is_file(), name
    size = sum(p.stat().st_size for p in folder.iterdir())
    assert size < 15_000_000


def test_bundled_model_gives_normalised_float32_vectors(bundled: Embedder) -> None:
    assert bundled.name == BUNDLED_MODEL_NAME
    assert bundled.dimensions == 256
    vectors = bundled.encode(["A short note about sleep.", "", "   ", "Zweiter Satz."])
    assert vectors.dtype == np.float32
    assert vectors.shape == (4, 256)
    norms = np.linalg.norm(vectors, axis=1)
    assert norms[0] == pytest.approx(1.0, abs=1e-5)
    assert norms[3] == pytest.approx(1.0, abs=1e-5)
    # Nothing to embed: an all-zero row rather than NaN or a random direction.
    assert not vectors[1].any()
    assert not vectors[2].any()
    assert bundled.encode([]).shape == (0, 256)


def test_bundled_model_captures_meaning(bundled: Embedder) -> None:
    texts = [
        "How much sleep do teenagers need each night?",
        "Adolescents should get eight to ten hours of sleep per night.",
        "The central bank raised interest rates to curb inflation.",
        "Monetary policy tightened as the Federal Reserve lifted borrowing costs.",
        "Mitochondria produce most of the energy used by a cell.",
    ]
    vectors = bundled.encode(texts)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 2] + 0.1
    assert similarity[0, 1] > similarity[0, 4] + 0.1
    assert similarity[2, 3] > similarity[2, 0] + 0.1
    assert similarity[2, 3] > similarity[2, 4] + 0.1
    # Each question finds its own answer among all the other texts.
    query = bundled.encode(["what does the cell's powerhouse do"])[0]
    assert int(np.argmax(vectors @ query)) == 4


def test_encode_batches_give_the_same_vectors(bundled: Embedder) -> None:
    texts = [f"note number {i} about topic {i % 3}" for i in range(7)]
    small_batches = load_embedder(IndexSettings(model=BUNDLED_MODEL_NAME, batch_size=2))
    np.testing.assert_allclose(small_batches.encode(texts), bundled.encode(texts), atol=1e-6)
    with pytest.raises(TypeError):
        bundled.encode("a bare string")


def test_fingerprint_is_stable_and_differs_between_models(
    bundled: Embedder, tmp_path: Path
) -> None:
    again = load_embedder(IndexSettings(model=BUNDLED_MODEL_NAME))
    assert again.fingerprint == bundled.fingerprint
    assert len(bundled.fingerprint) == 64

    tiny = load_embedder(IndexSettings(model=str(_save_tiny_model(tmp_path / "tiny"))))
    assert tiny.name == str((tmp_path / "tiny").resolve())
    assert tiny.dimensions == 8
    assert tiny.fingerprint != bundled.fingerprint
    # Same name and vocabulary but other weights: the vectors change, so must the hash.
    shutil.rmtree(tmp_path / "tiny")
    retrained = load_embedder(IndexSettings(model=str(_save_tiny_model(tmp_path / "tiny", 1))))
    assert retrained.name == tiny.name
    assert retrained.fingerprint != tiny.fingerprint


def test_local_folder_model_is_used(tmp_path: Path) -> None:
    folder = _save_tiny_model(tmp_path / "tiny")
    embedder = load_embedder(IndexSettings(model=str(folder), batch_size=1))
    vectors = embedder.encode(["alpha beta", "unknown words only", "gamma"])
    assert vectors.shape == (3, 8)
    assert not vectors[1].any()
    assert np.linalg.norm(vectors[[0, 2]], axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)


def test_hub_name_is_loaded_from_the_local_cache(hf_cache: Path, tmp_path: Path) -> None:
    _cache_model(hf_cache, "example-org/tiny-static", _save_tiny_model(tmp_path / "tiny"))
    embedder = load_embedder(IndexSettings(model="example-org/tiny-static"))
    assert embedder.name == "example-org/tiny-static"
    assert embedder.dimensions == 8


def test_uncached_hub_model_falls_back_without_network(
    hf_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="signaldesk.retrieval.embedder"):
        embedder = load_embedder(IndexSettings(model="minishlab/potion-base-8M"))
    assert embedder.name == BUNDLED_MODEL_NAME
    assert "not in the local Hugging Face cache" in caplog.text
    assert "allow_download is off" in caplog.text
    assert f"using the bundled embedding model {BUNDLED_MODEL_NAME}" in caplog.text


@pytest.mark.parametrize("kind", ["missing-folder", "broken-folder", "bad-name"])
def test_unloadable_configured_model_falls_back_and_says_so(
    kind: str, tmp_path: Path, hf_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    if kind == "missing-folder":
        configured = str(tmp_path / "no" / "such" / "model")
    elif kind == "broken-folder":
        folder = _save_tiny_model(tmp_path / "broken")
        (folder / "model.safetensors").write_bytes(b"not a safetensors file")
        configured = str(folder)
    else:
        configured = "not a valid//repo id"
    with caplog.at_level(logging.INFO, logger="signaldesk.retrieval.embedder"):
        embedder = load_embedder(IndexSettings(model=configured))
    assert embedder.name == BUNDLED_MODEL_NAME
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings, caplog.text
    assert configured in warnings[0].getMessage()
    assert "using the bundled embedding model" in caplog.text


def test_model_error_when_nothing_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hf_cache: Path
) -> None:
    monkeypatch.setattr(embedder_module, "bundled_model_path", lambda: tmp_path / "gone")
    with pytest.raises(ModelError) as excinfo:
        load_embedder(IndexSettings(model="minishlab/potion-base-8M"))
    assert excinfo.value.hint is not None
    assert "reinstall" in excinfo.value.hint


def test_lazy_embedder_loads_on_first_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[IndexSettings] = []
    real_load = embedder_module.load_embedder

    def counting_load(settings: IndexSettings) -> Embedder:
        calls.append(settings)
        return real_load(settings)

    monkeypatch.setattr(embedder_module, "load_embedder", counting_load)
    lazy: Embedder = LazyEmbedder(IndexSettings(model=str(_save_tiny_model(tmp_path / "tiny"))))
    assert isinstance(lazy, LazyEmbedder)
    assert not lazy.loaded
    assert calls == []

    assert lazy.dimensions == 8
    assert lazy.loaded
    lazy.warm_up()
    assert lazy.encode(["alpha"]).shape == (1, 8)
    assert lazy.name.endswith("tiny")
    assert len(lazy.fingerprint) == 64
    assert len(calls) == 1


def test_lazy_embedder_defers_errors_until_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hf_cache: Path
) -> None:
    monkeypatch.setattr(embedder_module, "bundled_model_path", lambda: tmp_path / "gone")
    lazy = LazyEmbedder(IndexSettings(model="minishlab/potion-base-8M"))
    assert not lazy.loaded
    with pytest.raises(ModelError):
        lazy.warm_up()
    assert not lazy.loaded


def test_allowed_download_that_cannot_reach_the_hub_falls_back(
    hf_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The test session has no network (HF_HUB_OFFLINE=1, dead proxies): the download
    # attempt must fail at once and the bundled model take over.
    with caplog.at_level(logging.INFO, logger="signaldesk.retrieval.embedder"):
        embedder = load_embedder(IndexSettings(model="example-org/not-cached", allow_download=True))
    assert embedder.name == BUNDLED_MODEL_NAME
    assert "example-org/not-cached could not be loaded" in caplog.text


@pytest.mark.parametrize(
    ("dtype", "weighted", "mapped", "max_length"),
    [
        (np.float32, False, False, 512),
        (np.float16, False, False, 4),
        (np.int8, False, False, 3),
        (np.float32, True, False, None),
        (np.float32, True, True, 6),
        (np.float32, False, True, 512),
    ],
)
def test_the_own_reader_encodes_as_model2vec_does(
    tmp_path: Path, dtype: type, weighted: bool, mapped: bool, max_length: int | None
) -> None:
    """static_model.py, which search uses instead of model2vec, gives model2vec's
    vectors value for value: token weights, a token mapping (vocabulary
    quantisation), int8 / float16 rows, the unknown token, truncation."""
    from signaldesk.retrieval.static_model import read_folder

    tokenizer = Tokenizer(
        models.WordLevel({w: i for i, w in enumerate(_TINY_WORDS)}, unk_token="[UNK]")
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.normalizer = normalizers.Lowercase()
    rng = np.random.default_rng(3)
    rows = 4 if mapped else len(_TINY_WORDS)
    vectors = rng.normal(size=(rows, 8)) * (60 if dtype == np.int8 else 1)
    model = StaticModel(
        vectors=vectors.astype(dtype),
        tokenizer=tokenizer,
        normalize=False,
        weights=rng.uniform(0.1, 2.0, size=len(_TINY_WORDS)) if weighted else None,
        token_mapping=rng.integers(0, rows, size=len(_TINY_WORDS)) if mapped else None,
        max_length=max_length,
    )
    folder = tmp_path / "m"
    model.save_pretrained(folder)
    reference = StaticModel.from_pretrained(folder, force_download=False)
    own = read_folder(folder)
    assert own is not None
    texts = [
        "alpha beta",
        "Gamma delta epsilon alpha",
        "zeta unknown words",  # only unknown tokens: a zero row
        "",
        "beta " * 40,
        "alpha gamma",  # same length as the first: averaged in one block
    ]
    expected = reference.encode(texts, normalize=False)
    got = own.encode(texts)
    assert got.dtype == expected.dtype
    assert np.array_equal(got, expected)
    assert not np.any(got[2])
    assert embedder_module._fingerprint(own, "x") == embedder_module._fingerprint(reference, "x")
    # The tensors mapped from the file are the ones the safetensors library reads.
    from signaldesk.retrieval import static_model

    for path in (folder / "model.safetensors", bundled_model_path() / "model.safetensors"):
        mapped = static_model._mapped_tensors(path)
        read = static_model._read_tensors(path)
        assert mapped is not None and mapped.keys() == read.keys()
        for name, array in read.items():
            assert mapped[name].dtype == array.dtype and np.array_equal(mapped[name], array)


def test_search_loads_the_bundled_model_without_model2vec() -> None:
    """A one-shot search must not pay for importing model2vec (joblib, multiprocessing)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from signaldesk.retrieval.embedder import load_embedder\n"
        "from signaldesk.retrieval.settings import IndexSettings\n"
        f"e = load_embedder(IndexSettings(model={BUNDLED_MODEL_NAME!r}))\n"
        "e.encode(['git rebase'])\n"
        "from signaldesk.retrieval.embedder import source_key\n"
        "assert source_key(e)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('model2vec', 'joblib')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
