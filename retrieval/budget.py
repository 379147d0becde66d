"""Token budgets: how much text a caller gets back.

Tokens are estimated at about four characters each (the usual rule of thumb
for English with BPE tokenizers; no tokenizer is loaded just to count).
Results are taken greedily in rank order; the first one that does not fit is
cut at a word boundary and ends with ``...`` rather than being dropped, and
nothing is added after it.
"""

from __future__ import annotations

__all__ = ["CHARS_PER_TOKEN", "ELLIPSIS", "MIN_EXCERPT_CHARS", "cut", "estimate_tokens", "take"]

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
