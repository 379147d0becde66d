"""Counts in the words a person reads: ``1 open loop``, ``2 open loops``."""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: int, singular: str, many: str | None = None) -> str:
    """``count`` and the noun in the right number (``many``: an irregular plural)."""
    return f"{count} {singular if count == 1 else many or singular + 's'}"
