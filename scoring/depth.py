"""Depth: how much substance an item carries, for its length.

Capped shares of named features (length, structure, code, data, measurements, references,
the shape of a paper, being a primary source), plus a density share so that a short item
packed with versions, code or numbers (a 100-word advisory, a postmortem with figures) is
not judged by its length alone. Penalties then apply only where their condition holds: thin
text with nothing dense in it, a listicle or clickbait title, a title in capitals, and an
announcement (an event, team, governance, survey or brand announcement, or a link round-up:
:func:`~scoring.actionability.is_bare_announcement`). Every penalty that applied is in the
reason and in the features (``penalty_*`` = 1).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from signaldesk.scoring._calc import clamp, ramp
from signaldesk.scoring.actionability import is_bare_announcement
from signaldesk.scoring.keywords import KeywordMatcher
from signaldesk.scoring.records import DimensionScore
from signaldesk.scoring.text import TextView

__all__ = ["score_depth"]

_LISTICLE_TITLE = re.compile(
    r"^\s*(?:the\s+)?(?:top\s+)?\d{1,3}\s+(?:\S+\s+){0,3}?(?:things|ways|reasons|tips|tricks|"
    r"hacks|secrets|mistakes|facts|signs|gadgets|deals|trends|habits|lessons|ideas|"
    r"products|gifts|apps|tools|quotes|photos|moments)\b"
    r"|\b\d{1,3}\s+(?:best|must[- ]have|must[- ]see|essential|amazing|incredible)\b"
    r"|\bthings\s+(?:in\s+\w+\s+)?you\s+need\s+to\s+know\b|\bbest\s+\w+(?:\s+\w+)?\s+(?:of|for|in)"
    r"\s+(?:19|20)\d\d\b|\btrends\b.*\b(?:19|20)\d\d\b"
)
# Clickbait phrasing, counted in the title and the opening (token phrases: cheap to match).
_CLICKBAIT = KeywordMatcher(
    (
        "won't believe",
        "wont believe",
        "shocking",
        "mind-blowing",
        "mind blowing",
        "jaw-dropping",
        "one weird trick",
        "this one trick",
        "this one habit",
        "this one thing",
        "what happens next",
        "will blow your mind",
        "you need to see",
        "everyone is talking",
        "goes viral",
        "going viral",
        "insane",
        "must-see",
        "here's why",
        "heres why",
        "the truth about",
        "before it's too late",
        "changed my life",
        "game-changer",
        "game changer",
        "unbelievable",
        "secret to",
        "millionaire",
        "skyrocket*",
    )
)
_OPENING_TOKENS = 300


def _dense_units(view: TextView) -> float:
    """Pieces of hard information: code, versions, ids, fixes, measurements, table rows,
    names from code."""
    return (
        2.0 * min(view.code_blocks, 4)
        + 0.5 * min(view.prose.code_lines, 10)
        + 0.25 * min(view.code_lines, 24)
        + 0.5 * min(view.versions, 8)
        + 2.0 * min(view.cves, 3)
        + 2.0 * min(view.fixes, 2)
        + 0.7 * min(view.prose.measurements, 10)
        + 0.3 * min(view.table_rows, 10)
        + 0.5 * min(view.inline_code, 8)
        + 1.0 * min(view.identifiers, 10)
    )


def score_depth(view: TextView, is_primary: Callable[[str], bool]) -> DimensionScore:
    """Substance for its length; thin, listicle, clickbait or empty announcements score low.

    :param is_primary: tells whether a linked host is a primary source (docs, papers,
        standards, advisories).
    """
    prose = view.prose
    primary_links = sum(1 for host in set(view.links) if host != view.url_host and is_primary(host))
    dense = _dense_units(view)
    density = dense / max(view.words, 40) * 100  # hard facts per 100 words
    paper = prose.paper_shaped
    code = view.code_blocks > 0 or prose.code_lines >= 2
    parts = {
        # 40 words -> 0, 630 words -> full; a how-to's code says in 200 words what prose
        # needs 630 for (LABELLING.md: a keeper is kept "whatever the length").
        "length": 0.3 * ramp(view.log_words, 1.6, 2.3 if code else 2.8),
        "structure": 0.08 * min(view.headings, 4) / 4
        + 0.06 * min(view.bullets + view.numbered, 8) / 8,
        "code": 0.12 * min(view.code_blocks + view.prose.code_lines / 4, 3) / 3,
        "data": 0.06 * min(view.numbers, 15) / 15
        + (0.04 if view.table_rows >= 3 else 0.0)
        + 0.06 * min(prose.measurements, 4) / 4,
        "density": 0.18 * ramp(density, 1.0, 6.0) if view.words >= 30 else 0.0,
        "paper": 0.25 if paper else 0.0,
        "primary_links": 0.1 * min(primary_links, 4) / 4,
        "references": 0.05 if (view.references_section or view.citations >= 2) else 0.0,
    }
    value = sum(parts.values())
    listicle = bool(_LISTICLE_TITLE.search(view.title))
    clickbait = sum(_CLICKBAIT.count_tokens(view.title_tokens).values()) + min(
        sum(_CLICKBAIT.count_tokens(view.body_tokens[:_OPENING_TOKENS]).values()), 2
    )
    # Capitals count as shouting only when most of the title is in them (not "EXPLAIN
    # (ANALYZE, BUFFERS)" in an otherwise ordinary title) or with repeated "!".
    shouting = view.title_exclamations >= 2 or (
        view.title_caps_words >= 3 and view.title_caps_words * 2 > max(view.title_words, 1)
    )
    thin = view.words < 60 and dense < 3
    announcement = is_bare_announcement(view)
    penalties: list[tuple[str, float, str]] = []
    if thin:
        penalties.append(("thin", 0.5, f"thin ({view.words} words, nothing dense)"))
    if listicle:
        penalties.append(("listicle", 0.55, "listicle title"))
    if clickbait:
        factor = 0.6 ** min(clickbait, 2)
        penalties.append(("clickbait", factor, f"clickbait phrasing x{clickbait}"))
    if shouting:
        penalties.append(("shouting", 0.8, "shouting title"))
    if announcement:
        # At 0.55 (the first choice) an on-topic recap from a project's own blog still
        # passed on relevance and authority alone.
        penalties.append(("announcement", 0.3, "an announcement (event, team, survey)"))
    for _, factor, _ in penalties:
        value *= factor

    features = {
        "words": float(view.words),
        "headings": float(view.headings),
        "list_items": float(view.bullets + view.numbered),
        "code_blocks": float(view.code_blocks),
        "code_lines": float(prose.code_lines),
        "numbers": float(view.numbers),
        "measurements": float(prose.measurements),
        "table_rows": float(view.table_rows),
        "dense_units": round(dense, 2),
        "density_per_100_words": round(density, 2),
        "paper_marks": float(prose.paper),
        "announcement_marks": float(prose.announcement),
        "primary_links": float(primary_links),
        "citations": float(view.citations),
        "listicle": float(listicle),
        "clickbait": float(clickbait),
        **{f"penalty_{name}": 0.0 for name in ("thin", "listicle", "clickbait", "shouting")},
        "penalty_announcement": 0.0,
    }
    for name, _, _ in penalties:
        features[f"penalty_{name}"] = 1.0
    shape = [f"{view.words} words"]
    if view.headings:
        shape.append(f"{view.headings} headings")
    if view.bullets + view.numbered:
        shape.append(f"{view.bullets + view.numbered} list items")
    if view.code_blocks:
        shape.append(f"{view.code_blocks} code blocks")
    if prose.code_lines:
        shape.append(f"{prose.code_lines} code lines")
    if prose.measurements:
        shape.append(f"{prose.measurements} measurements")
    if parts["density"] >= 0.06:
        shape.append(f"dense ({density:.1f} facts per 100 words)")
    if paper:
        shape.append("shaped like a paper (abstract, method, results)")
    if primary_links:
        shape.append(f"{primary_links} primary-source links")
    if parts["references"]:
        shape.append("references")
    reason = ", ".join(shape)
    if penalties:
        reason += "; penalised: " + ", ".join(text for _, _, text in penalties)
    return DimensionScore(value=round(clamp(value), 4), reason=reason, features=features)
