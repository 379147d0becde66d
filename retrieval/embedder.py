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
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from signaldesk.retrieval.errors import ModelError
from signaldesk.retrieval.onnx_embedder import (
    ONNX_MODEL_NAME,
    bundled_onnx_path,
    is_onnx_folder,
    load_onnx_embedder,
)
from signaldesk.retrieval.static_model import MODEL_FILES, read_folder

if TYPE_CHECKING:
    import numpy.typing as npt

    from signaldesk.retrieval.settings import IndexSettings

__all__ = [
    "BUNDLED_MODEL_NAME",
    "Embedder",
    "LazyEmbedder",
    "bundled_model_path",
    "fingerprint_for",
    "load_embedder",
    "source_key",
]

logger = logging.getLogger(__name__)

BUNDLED_MODEL_NAME = "bundled:minilm-l6-distilled"
"""The :attr:`Embedder.name` of the model shipped with signaldesk (also accepted as ``model``)."""

_BUNDLED_FOLDER = "minilm-l6-distilled"
_FINGERPRINT_VERSION = "1"
# Part of the model files' key (:func:`_source_key`): what turns the files into
# vectors. Bumped when static_model.py could encode the same files differently.
_ENCODER_VERSION = "signaldesk-static-1"


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


class _Model(Protocol):
    """What :class:`_StaticEmbedder` reads of a static model: static_model.py's
    ``StaticModel``, or model2vec's own for a folder in another layout
    (:class:`_Model2VecModel`)."""

    @property
    def dim(self) -> int: ...

    @property
    def tokens(self) -> Sequence[str]: ...

    @property
    def embedding(self) -> npt.NDArray[Any]: ...

    @property
    def weights(self) -> npt.NDArray[Any] | None: ...

    @property
    def token_mapping(self) -> npt.NDArray[Any] | None: ...

    def encode(self, texts: Sequence[str]) -> npt.NDArray[Any]: ...


