"""What an answer that is empty or cut short says, so that the model's next call can do
better: which filters it gave, and whether a bigger ``limit`` would help."""

from __future__ import annotations

__all__ = ["more_message", "nothing_message"]


def nothing_message(head: str, advice: str = "", **filters: object) -> str:
    """Why an answer is empty, naming the filters the call gave: a model drops the one
    that is wrong sooner when it sees what it asked for (``domain='securty'``)."""
    given = ", ".join(
        f"{name}={value!r}" for name, value in filters.items() if value not in (None, "")
    )
    steps = [advice] if advice else []
    if given:
        head += f" with {given}"
        steps.append("drop or change a filter")
    return f"{head}: {', or '.join(steps)}." if steps else f"{head}."


def more_message(
    noun: str, kept: int, limit: int, most: int, truncated: bool, narrow: str
) -> str | None:
    """How to get the entries a list answer left out (``None``: nothing was left out).

    A list stops at ``limit`` or, before that, at the answer's size budget; raising
    ``limit`` only helps in the first case, and not at all once it is ``most``.
    """
    if not truncated:
        return None
    if kept < limit:
        return (
            f"more {noun} matched than fit in one answer; narrow the list with {narrow} "
            "to see the rest"
        )
    if limit < most:
        return f"more {noun} matched: raise limit (at most {most}) or narrow with {narrow}"
    return f"more {noun} matched than limit={most}; narrow the list with {narrow}"
