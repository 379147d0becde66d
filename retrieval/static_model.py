"""A Model2Vec model read straight from its folder: the token vectors and the tokenizer.

Trigger: every one-shot `signaldesk search` loads the model to embed its query,
and ``model2vec.StaticModel`` costs more than the lookup it performs: importing
model2vec pulls in joblib, multiprocessing and tqdm (~70-90 ms), and its
constructor deep-copies the tokenizer and sorts the vocabulary (~40 ms). Why:
a static model's vector for a text is only the mean of its tokens' rows (after
an optional token remapping and per-token weights), which numpy and the
``tokenizers`` library do directly. Outcome: :class:`StaticModel` gives the
vectors ``model2vec.StaticModel.encode(texts, normalize=False)`` gives, value
for value (tests/test_embedder.py compares them on the bundled model and on
models with weights, a token mapping and float vectors), from the files of
model2vec's own folder layout (``config.json``, ``model.safetensors`` with
``embeddings`` and optional ``weights`` / ``mapping``, ``tokenizer.json``). What
model2vec does, and so what this reproduces: texts are cut to ``max_length``
times the median token length in characters, tokenized without special tokens
and truncated to ``max_length`` tokens, the unknown token is dropped, and a text
with no tokens gives a zero row.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from signaldesk.retrieval.static_tokenizer import TokenizerFile

if TYPE_CHECKING:
    import numpy.typing as npt
    from tokenizers import Tokenizer

__all__ = ["DEFAULT_MAX_LENGTH", "MODEL_FILES", "StaticModel", "read_folder"]

MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")
"""The files of model2vec's folder layout; a cached hub snapshot must hold all three."""

DEFAULT_MAX_LENGTH = 512
"""model2vec's default ``max_length`` when the config names none."""


class StaticModel:
    """Token vectors, the tokenizer and the encoding settings of one static model."""

    def __init__(
        self,
        embedding: npt.NDArray[Any],
        tokenizers: TokenizerFile,
        *,
        weights: npt.NDArray[Any] | None,
        mapping: npt.NDArray[Any] | None,
        max_length: int | None,
    ) -> None:
        self.embedding = embedding
        self.weights = weights
        self.token_mapping = mapping
        self.max_length = max_length
        self._tokenizers = tokenizers
        self._unk: tuple[Tokenizer, int | None] | None = None
        self._tokens: tuple[str, ...] | None = None
        self._median_length: int | None = None
        # An int8 model's means are float32; other dtypes keep their own.
        self._out_dtype = np.dtype(np.float32) if embedding.dtype == np.int8 else embedding.dtype

    @property
    def dim(self) -> int:
        """Length of each vector."""
        return int(self.embedding.shape[1])

    @property
    def tokens(self) -> tuple[str, ...]:
        """The vocabulary in token-id order (read on first use: the fingerprint needs it)."""
        if self._tokens is None:
            vocab = self._tokenizers.whole().get_vocab()
            self._tokens = tuple(sorted(vocab, key=vocab.__getitem__))
        return self._tokens

    def _char_limit(self, texts: Sequence[str]) -> int | None:
        """How many characters of a text are kept (``None``: all of these texts whole)."""
        if self.max_length is None:
            return None
        # Every token has at least one character, so the limit is at least
        # max_length: shorter texts never need the vocabulary's median.
        if all(len(t) <= self.max_length for t in texts):
            return None
        if self._median_length is None:
            self._median_length = int(np.median([len(token) for token in self.tokens]))
        return self.max_length * self._median_length

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids as the model reads them."""
        limit = self._char_limit(texts)
        cut = [t[:limit] for t in texts] if limit is not None else list(texts)
        tokenizer = self._tokenizers.for_texts(cut)
        encodings = tokenizer.encode_batch_fast(cut, add_special_tokens=False)
        unk = self._unknown_id(tokenizer)
        if unk is None:
            return [e.ids for e in encodings]
        return [[i for i in e.ids if i != unk] for e in encodings]

    def _unknown_id(self, tokenizer: Tokenizer) -> int | None:
        if self._unk is None or self._unk[0] is not tokenizer:
            self._unk = (tokenizer, _unknown_id(tokenizer))
        return self._unk[1]

    def encode(self, texts: Sequence[str]) -> npt.NDArray[Any]:
        """The mean token vector of each text (not normalised), one row per text."""
        ids = self.token_ids(texts)
        out = np.zeros((len(ids), self.dim), dtype=self._out_dtype)
        if self.token_mapping is None and self.weights is None:
            # Texts of one length are averaged together, as one fancy-indexed block.
            by_length: dict[int, list[int]] = {}
            for row, token_ids in enumerate(ids):
                if token_ids:
                    by_length.setdefault(len(token_ids), []).append(row)
            for rows in by_length.values():
                block = np.array([ids[r] for r in rows], dtype=np.int64)
                out[rows] = self.embedding[block].mean(axis=1)
            return out
        for row, token_ids in enumerate(ids):
            if token_ids:
                at = token_ids if self.token_mapping is None else self.token_mapping[token_ids]
                vectors = self.embedding[at]
                if self.weights is not None:
                    vectors = vectors * self.weights[token_ids][:, None]
                out[row] = vectors.mean(axis=0)
        return out


def _unknown_id(tokenizer: Tokenizer) -> int | None:
    """The id of the tokenizer's unknown token, which a static model skips."""
    model = tokenizer.model
    if hasattr(model, "unk_token"):  # WordPiece, BPE, WordLevel
        token = model.unk_token
        return None if token is None else tokenizer.token_to_id(token)
    unk = json.loads(tokenizer.to_str())["model"].get("unk_id")  # Unigram
    return None if unk is None else int(unk)


