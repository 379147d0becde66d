"""Sentence embeddings for chunks and queries: the configured model, or the bundled one.

The configured model (``[index] model``, by default ``minishlab/potion-base-8M``)
is a Model2Vec model (a local folder or a Hugging Face hub name) or the
transformer tier: ``minilm-l6-onnx`` (shipped with signaldesk) or a folder
written by ``tools/export_onnx_model.py``, run by
:mod:`~signaldesk.retrieval.onnx_embedder`. A Model2Vec hub name A hub name is looked up in the
local Hugging Face cache only, unless ``allow_download`` is set: signaldesk
makes no network calls of its own, and an offline machine must not wait on a
hub. When a configured Model2Vec model cannot be loaded, the small model shipped in
``retrieval/models/minilm-l6-distilled`` is used (see its README for where it
comes from), so search works on first run with no network. The transformer tier
has no such fallback: when it cannot be loaded that is a :class:`ModelError`,
because replacing its vectors with the static model's would quietly make search
worse (and rebuild the index).

The embedder's :attr:`Embedder.fingerprint` changes whenever the vectors it
produces could change; the indexer stores it and rebuilds when it differs.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from signaldesk.retrieval.errors import ModelError
from signaldesk.retrieval.onnx_embedder import (
    ONNX_MODEL_NAME,
    bundled_onnx_path,
    is_onnx_folder,
    load_onnx_embedder,
)
from signaldesk.retrieval.settings import IndexSettings

if TYPE_CHECKING:
    from model2vec import StaticModel

__all__ = [
    "BUNDLED_MODEL_NAME",
    "Embedder",
    "LazyEmbedder",
    "bundled_model_path",
    "load_embedder",
]

logger = logging.getLogger(__name__)

BUNDLED_MODEL_NAME = "bundled:minilm-l6-distilled"
"""The :attr:`Embedder.name` of the model shipped with signaldesk (also accepted as ``model``)."""

_BUNDLED_FOLDER = "minilm-l6-distilled"
# The files of model2vec's own folder layout; a cached hub snapshot must hold all three.
_MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")
_FINGERPRINT_VERSION = "1"


class Embedder(Protocol):
    """What the indexer, the retriever and scoring need from an embedding model.

    Not ``runtime_checkable`` on purpose: ``isinstance`` would read the properties,
    which loads the model of a :class:`LazyEmbedder`.
    """

    @property
    def name(self) -> str:
        """The model actually loaded: a hub name, a folder, or :data:`BUNDLED_MODEL_NAME`."""
        ...

    @property
    def dimensions(self) -> int:
        """Length of each vector."""
        ...

    @property
    def fingerprint(self) -> str:
        """A stable hash of the model (name, dimensions, vocabulary, weights).

        Two embedders with the same fingerprint give the same vectors; a change
        means every stored vector is stale and the index must be rebuilt.
        """
        ...

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` as a float32 array of shape ``(len(texts), dimensions)``.

        Rows are L2-normalised; a text with no known token (empty, whitespace)
        gives an all-zero row.
        """
        ...


def bundled_model_path() -> Path:
    """The folder of the Model2Vec model shipped inside the ``retrieval`` package."""
    return Path(__file__).resolve().parent / "models" / _BUNDLED_FOLDER


class _StaticEmbedder:
    """An :class:`Embedder` over a loaded ``model2vec.StaticModel``."""

    def __init__(self, model: StaticModel, name: str, batch_size: int) -> None:
        self._model = model
        self._name = name
        self._batch_size = batch_size
        self._dimensions = int(model.dim)
        self._fingerprint = _fingerprint(model, name)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if isinstance(texts, str):
            # A bare string is a Sequence[str] of characters; that is never what a caller means.
            raise TypeError("encode() takes a sequence of texts, not a single string")
        out = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            vectors = self._model.encode(
                batch,
                normalize=False,
                batch_size=self._batch_size,
                use_multiprocessing=False,
            )
            out[start : start + len(batch)] = np.asarray(vectors, dtype=np.float32)
        # Normalised here rather than by model2vec so that every model (whatever its
        # config says) gives unit rows, and a row with no tokens stays exactly zero.
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def _fingerprint(model: StaticModel, name: str) -> str:
    # Trigger: a new model, a re-distilled bundled model, a changed vocabulary.
    # Why: the spec asks for name + vocabulary; the weights are hashed too because a
    # rebuilt model under the same name and vocabulary still gives different vectors.
    # Outcome: any change in what encode() returns changes the fingerprint (~50 ms).
    digest = hashlib.sha256()
    digest.update(f"signaldesk-embedder/{_FINGERPRINT_VERSION}\n{name}\n{model.dim}\n".encode())
    digest.update("\n".join(model.tokens).encode("utf-8", "surrogatepass"))
    digest.update(np.ascontiguousarray(model.embedding).tobytes())
    for extra in (model.weights, model.token_mapping):
        if extra is not None:
            digest.update(np.ascontiguousarray(extra).tobytes())
    return digest.hexdigest()


def _load_folder(folder: Path) -> StaticModel:
    from model2vec import StaticModel

    # An existing folder is read directly: model2vec only turns to the hub for a
    # path that does not exist, and the callers check existence first.
    return StaticModel.from_pretrained(folder, force_download=False)


def _looks_like_path(model: str) -> bool:
    # Hub ids are "name" or "owner/name"; anything else that is not an existing
    # folder is a path the user meant (and that is missing).
    return model.startswith((".", "/", "~", "\\")) or model.count("/") > 1 or "\\" in model


