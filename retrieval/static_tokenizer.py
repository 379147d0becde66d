"""A static model's tokenizer, read from its ``tokenizer.json`` once: the whole tokenizer
for batches, and for the first text encoded alone (a one-shot search's query) one that
holds only the vocabulary entries that text can use.

Trigger: building the whole tokenizer parses and indexes its vocabulary (29,525
WordPiece entries in the bundled model: ~25-35 ms, most of loading the model), while a
one-shot `signaldesk search` tokenizes one short query (issue 15). Why it may:
WordPiece cuts a word (after normalising and pre-tokenising) greedily into its longest
pieces found in the vocabulary, each a substring of the word, those after the first
with the continuing prefix (``##``); it looks up nothing else but the unknown token.
A WordPiece tokenizer built by the same library from the same file, with its vocabulary
cut down to the entries that are such substrings of the text's words (their ids kept),
the unknown token and the added tokens, therefore gives the same ids: the same
normaliser, pre-tokeniser, added tokens and truncation do the rest. Outcome: ~0.1 ms
to build one for a query; any batch, and any later text, gets the whole tokenizer, built
once. A tokenizer of another kind (BPE, Unigram, WordLevel) is always built whole.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["TokenizerFile"]


class TokenizerFile:
    """The tokenizer of one ``tokenizer.json`` (its text), built as the texts need it.

    :param max_length: tokens kept per text (``None``: all), as the model truncates.
    :raises ValueError: the text is not JSON.
    """

    def __init__(self, text: str, max_length: int | None) -> None:
        self._text = text
        self._max_length = max_length
        self._whole: Tokenizer | None = None
        self._spec = _word_piece_spec(json.loads(text))
        self._cut_used = False

    @property
    def vocab_size(self) -> int:
        """How many token ids there are (those of the vocabulary and the added tokens)."""
        if self._spec is None:
            return self.whole().get_vocab_size()
        ids = set(self._spec["model"]["vocab"].values())
        ids.update(token["id"] for token in self._spec.get("added_tokens") or ())
        return len(ids)

    def whole(self) -> Tokenizer:
        """The whole tokenizer (built on first use)."""
        if self._whole is None:
            from tokenizers import Tokenizer

            self._whole = self._configured(Tokenizer.from_str(self._text))
        return self._whole

    def for_texts(self, texts: Sequence[str]) -> Tokenizer:
        """A tokenizer that gives ``texts`` the whole one's ids: a cut-down one for the
        first single text of a WordPiece model, else the whole one."""
        if self._whole is not None or self._spec is None or len(texts) != 1 or self._cut_used:
            return self.whole()
        self._cut_used = True  # a process that embeds twice is a long-lived one
        return self._cut_for(texts[0])

    def _cut_for(self, text: str) -> Tokenizer:
        from tokenizers import Tokenizer

        assert self._spec is not None
        model: dict[str, Any] = self._spec["model"]
        vocab: dict[str, int] = model["vocab"]
        unk: str = model["unk_token"]
        prefix: str = model.get("continuing_subword_prefix") or ""
        shell = Tokenizer.from_str(_with_vocab(self._spec, {unk: vocab[unk]}))
        normalised = shell.normalizer.normalize_str(text) if shell.normalizer else text
        if shell.pre_tokenizer is not None:
            words = [word for word, _ in shell.pre_tokenizer.pre_tokenize_str(normalised)]
        else:
            words = [normalised]
        # The added tokens are matched in the raw text before anything else, and the
        # library finds their ids in the vocabulary: they stay.
        kept = {unk: vocab[unk]}
        for token in self._spec.get("added_tokens") or ():
            content = token.get("content")
            if isinstance(content, str) and content in vocab:
                kept[content] = vocab[content]
        for word in words:
            for start in range(len(word)):
                for end in range(start + 1, len(word) + 1):
                    piece = word[start:end] if start == 0 else prefix + word[start:end]
                    found = vocab.get(piece)
                    if found is not None:
                        kept[piece] = found
        return self._configured(Tokenizer.from_str(_with_vocab(self._spec, kept)))

    def _configured(self, tokenizer: Tokenizer) -> Tokenizer:
        tokenizer.no_padding()
        if self._max_length is None:
            tokenizer.no_truncation()
        else:
            tokenizer.enable_truncation(self._max_length)
        return tokenizer


def _word_piece_spec(spec: Any) -> dict[str, Any] | None:
    """``spec`` when it is a WordPiece tokenizer this module can cut down, else ``None``."""
    if not isinstance(spec, dict):
        return None
    model = spec.get("model")
    if not isinstance(model, dict) or model.get("type") != "WordPiece":
        return None
    vocab, unk = model.get("vocab"), model.get("unk_token")
    if not (isinstance(vocab, dict) and isinstance(unk, str) and unk in vocab):
        return None
    return spec


def _with_vocab(spec: dict[str, Any], vocab: dict[str, int]) -> str:
    return json.dumps({**spec, "model": {**spec["model"], "vocab": vocab}})
