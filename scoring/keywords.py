"""Whole-word keyword and phrase matching over tokens, many terms in one pass.

Text and terms are split the same way: runs of word characters, and single
punctuation characters (``node.js`` -> ``node``, ``.``, ``js``; ``c++`` -> ``c``,
``+``, ``+``), whitespace dropped. A term matches a run of equal tokens, so
phrases match across line breaks and partial words never match. A trailing ``*``
makes the last token a prefix (``vulnerabilit*`` finds "vulnerabilities"); after
punctuation it stands for any one word (``cve-*`` finds "cve-2024-3094").

Every term that matches at a position counts, so one matcher built from several
overlapping term lists (the profile, the muted words, the domain rules) serves
them all. One pass costs a dictionary lookup per token (tokens are memoised),
whatever the number of terms; a compiled regular-expression alternation of a few
hundred terms was ~100x slower.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["FieldCounts", "KeywordMatcher", "normalise_term", "tokens"]

_TOKEN = re.compile(r"\w+|[^\w\s]")


def normalise_term(term: str) -> str:
    """The canonical form of a configured term: trimmed, lower-case, inner spaces collapsed."""
    return " ".join(term.lower().split())


def tokens(lowered: str) -> list[str]:
    """Split lower-cased text into word and punctuation tokens (a typographic apostrophe
    counts as a plain one, so "won\u2019t" matches the term "won't")."""
    return _TOKEN.findall(lowered.replace("\u2019", "'"))


# A compiled term: its tokens, whether the last one is a prefix, whether one more
# word of any spelling must follow (``cve-*``), and the term as configured.
_Compiled = tuple[tuple[str, ...], bool, bool, str]


def _compile(term: str) -> _Compiled | None:
    prefix = term.endswith("*")
    body = term[:-1] if prefix else term
    parts = tuple(tokens(body))
    if not parts:
        return None
    any_word = prefix and not body[-1:].isalnum() and body[-1:] != "_"
    return parts, prefix and not any_word, any_word, term


@dataclass(frozen=True, slots=True)
class FieldCounts:
    """Term counts in an item's title, tags and body."""

    title: Counter[str]
    tags: Counter[str]
    body: Counter[str]


_EMPTY: tuple[tuple[str, ...], tuple[_Compiled, ...]] = ((), ())
# Distinct tokens remembered per matcher; past this the memo starts afresh.
_MEMO_LIMIT = 200_000


class KeywordMatcher:
    """Counts occurrences of a fixed set of terms in tokenised text.

    Every term that matches at a position is counted ("claude code" also counts
    "claude"), so one matcher can serve several term lists that overlap.
    """

    def __init__(self, terms: Iterable[str]) -> None:
        unique = [t for t in dict.fromkeys(normalise_term(t) for t in terms) if t.strip("* ")]
        self.terms: tuple[str, ...] = tuple(unique)
        self._singles: dict[str, list[str]] = {}
        self._prefixes: dict[str, list[str]] = {}
        self._multi: dict[str, list[_Compiled]] = {}
        for term in self.terms:
            compiled = _compile(term)
            if compiled is None:
                continue
            parts, prefix_last, any_word, _ = compiled
            if len(parts) == 1 and not any_word:
                table = self._prefixes if prefix_last else self._singles
                table.setdefault(parts[0], []).append(term)
            else:
                self._multi.setdefault(parts[0], []).append(compiled)
        self._prefix_lengths = sorted({len(p) for p in self._prefixes})
        # Token -> (terms it matches alone, multi-token terms that start with it).
        self._memo: dict[str, tuple[tuple[str, ...], tuple[_Compiled, ...]]] = {}

    def _entry(self, tok: str) -> tuple[tuple[str, ...], tuple[_Compiled, ...]]:
        singles = list(self._singles.get(tok, ()))
        for length in self._prefix_lengths:
            if length > len(tok):
                break
            singles.extend(self._prefixes.get(tok[:length], ()))
        multi = tuple(self._multi.get(tok, ()))
        entry = (tuple(singles), multi) if singles or multi else _EMPTY
        if len(self._memo) >= _MEMO_LIMIT:
            self._memo.clear()
        self._memo[tok] = entry
        return entry

    def count(self, lowered: str) -> Counter[str]:
        """How often each term occurs in ``lowered`` (text already lower-cased)."""
        return self.count_tokens(tokens(lowered))

    def count_tokens(self, toks: Sequence[str]) -> Counter[str]:
        """How often each term occurs in ``toks`` (from :func:`tokens`)."""
        found: Counter[str] = Counter()
        memo = self._memo
        n = len(toks)
        for i, tok in enumerate(toks):
            entry = memo.get(tok)
            if entry is None:
                entry = self._entry(tok)
            if entry is _EMPTY:
                continue
            singles, multi = entry
            for term in singles:
                found[term] += 1
            for parts, prefix_last, any_word, term in multi:
                if i + len(parts) + any_word <= n and _matches(
                    toks, i, parts, prefix_last, any_word
                ):
                    found[term] += 1
        return found

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and normalise_term(term) in self.terms


def _matches(
    toks: Sequence[str], i: int, parts: tuple[str, ...], prefix_last: bool, any_word: bool
) -> bool:
    last = len(parts) - 1
    for k, part in enumerate(parts):
        tok = toks[i + k]
        if k == last and prefix_last:
            if not tok.startswith(part):
                return False
        elif tok != part:
            return False
    return not any_word or toks[i + len(parts)][:1].isalnum()
