"""Token budgets: every tool's output is capped (about 4 characters a token).

A whole excerpt is worth more to a model than none, so text is cut short with
``...`` at a line or word boundary rather than dropped.
"""

from __future__ import annotations

__all__ = ["CHARS_PER_TOKEN", "ELLIPSIS", "cap_text", "estimate_tokens", "token_chars"]

CHARS_PER_TOKEN = 4
ELLIPSIS = "..."


def token_chars(max_tokens: int) -> int:
    """The character budget that ``max_tokens`` buys."""
    return max(0, max_tokens) * CHARS_PER_TOKEN


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` is counted as (rounded up, so that a budget is never exceeded)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def cap_text(text: str, max_chars: int) -> str:
    """``text`` if it fits in ``max_chars``, otherwise its start cut at a boundary plus ``...``.

    The result, ellipsis included, is never longer than ``max_chars``.
    """
    if len(text) <= max_chars:
        return text
    room = max_chars - len(ELLIPSIS)
    if room <= 0:
        return ELLIPSIS[: max(0, max_chars)]
    head = text[:room]
    # Prefer a paragraph, then a line, then a word boundary in the last fifth of the room.
    floor = room * 4 // 5
    for sep in ("\n\n", "\n", " "):
        cut = head.rfind(sep)
        if cut >= floor:
            head = head[:cut]
            break
    return head.rstrip() + ELLIPSIS
