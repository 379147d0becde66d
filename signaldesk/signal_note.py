"""The signal note's frontmatter: the names its writer and all of its readers share.

Triage writes these keys into every note it files (``pipeline.triage.note_render``); the
MCP server, the triage report and the captain's log read them back, from notes a
person may since have edited by hand, so reading is forgiving of shape.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = [
    "COMPOSITE_KEY",
    "DIMENSIONS",
    "HASH_KEY",
    "ID_KEY",
    "SIGNAL_TYPE",
    "score_number",
    "signal_scores",
    "weakest_score",
]

# `type:` of a filed signal note, wherever it lives (a person may move it).
SIGNAL_TYPE = "signal"
# The four scores, in the order they are shown; the composite weighs them.
DIMENSIONS: tuple[str, ...] = ("relevance", "actionability", "depth", "authority")
COMPOSITE_KEY = "composite"
# The item's id in the ledger, and the hash of the generated keys (edited by hand?).
ID_KEY = "signaldesk_id"
HASH_KEY = "signaldesk_hash"


def score_number(value: Any) -> float | None:
    """A score as written: a number, a numeric string, or ``{score|value: n}``; else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    elif isinstance(value, Mapping):
        for key in ("score", "value"):
            if key in value:
                return score_number(value[key])
        return None
    else:
        return None
    return number if math.isfinite(number) else None


def signal_scores(frontmatter: Mapping[str, Any]) -> dict[str, float]:
    """The composite and the four dimension scores a signal's frontmatter records.

    Tolerant of shape: top-level keys (``composite: 0.7``, ``relevance: 0.8``), a
    ``scores:`` mapping, and ``{score: 0.8, why: ...}`` values all work; ``score``
    stands for the composite when ``composite`` is absent.
    """
    nested = frontmatter.get("scores")
    sources: list[Mapping[str, Any]] = [frontmatter]
    if isinstance(nested, Mapping):
        sources.append(nested)
    found: dict[str, float] = {}
    names = ((COMPOSITE_KEY, (COMPOSITE_KEY, "score")), *((d, (d,)) for d in DIMENSIONS))
    for name, keys in names:
        number = next(
            (
                n
                for source in sources
                for key in keys
                if (n := score_number(source.get(key))) is not None
            ),
            None,
        )
        if number is not None:
            found[name] = number
    return found


def weakest_score(scores: Mapping[str, Any] | None) -> str | None:
    """``depth 0.12 (48 words, no headings)``: the lowest of the four scores of a stored
    score card (``{name: {value, reason}}``, as the ledger keeps it), with its reason;
    ``None`` when it holds none. Ties go to the first in :data:`DIMENSIONS`."""
    found: list[tuple[float, int, str]] = []
    for position, name in enumerate(DIMENSIONS):
        number = score_number((scores or {}).get(name))
        if number is not None:
            found.append((number, position, name))
    if not found:
        return None
    value, _, name = min(found)
    dim = (scores or {}).get(name)
    reason = dim.get("reason") if isinstance(dim, Mapping) else None
    return f"{name} {value:.2f}" + (f" ({reason})" if isinstance(reason, str) and reason else "")