class _Model2VecModel:
    """A ``model2vec.StaticModel`` (a folder in a layout static_model.py does not read)."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.dim = int(model.dim)
        self.tokens: Sequence[str] = model.tokens
        self.embedding: npt.NDArray[Any] = model.embedding
        self.weights: npt.NDArray[Any] | None = model.weights
        self.token_mapping: npt.NDArray[Any] | None = model.token_mapping

    def encode(self, texts: Sequence[str]) -> npt.NDArray[Any]:
        out: npt.NDArray[Any] = self._model.encode(
            list(texts), normalize=False, batch_size=max(1, len(texts)), use_multiprocessing=False
        )
        return out


class _StaticEmbedder:
    """An :class:`Embedder` over a loaded static (Model2Vec) model."""

    def __init__(
        self, model: _Model, name: str, batch_size: int, folder: Path | None = None
    ) -> None:
        self._model = model
        self._name = name
        self._batch_size = batch_size
        self._dimensions = int(model.dim)
        # Hashed on first use: a search whose index recorded these very files
        # (see :func:`fingerprint_for`) never needs it.
        self._fingerprint: str | None = None
        self._source_key = _source_key(folder, name, self._dimensions) if folder else None

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = _fingerprint(self._model, self._name)
        return self._fingerprint

    @property
    def source_key(self) -> str | None:
        """A cheap identity of the files the model was loaded from (see :func:`fingerprint_for`)."""
        return self._source_key

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if isinstance(texts, str):
            # A bare string is a Sequence[str] of characters; that is never what a caller means.
            raise TypeError("encode() takes a sequence of texts, not a single string")
        out = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            vectors = self._model.encode(batch)
            out[start : start + len(batch)] = np.asarray(vectors, dtype=np.float32)
        # Normalised here rather than by model2vec so that every model (whatever its
        # config says) gives unit rows, and a row with no tokens stays exactly zero.
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def _fingerprint(model: _Model, name: str) -> str:
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


def _source_key(folder: Path, name: str, dimensions: int) -> str | None:
    """A hash of the model files' paths, sizes and modification times (``None``: unreadable).

    Trigger: the fingerprint hashes the whole model (~10-50 ms) and every
    process that searches would pay it. Why: the same files, untouched, load
    the same model, so an index can record this key beside the fingerprint and
    a later process trusts the recorded fingerprint when the key matches.
    Outcome: a rewritten, replaced or moved model file changes the key, and the
    fingerprint is hashed and compared as before.
    """
    digest = hashlib.sha256()
    digest.update(
        f"signaldesk-model-files/{_FINGERPRINT_VERSION}\n{name}\n{dimensions}\n"
        f"{_ENCODER_VERSION}\n".encode()
    )
    for file_name in MODEL_FILES:
        path = folder / file_name
        try:
            st = path.stat()
        except OSError:
            return None
        digest.update(f"{path.resolve()}\n{st.st_size}\n{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def source_key(embedder: Embedder) -> str | None:
    """The :func:`_source_key` of the files ``embedder`` was loaded from, if it knows one.

    Loads a :class:`LazyEmbedder`'s model. Embedders without the attribute (the
    transformer tier computes its fingerprint from a checksum file anyway) give ``None``.
    """
    key = getattr(embedder, "source_key", None)
    return key if isinstance(key, str) else None


def fingerprint_for(
    embedder: Embedder, stored_fingerprint: str | None, stored_key: str | None
) -> str:
    """``embedder``'s fingerprint, taken from the index when it recorded these model files.

    :param stored_fingerprint: the index's ``model_fingerprint`` meta value.
    :param stored_key: the index's ``model_source_key`` meta value.
    """
    if stored_fingerprint and stored_key and source_key(embedder) == stored_key:
        return stored_fingerprint
    return embedder.fingerprint


def _load_folder(folder: Path) -> _Model:
    """The static model in ``folder``: read directly when it is in model2vec's own
    layout (static_model.py, without importing model2vec), else by model2vec."""
    model = read_folder(folder)
    if model is not None:
        return model
    from model2vec import StaticModel as Model2VecStaticModel

    # An existing folder is read directly: model2vec only turns to the hub for a
    # path that does not exist, and the callers check existence first.
    return _Model2VecModel(Model2VecStaticModel.from_pretrained(folder, force_download=False))


def _looks_like_path(model: str) -> bool:
    # Hub ids are "name" or "owner/name"; anything else that is not an existing
    # folder is a path the user meant (and that is missing).
    return model.startswith((".", "/", "~", "\\")) or model.count("/") > 1 or "\\" in model


def _cached_hub_folder(repo_id: str) -> Path | None:
    """The snapshot folder of ``repo_id`` in the local Hugging Face cache, or None.

    Reads the cache on disk only (``try_to_load_from_cache``); never the network.
    """
    if not _may_be_cached(repo_id):
        return None
    from huggingface_hub import try_to_load_from_cache

    folders: set[Path] = set()
    for filename in MODEL_FILES:
        found = try_to_load_from_cache(repo_id, filename)
        if not isinstance(found, str):
            return None
        folders.add(Path(found).parent)
    return folders.pop() if len(folders) == 1 else None


def _may_be_cached(repo_id: str) -> bool:
    """False only when no place huggingface_hub may keep its cache holds ``repo_id``.

    Trigger: the default model is a hub name that an offline machine never has, and
    importing huggingface_hub only to learn that costs ~0.1-0.25 s per process (a
    one-shot search). Why: its cache folders come from a few environment variables
    (HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME, XDG_CACHE_HOME, else ~/.cache);
    every candidate is checked, so a cached model is never missed. Outcome: when
    any candidate has the repo's folder (or in the hub's staging mode), the hub
    client decides as before; a hub client already imported is asked for its own
    cache folder too.
    """
    if os.environ.get("HUGGINGFACE_CO_STAGING"):
        return True
    home = Path(os.path.expanduser("~"))
    xdg = os.environ.get("XDG_CACHE_HOME") or str(home / ".cache")
    hf_home = os.environ.get("HF_HOME") or os.path.join(xdg, "huggingface")
    roots = {
        os.environ.get("HF_HUB_CACHE"),
        os.environ.get("HUGGINGFACE_HUB_CACHE"),
        os.path.join(hf_home, "hub"),
        os.path.join(xdg, "huggingface", "hub"),
        str(home / ".cache" / "huggingface" / "hub"),
    }
    hub = sys.modules.get("huggingface_hub.constants")
    if hub is not None:  # already imported, perhaps configured in code: ask it too
        roots.add(str(getattr(hub, "HF_HUB_CACHE", "")))
    folder = "--".join(["models", *repo_id.split("/")])
    candidates = (Path(os.path.expandvars(os.path.expanduser(r))) for r in roots if r)
    return any((root / folder).exists() for root in candidates)


def _download_hub_folder(repo_id: str) -> Path:
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo_id, allow_patterns=[*MODEL_FILES, "README.md"]))


def _load_configured(settings: IndexSettings) -> tuple[_Model, str, Path]:
    """Load ``settings.model``; raise ``_NotAvailable`` saying why it cannot be."""
    configured = settings.model.strip()
    folder = Path(configured).expanduser()
    if folder.is_dir():
        resolved = folder.resolve()
        return _load_folder(resolved), str(resolved), resolved
    if _looks_like_path(configured):
        raise _NotAvailable(f"folder {configured!r} does not exist", expected=False)
    try:
        cached = _cached_hub_folder(configured)
    except ValueError as exc:  # huggingface_hub rejects malformed repo ids
        raise _NotAvailable(f"{configured!r} is not a valid model name ({exc})") from exc
    if cached is not None:
        return _load_folder(cached), configured, cached
    if not settings.allow_download:
        raise _NotAvailable(
            f"{configured!r} is not in the local Hugging Face cache and allow_download is off",
            expected=True,
        )
    logger.info("downloading embedding model %s from the Hugging Face hub", configured)
    downloaded = _download_hub_folder(configured)
    return _load_folder(downloaded), configured, downloaded


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
            model, name, loaded_from = _load_configured(settings)
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
            return _StaticEmbedder(model, name, settings.batch_size, loaded_from)
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
    return _StaticEmbedder(bundled, BUNDLED_MODEL_NAME, settings.batch_size, folder)


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

    @property
    def source_key(self) -> str | None:
        """The loaded model's :func:`source_key` (loads the model)."""
        return source_key(self._get())

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._get().encode(texts)

    def warm_up(self) -> None:
        """Load the model now and encode a batch, so later calls are fast (a batch: one
        text alone would get a tokenizer cut down to it, static_tokenizer.py)."""
        self._get().encode(["warm up", "warm up"])