def read_folder(folder: Path) -> StaticModel | None:
    """The model in ``folder`` (model2vec's layout), or ``None`` for any other layout.

    :raises ValueError: the vocabulary and the vectors do not fit together.
    """
    config_path, tensors_path, tokenizer_path = (folder / name for name in MODEL_FILES)
    if not (config_path.is_file() and tensors_path.is_file() and tokenizer_path.is_file()):
        return None
    tensors = _mapped_tensors(tensors_path)
    if tensors is None:
        tensors = _read_tensors(tensors_path)
    embedding = tensors.get("embeddings")
    if embedding is None:
        return None
    config = json.loads(config_path.read_text(encoding="utf-8"))
    if not isinstance(config, dict):
        return None
    max_length = config.get("max_length", DEFAULT_MAX_LENGTH)
    max_length = None if max_length is None else int(max_length)
    tokenizers = TokenizerFile(tokenizer_path.read_text(encoding="utf-8"), max_length)
    mapping = tensors.get("mapping")
    if mapping is None and embedding.shape[0] != tokenizers.vocab_size:
        raise ValueError(
            f"the vocabulary has {tokenizers.vocab_size} tokens "
            f"but there are {embedding.shape[0]} vectors"
        )
    return StaticModel(
        embedding,
        tokenizers,
        weights=tensors.get("weights"),
        mapping=mapping,
        max_length=max_length,
    )


_WANTED = ("embeddings", "weights", "mapping")
# safetensors' dtype names (all little-endian) as numpy dtypes; others (bf16) are read
# by the safetensors library.
_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}


def _mapped_tensors(path: Path) -> dict[str, npt.NDArray[Any]] | None:
    """The tensors of a safetensors file as read-only arrays over a memory map.

    Trigger: a one-shot search reads a handful of the model's rows, while
    ``safe_open(...).get_tensor`` copies all 7.5 MB of the bundled model first
    (~10-15 ms). Why: the format is a little-endian u64 header length, a JSON
    header (each tensor's dtype, shape and byte range) and the raw row-major
    data, so numpy can view the bytes where they lie. Outcome: the same values
    (the very bytes); pages are read when touched. ``None`` (read with the
    safetensors library instead) for anything this does not recognise.
    """
    import mmap

    try:
        with path.open("rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            header = json.loads(handle.read(size))
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    if not isinstance(header, dict):
        return None
    start = 8 + size
    out: dict[str, npt.NDArray[Any]] = {}
    for name in _WANTED:
        info = header.get(name)
        if info is None:
            continue
        try:
            dtype = np.dtype(_DTYPES[info["dtype"]])
            shape = tuple(int(n) for n in info["shape"])
            begin, end = (int(n) for n in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            return None
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != count * dtype.itemsize or start + end > len(mapped):
            return None
        array = np.frombuffer(mapped, dtype=dtype, count=count, offset=start + begin)
        out[name] = array.reshape(shape)
    return out


def _read_tensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as tensors:
        return {name: tensors.get_tensor(name) for name in _WANTED if name in tensors.keys()}  # noqa: SIM118 - safe_open is not a mapping
