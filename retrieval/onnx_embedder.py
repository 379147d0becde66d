"""The transformer embedding tier: a sentence transformer exported to ONNX, run with onnxruntime.

signaldesk ships all-MiniLM-L6-v2 with int8 weights in
``retrieval/models/minilm-l6-onnx`` (made by ``tools/export_onnx_model.py``; see its
README for attribution). It is selected with ``[index] model = "minilm-l6-onnx"``,
or by pointing ``model`` at another folder that script wrote. No torch at run time:
``tokenizers`` turns text into word pieces and ``onnxruntime`` runs the encoder;
the sentence vector is the mean of the token vectors over the attention mask,
L2-normalised (what sentence-transformers does for this model).

Unlike a Model2Vec model, this tier never falls back to the bundled static model
when it cannot be loaded: that would silently swap every vector of the index for
worse ones. A missing ``onnxruntime``, a file that does not match its
``SHA256SUMS`` or a file onnxruntime rejects is a :class:`ModelError`.

Threads: a call with a few texts (a query) runs on a session with one intra-op
thread, so that it does not compete with SQLite for the other core; a batch
(indexing) runs on a session with ``threads`` intra-op threads (default: every
core), created on first use.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from signaldesk.retrieval.errors import ModelError

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Encoding, Tokenizer

__all__ = [
    "ONNX_MODEL_NAME",
    "OnnxEmbedder",
    "bundled_onnx_path",
    "is_onnx_folder",
    "load_onnx_embedder",
]

logger = logging.getLogger(__name__)

ONNX_MODEL_NAME = "minilm-l6-onnx"
"""The ``[index] model`` value (and :attr:`OnnxEmbedder.name`) of the bundled transformer tier."""

_FORMAT = "signaldesk-onnx-embedder/1"
_FINGERPRINT_VERSION = "1"
_FILES = ("model.onnx", "tokenizer.json", "config.json")
_SUMS = "SHA256SUMS"
_INSTALL_HINT = "install the runtime with `pip install 'signaldesk[onnx]'`"
# Calls with at most this many texts are queries: one thread (see the module doc).
_QUERY_TEXTS = 4
# Rows x padded length per session run. Texts are sorted by length first, so short
# texts go in wide batches and 256-token ones 8 at a time. onnxruntime keeps the
# peak of its memory arena: on SciFact abstracts the indexing process peaked at
# 1,061 MB with 8,192 tokens a run, 615 MB with 4,096, 401 MB with 2,048 and 290 MB
# with 1,024, for the same CPU time per text within the noise (43-48 ms at load 9-13).
_BATCH_TOKENS = 2048


def bundled_onnx_path() -> Path:
    """The folder of the transformer tier shipped inside the ``retrieval`` package."""
    return Path(__file__).resolve().parent / "models" / ONNX_MODEL_NAME


def is_onnx_folder(folder: Path) -> bool:
    """Whether ``folder`` holds an export made by ``tools/export_onnx_model.py``."""
    return (folder / "model.onnx").is_file() and (folder / _SUMS).is_file()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_sums(folder: Path) -> dict[str, str]:
    sums: dict[str, str] = {}
    for line in (folder / _SUMS).read_text(encoding="utf-8").splitlines():
        digest, _, name = line.strip().partition("  ")
        if digest and name:
            sums[name] = digest
    return sums


class OnnxEmbedder:
    """An :class:`~retrieval.embedder.Embedder` over an ONNX sentence-transformer export.

    :param folder: a folder written by ``tools/export_onnx_model.py``.
    :param name: the name recorded in the index.
    :param threads: intra-op threads for batches (0: every core).
    :raises ModelError: the folder is incomplete, a file does not match
        ``SHA256SUMS``, or ``onnxruntime`` / ``tokenizers`` cannot be imported.

    Construction checks the files (hashing ~23 MB) and builds the one-thread
    session queries use (~0.3 s in all); the batch session is built on first
    use. Thread-safe.
    """

    def __init__(self, folder: Path, name: str, *, threads: int = 0) -> None:
        self._folder = folder
        self._name = name
        self._threads = threads if threads > 0 else _usable_cpus()
        self._verify(folder)
        try:
            config = json.loads(self._files_text["config.json"])
            if config.get("format") != _FORMAT:
                raise ValueError(f"format is not {_FORMAT}")
            self._dimensions = int(config["dimensions"])
            self._max_tokens = int(config["max_tokens"])
            self._inputs = tuple(str(i) for i in config["inputs"])
            self._output = str(config["output"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ModelError(
                f"{folder / 'config.json'} is not a usable model description: {exc}"
            ) from exc
        digest = hashlib.sha256()
        digest.update(f"signaldesk-onnx/{_FINGERPRINT_VERSION}\n{name}\n".encode())
        digest.update((folder / _SUMS).read_bytes())
        self._fingerprint = digest.hexdigest()
        self._tokenizer = self._load_tokenizer()
        self._special = {
            self._tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[UNK]", "[PAD]")
        } - {None}
        self._sessions: dict[int, InferenceSession] = {}
        self._lock = threading.Lock()
        # Built now so that a file onnxruntime rejects fails the load, before an
        # indexer has reset anything for this model; queries use this one.
        self._session(1)

    # -- loading -----------------------------------------------------------

    def _verify(self, folder: Path) -> None:
        """Read the files and check them against ``SHA256SUMS``."""
        try:
            sums = _read_sums(folder)
            contents = {name: (folder / name).read_bytes() for name in _FILES}
        except OSError as exc:
            raise ModelError(
                f"the ONNX embedding model in {folder} is incomplete: {exc}",
                hint="reinstall signaldesk, or re-run tools/export_onnx_model.py",
            ) from exc
        for name, data in contents.items():
            if sums.get(name) != _sha256(data):
                raise ModelError(
                    f"{folder / name} does not match its SHA-256 in {_SUMS} (damaged or replaced)",
                    hint="reinstall signaldesk, or re-run tools/export_onnx_model.py",
                )
        self._files_text = {
            name: contents[name].decode("utf-8") for name in ("tokenizer.json", "config.json")
        }

    def _load_tokenizer(self) -> Tokenizer:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelError(f"the ONNX embedding tier needs tokenizers: {exc}") from exc
        _import_onnxruntime()  # fail here, before an indexer resets anything for this model
        try:
            tokenizer = Tokenizer.from_str(self._files_text["tokenizer.json"])
        except Exception as exc:  # tokenizers raises its own Exception subclass
            raise ModelError(f"cannot read {self._folder / 'tokenizer.json'}: {exc}") from exc
        # The file pads every text to 128 tokens; batches are padded here, to their longest.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self._max_tokens)
        return tokenizer

    def _session(self, threads: int) -> InferenceSession:
        session = self._sessions.get(threads)
        if session is not None:
            return session
        with self._lock:
            session = self._sessions.get(threads)
            if session is None:
                session = self._sessions[threads] = self._new_session(threads)
        return session

    def _new_session(self, threads: int) -> InferenceSession:
        ort = _import_onnxruntime()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle pool threads that spin take the core SQLite and the chunking workers
        # need between two runs; sleeping costs a few microseconds per run.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only: warnings are about the graph, not the user
        try:
            # From the path, checked against SHA256SUMS at load: holding its 23 MB of
            # bytes for the life of the process would only cost memory.
            session = ort.InferenceSession(
                str(self._folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own Exception subclasses
            raise ModelError(
                f"onnxruntime cannot load {self._folder / 'model.onnx'}: {exc}"
            ) from exc
        logger.debug("ONNX session for %s with %d thread(s)", self._name, threads)
        return session

    # -- the Embedder protocol ----------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def batch_threads(self) -> int:
        """Intra-op threads of the session that embeds batches (queries use one)."""
        return self._threads

    @property
    def max_tokens(self) -> int:
        """Word pieces kept per text (the rest is cut)."""
        return self._max_tokens

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if isinstance(texts, str):
            # A bare string is a Sequence[str] of characters; that is never what a caller means.
            raise TypeError("encode() takes a sequence of texts, not a single string")
        out = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        if not texts:
            return out
        query = len(texts) <= _QUERY_TEXTS
        if query:
            encodings = [self._tokenizer.encode(text) for text in texts]
        else:
            encodings = self._tokenizer.encode_batch(list(texts))
        # A text of nothing but special and unknown tokens has no meaning to embed.
        order = sorted(
            (i for i, e in enumerate(encodings) if not self._special.issuperset(e.ids)),
            key=lambda i: len(encodings[i].ids),
        )
        session = self._session(1 if query else self._threads)
        start = 0
        while start < len(order):
            # Sorted ascending, so the last row is the widest: grow the batch while
            # rows x width stays within the token budget.
            end = start + 1
            while end < len(order) and (end + 1 - start) * len(encodings[order[end]].ids) <= (
                _BATCH_TOKENS
            ):
                end += 1
            rows = order[start:end]
            out[rows] = self._run(session, [encodings[i] for i in rows])
            start = end
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def _run(self, session: InferenceSession, encodings: list[Encoding]) -> npt.NDArray[np.float32]:
        width = max(len(encoding.ids) for encoding in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        try:
            (hidden,) = session.run([self._output], {k: feeds[k] for k in self._inputs})
        except Exception as exc:  # onnxruntime's own errors (bad input, out of memory)
            raise ModelError(f"the ONNX embedding model failed: {exc}") from exc
        weights = mask[:, :, None].astype(np.float32)
        pooled: npt.NDArray[np.float32] = (np.asarray(hidden) * weights).sum(axis=1) / weights.sum(
            axis=1
        )
        return pooled


def _usable_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _import_onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:
        raise ModelError(
            f"the ONNX embedding tier needs onnxruntime, which is not installed ({exc})",
            hint=_INSTALL_HINT,
        ) from exc
    return onnxruntime


def load_onnx_embedder(folder: Path, name: str, *, threads: int = 0) -> OnnxEmbedder:
    """Load an ONNX export; every failure is a :class:`ModelError` (no fallback)."""
    embedder = OnnxEmbedder(folder, name, threads=threads)
    logger.info(
        "embedding model: %s (ONNX, %d dimensions, %d tokens, %d thread(s) for batches)",
        name,
        embedder.dimensions,
        embedder.max_tokens,
        embedder.batch_threads,
    )
    return embedder
