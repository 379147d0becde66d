"""A static model's query tokenizer (retrieval/static_tokenizer.py): the cut-down
WordPiece tokenizer a one-shot search builds for its query gives the whole tokenizer's
ids, text for text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from signaldesk.retrieval.embedder import bundled_model_path
from signaldesk.retrieval.static_model import read_folder
from signaldesk.retrieval.static_tokenizer import TokenizerFile

REPO = Path(__file__).resolve().parent.parent

EDGES = [
    "",
    "   ",
    "vector database",
    "[PAD] obsidian plugin",  # an added token in the raw text
    "x[UNK]y [PAD][PAD]",
    "[pad] is not the token",
    "Héllo wörld, naïve café ÅNGSTRÖM",  # accents stripped by the normaliser
    "日本語のテキスト 中文 한국어",  # CJK characters split one by one
    "don't stop-believing!!! 123abc",
    "supercalifragilisticexpialidocious",
    "a" * 150,  # longer than a word may be: the unknown token
    "x" * 99 + " " + "y" * 101,
    "emoji 🚀🔥 and Straße ﬁ",
    "\x00\ufffd control\t\ttab",
    "word " * 600,  # truncated to max_length tokens
]


def _texts(shared_data: Path) -> list[str]:
    """Real queries (SciFact's claims, the vault questions) and corpus sentences."""
    texts = list(EDGES)
    with (shared_data / "scifact" / "queries.jsonl").open(encoding="utf-8") as handle:
        texts += [json.loads(line)["text"] for line in handle][:400]
    with (shared_data / "scifact" / "corpus.jsonl").open(encoding="utf-8") as handle:
        for _, line in zip(range(150), handle, strict=False):
            texts += json.loads(line)["text"].split(". ")[:3]
    with (REPO / "bench" / "vault_questions" / "queries.jsonl").open(encoding="utf-8") as handle:
        texts += [json.loads(line)["text"] for line in handle]
    return texts


def test_a_query_gets_the_whole_tokenizers_ids(shared_data: Path) -> None:
    text = (bundled_model_path() / "tokenizer.json").read_text(encoding="utf-8")
    whole = TokenizerFile(text, 512).whole()
    texts = _texts(shared_data)
    assert len(texts) > 800
    for query in texts:
        cut = TokenizerFile(text, 512).for_texts([query])
        assert cut.get_vocab_size() < 2000 or query == EDGES[-1]
        expected = whole.encode(query, add_special_tokens=False).ids
        assert cut.encode(query, add_special_tokens=False).ids == expected, query


def test_the_bundled_model_encodes_a_query_as_its_whole_tokenizer_does() -> None:
    """The first text encoded alone takes the cut-down tokenizer, later ones and batches
    the whole one: the vectors are the same."""
    fresh = read_folder(bundled_model_path())
    reference = read_folder(bundled_model_path())
    assert fresh is not None and reference is not None
    queries = ["how do I undo a kubernetes rollout", "Sourdough starter feeding", "[UNK] ?!"]
    batch = reference.encode(queries)  # a batch: the whole tokenizer
    for i, query in enumerate(queries):
        assert (fresh.encode([query]) == batch[i]).all(), query
    assert fresh.tokens == reference.tokens


def test_other_tokenizers_and_batches_are_built_whole(tmp_path: Path) -> None:
    level = Tokenizer(models.WordLevel({"[UNK]": 0, "alpha": 1, "beta": 2}, unk_token="[UNK]"))
    level.pre_tokenizer = pre_tokenizers.Whitespace()
    words = TokenizerFile(level.to_str(), None)
    first = words.for_texts(["alpha beta"])
    assert first is words.whole()
    text = (bundled_model_path() / "tokenizer.json").read_text(encoding="utf-8")
    pieces = TokenizerFile(text, 512)
    assert pieces.for_texts(["a", "b"]) is pieces.whole()  # a batch
    again = TokenizerFile(text, 512)
    assert again.for_texts(["a"]) is not again.whole()
    assert again.for_texts(["b"]) is again.whole()  # a second text: a long-lived process


def test_the_vocabulary_size_is_the_whole_tokenizers() -> None:
    text = (bundled_model_path() / "tokenizer.json").read_text(encoding="utf-8")
    assert TokenizerFile(text, 512).vocab_size == Tokenizer.from_str(text).get_vocab_size()
    with pytest.raises(ValueError):
        TokenizerFile("not json", 512)
