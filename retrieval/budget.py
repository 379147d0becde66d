"""Token budgets: how much text a caller gets back.

Tokens are estimated at about four characters each (the usual rule of thumb
for English with BPE tokenizers; no tokenizer is loaded just to count).
Two ways to fit a budget:

* :func:`take` (``"drop"``, for tools with a hard output cap such as MCP):
  results are taken greedily in rank order; the first one that does not fit is
  cut at a word boundary and ends with ``...`` rather than being dropped, and
  nothing is added after it;
* :func:`fit_all` (``"trim"``, for a person who asked for ``--limit N``): every
  result is kept and the longest texts are shortened until the total fits.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "CHARS_PER_TOKEN",
    "ELLIPSIS",
    "MIN_EXCERPT_CHARS",
    "BudgetFit",
    "cut",
    "estimate_tokens",
    "fit_all",
    "take",
]

BudgetFit = Literal["drop", "trim"]

CHARS_PER_TOKEN = 4
ELLIPSIS = "..."
# Below this many characters a cut excerpt says nothing useful, so the
# remaining budget is left unused instead (the first result is always kept).
MIN_EXCERPT_CHARS = 80


def estimate_tokens(text: str) -> int:
    """Approximate token count of ``text``."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def cut(text: str, max_chars: int) -> str:
    """``text`` shortened to at most ``max_chars`` characters ending in ``...``.

    The cut falls on the last whitespace when there is one in the final fifth,
    so words are not split.
    """
    if len(text) <= max_chars:
        return text
    room = max(0, max_chars - len(ELLIPSIS))
    head = text[:room]
    space = head.rfind(" ")
    if space >= room * 4 // 5:
        head = head[:space]
    return head.rstrip() + ELLIPSIS


def take(texts: list[str], max_tokens: int) -> list[str]:
    """The texts that fit ``max_tokens``, in order, the last one possibly cut.

    The first text always appears (cut if it alone exceeds the budget).
    """
    budget = max(1, max_tokens) * CHARS_PER_TOKEN
    out: list[str] = []
    for text in texts:
        if len(text) <= budget:
            out.append(text)
            budget -= len(text)
            continue
        if not out or budget >= MIN_EXCERPT_CHARS:
            out.append(cut(text, max(budget, len(ELLIPSIS) + 1)))
        break
    return out


def fit_all(texts: list[str], max_tokens: int) -> list[str]:
    """Every text, in order, the longest shortened (with ``...``) so the total fits.

    The budget is shared out like water: a text shorter than an equal share keeps
    all of it and leaves the rest to the others. No text is cut below
    :data:`MIN_EXCERPT_CHARS` (its whole length if shorter), so with many results
    and a tiny budget the total may exceed it: the number of results wins.
    """
    if not texts:
        return []
    budget = max(1, max_tokens) * CHARS_PER_TOKEN
    if sum(len(t) for t in texts) <= budget:
        return list(texts)
    # The largest per-text cap such that the capped lengths fit the budget.
    lengths = sorted(len(t) for t in texts)
    remaining, cap = budget, 0
    for i, length in enumerate(lengths):
        share = remaining // (len(lengths) - i)
        if length <= share:
            remaining -= length
            continue
        cap = share
        break
    cap = max(cap, MIN_EXCERPT_CHARS)
    return [t if len(t) <= cap else cut(t, cap) for t in texts]
