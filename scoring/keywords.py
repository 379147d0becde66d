"""Whole-word keyword and phrase matching, many terms in one pass.

A term is matched case-insensitively as a whole word or phrase; a trailing ``*``
matches any ending (``vulnerabilit*`` finds "vulnerability" and
"vulnerabilities"). All terms go into one compiled alternation, longest first, so
a text is scanned once however many terms there are, and "claude code" wins over
"claude" where both would match.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

__all__ = ["KeywordMatcher", "normalise_term"]


def normalise_term(term: str) -> str:
    """The canonical form of a configured term: trimmed, lower-case, inner spaces collapsed."""
    return " ".join(term.lower().split())


def _pattern(term: str) -> str:
    if term.endswith("*"):
        return re.escape(term[:-1]) + r"[\w\-.']*?"
    return re.escape(term)


class KeywordMatcher:
    """Counts occurrences of a fixed set of terms in lower-cased text."""

    def __init__(self, terms: Iterable[str]) -> None:
        unique = [t for t in dict.fromkeys(normalise_term(t) for t in terms) if t.strip("*")]
        self.terms: tuple[str, ...] = tuple(unique)
        self._index = {term: i for i, term in enumerate(self.terms)}
        order = sorted(range(len(self.terms)), key=lambda i: -len(self.terms[i]))
        self._group_term = [order[g] for g in range(len(order))]
        if order:
            alternation = "|".join(f"({_pattern(self.terms[i])})" for i in order)
            # Spaces in a phrase match any run of whitespace (line breaks in prose).
            alternation = alternation.replace(r"\ ", r"\s+")
            self._regex: re.Pattern[str] | None = re.compile(
                rf"(?<![\w])(?:{alternation})(?![\w])"
            )
        else:
            self._regex = None

    def count(self, lowered: str) -> Counter[str]:
        """How often each term occurs in ``lowered`` (text already lower-cased)."""
        found: Counter[str] = Counter()
        if self._regex is None or not lowered:
            return found
        for match in self._regex.finditer(lowered):
            group = match.lastindex
            if group is not None:
                found[self.terms[self._group_term[group - 1]]] += 1
        return found

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and normalise_term(term) in self._index
