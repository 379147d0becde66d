"""Text as the keyword index sees it.

FTS5's unicode61 tokenizer splits on spaces and punctuation, which leaves a run
of Chinese or Japanese characters as one giant token that no query word equals.
Splitting such runs into overlapping bigrams on both the indexed side and the
query side makes any two-character word findable, the usual CJK approach.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["index_text", "name_key"]

# Han, Hiragana, Katakana, Hangul syllables and jamo, CJK symbols.
_CJK_RUN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]+"
)


def _bigrams(run: str) -> str:
    if len(run) == 1:
        return run
    return " ".join(run[i : i + 2] for i in range(len(run) - 1))


def index_text(text: str) -> str:
    """``text`` with every CJK run replaced by its space-separated bigrams."""
    return _CJK_RUN.sub(lambda m: f" {_bigrams(m.group(0))} ", text)


_NOT_WORD = re.compile(r"[^\w]+|_+")


def name_key(text: str) -> str:
    """The form in which a title, alias or file name is compared with a whole query.

    Case, accents' composition, punctuation, emoji and spacing are ignored:
    ``"🗂️ Obsidian Git!"`` and ``"obsidian-git"`` both become ``"obsidian git"``.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_NOT_WORD.sub(" ", folded).split())