def _cached_hub_folder(repo_id: str) -> Path | None:
    """The snapshot folder of ``repo_id`` in the local Hugging Face cache, or None.

    Reads the cache on disk only (``try_to_load_from_cache``); never the network.
    """
    from huggingface_hub import try_to_load_from_cache

    folders: set[Path] = set()
    for filename in _MODEL_FILES:
        found = try_to_load_from_cache(repo_id, filename)
        if not isinstance(found, str):
            return None
        folders.add(Path(found).parent)
    return folders.pop() if len(folders) == 1 else None


def _download_hub_folder(repo_id: str) -> Path:
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo_id, allow_patterns=[*_MODEL_FILES, "README.md"]))


def _load_configured(settings: IndexSettings) -> tuple[StaticModel, str]:
    """Load ``settings.model``; raise ``_NotAvailable`` saying why it cannot be."""
    configured = settings.model.strip()
    folder = Path(configured).expanduser()
    if folder.is_dir():
        resolved = folder.resolve()
        return _load_folder(resolved), str(resolved)
    if _looks_like_path(configured):
        raise _NotAvailable(f"folder {configured!r} does not exist", expected=False)
    try:
        cached = _cached_hub_folder(configured)
    except ValueError as exc:  # huggingface_hub rejects malformed repo ids
        raise _NotAvailable(f"{configured!r} is not a valid model name ({exc})") from exc
    if cached is not None:
        return _load_folder(cached), configured
    if not settings.allow_download:
        raise _NotAvailable(
            f"{configured!r} is not in the local Hugging Face cache and allow_download is off",
            expected=True,
        )
    logger.info("downloading embedding model %s from the Hugging Face hub", configured)
    return _load_folder(_download_hub_folder(configured)), configured


class _NotAvailable(Exception):
    """The configured model cannot be used; ``expected`` marks the ordinary offline case."""

    def __init__(self, reason: str, *, expected: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.expected = expected


def load_embedder(settings: IndexSettings) -> Embedder:
    """Load the configured embedding model, or the bundled one when it cannot be loaded.

    :param settings: ``model`` (folder or hub name), ``allow_download``, ``batch_size``
        and ``embed_threads``.
    :raises ModelError: when neither the configured nor the bundled model loads, or
        when the configured model is the transformer tier and it does not load.
    """
    configured = settings.model.strip()
    if configured == ONNX_MODEL_NAME:
        return load_onnx_embedder(
            bundled_onnx_path(), ONNX_MODEL_NAME, threads=settings.embed_threads
        )
    folder = Path(configured).expanduser()
    if folder.is_dir() and is_onnx_folder(folder):
        return load_onnx_embedder(
            folder.resolve(), str(folder.resolve()), threads=settings.embed_threads
        )
    if configured != BUNDLED_MODEL_NAME:
        try:
            model, name = _load_configured(settings)
        except _NotAvailable as exc:
            level = logging.INFO if exc.expected else logging.WARNING
            logger.log(level, "embedding model %s not loaded: %s", settings.model, exc.reason)
        except Exception as exc:
            # Boundary with model2vec / huggingface_hub / safetensors / tokenizers, which
            # fail in many ways (corrupt files, bad JSON, HTTP errors, ...); any of them
            # means "use the bundled model", and the reason is logged.
            logger.warning(
                "embedding model %s could not be loaded (%s: %s)",
                settings.model,
                type(exc).__name__,
                exc,
                exc_info=logger.isEnabledFor(logging.DEBUG),
            )
        else:
            logger.info("embedding model: %s (%d dimensions)", name, model.dim)
            return _StaticEmbedder(model, name, settings.batch_size)
        logger.info("using the bundled embedding model %s instead", BUNDLED_MODEL_NAME)

    folder = bundled_model_path()
    hint = "reinstall signaldesk, or set [index] model to a Model2Vec model folder"
    if not folder.is_dir():
        raise ModelError(
            f"no embedding model could be loaded: {settings.model!r} is unavailable and "
            f"the bundled model is missing from {folder}",
            hint=hint,
        )
    try:
        bundled = _load_folder(folder)
    except Exception as exc:  # same boundary as above; nothing is left to fall back to
        raise ModelError(
            f"the bundled embedding model in {folder} cannot be loaded: {exc}", hint=hint
        ) from exc
    logger.info("embedding model: %s (%d dimensions)", BUNDLED_MODEL_NAME, bundled.dim)
    return _StaticEmbedder(bundled, BUNDLED_MODEL_NAME, settings.batch_size)


class LazyEmbedder:
    """An :class:`Embedder` that loads its model on first use, once, thread-safely.

    Building one costs nothing; the first access to :attr:`name`,
    :attr:`dimensions`, :attr:`fingerprint` or :meth:`encode` loads the model
    (and may raise :class:`~retrieval.errors.ModelError`). A server calls
    :meth:`warm_up` at start so that the first request does not pay for it.
    """

    def __init__(self, settings: IndexSettings) -> None:
        self._settings = settings
        self._embedder: Embedder | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded."""
        return self._embedder is not None

    def _get(self) -> Embedder:
        embedder = self._embedder
        if embedder is None:
            with self._lock:
                embedder = self._embedder
                if embedder is None:
                    embedder = self._embedder = load_embedder(self._settings)
        return embedder

    @property
    def name(self) -> str:
        return self._get().name

    @property
    def dimensions(self) -> int:
        return self._get().dimensions

    @property
    def fingerprint(self) -> str:
        return self._get().fingerprint

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._get().encode(texts)

    def warm_up(self) -> None:
        """Load the model now and encode one string, so later calls are fast."""
        self._get().encode(["warm up"])
