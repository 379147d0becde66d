"""Actionability and depth: what a reader can do with an item, and how much is in it.

Both are sums of named features of the text (see :mod:`scoring.text`), each with a
cap, so that one feature alone cannot carry the score and the reason can list what
counted. Actionability saturates its sum; depth adds capped shares and then applies
penalties for thin, listicle or clickbait-shaped content.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from signaldesk.scoring._calc import clamp, ramp, saturate
from signaldesk.scoring.keywords import KeywordMatcher
from signaldesk.scoring.records import DimensionScore
from signaldesk.scoring.text import TextView

__all__ = ["score_actionability", "score_depth"]

_HOW_TO_TITLE = re.compile(
    r"\bhow\s+(?:to|i|we)\b|\bguide\b|\btutorial\b|\bstep[- ]by[- ]step\b|\bgetting\s+started\b"
    r"|\bwalkthrough\b|\bmigrat\w*|\bupgrad\w*|\bset(?:ting)?\s+up\b|\bconfigur\w*|\bcheat\s*sheet\b"
    r"|\binstall\w*|\bfix(?:ing)?\b|\bdebug\w*"
)
_RELEASE_TITLE = re.compile(
    r"\brelease[sd]?\b|\breleasing\b|\bannounc\w*|\bversion\b|\bchangelog\b|\bv?\d+\.\d+"
    r"|\bnow\s+available\b|\bwhat'?s\s+new\b|\bsunset\b|\bdeprecat\w*|\bend\s+of\s+life\b"
)
# Phrases of release notes that tell the reader what to change, counted in the opening.
_RELEASE_BODY = KeywordMatcher(
    (
        "breaking change*",
        "deprecat*",
        "migrat*",
        "removed",
        "changelog",
        "upgrade guide",
        "new feature*",
        "bug fixes",
        "require*",
    )
)
_RELEASE_TOKENS = 800
# Substring checks (cheap on long bodies) for "this is a security advisory".
_ADVISORY_HINTS = ("vulnerabilit", "advisory", "security fix", "security update", "exploit")
_LISTICLE_TITLE = re.compile(
    r"^\s*(?:the\s+)?(?:top\s+)?\d{1,3}\s+(?:\S+\s+){0,3}?(?:things|ways|reasons|tips|tricks|"
    r"hacks|secrets|mistakes|facts|signs|gadgets|deals|trends|habits|lessons|ideas|"
    r"products|gifts|apps|tools|quotes|photos|moments)\b"
    r"|\b\d{1,3}\s+(?:best|must[- ]have|must[- ]see|essential|amazing|incredible)\b"
    r"|\bthings\s+(?:in\s+\w+\s+)?you\s+need\s+to\s+know\b"
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

# Hosts where a link means "the code (or model, or data) is there to run".
_CODE_HOSTS = (
    "github.com",
    "gitlab.com",
    "codeberg.org",
    "huggingface.co",
    "pypi.org",
    "crates.io",
)

# Saturation scale of the actionability sum: a sum of 0.6 gives ~0.63.
_ACTION_SCALE = 0.6


def score_actionability(view: TextView) -> DimensionScore:
    """Can the reader do something with it: steps, commands, code, versions, a named fix."""
    how_to = bool(_HOW_TO_TITLE.search(view.title))
    release_title = bool(_RELEASE_TITLE.search(view.title))
    release = view.versions > 0 and (release_title or "release" in view.tags)
    release_detail = (
        sum(_RELEASE_BODY.count_tokens(view.body_tokens[:_RELEASE_TOKENS]).values())
        if release
        else 0
    )
    advisory = view.cves > 0 or any(
        hint in view.title or hint in view.body for hint in _ADVISORY_HINTS
    )
    imperative = view.imperative_items
    steps = view.numbered if view.numbered >= 3 else 0
    code_link = any(host == h or host.endswith("." + h) for host in view.links for h in _CODE_HOSTS)

    parts = {
        "code_blocks": 0.18 * min(view.code_blocks, 3),
        "commands": 0.08 * min(view.commands, 4),
        "steps": 0.12 + 0.03 * min(steps, 6) if steps else 0.0,
        "imperative_items": 0.04 * min(imperative, 4),
        "how_to_title": 0.18 if how_to else 0.0,
        "inline_code": 0.025 * min(view.inline_code, 6),
        "release_versions": (0.3 + 0.04 * min(release_detail, 3)) if release else 0.0,
        "advisory_fix": (0.55 if view.fixes else 0.1) if advisory else 0.0,
        "version_numbers": 0.03 * min(view.versions, 3) if not release else 0.0,
        "code_link": 0.12 if code_link else 0.0,
    }
    value = saturate(sum(parts.values()), _ACTION_SCALE)
    if view.words < 25 and not (view.code_blocks or view.fixes):
        # A one-line "v3.9.0" release entry names a version but gives nothing to act on.
        value *= 0.5
    features = {
        "code_blocks": float(view.code_blocks),
        "commands": float(view.commands),
        "numbered_steps": float(view.numbered),
        "imperative_items": float(imperative),
        "how_to_title": float(how_to),
        "inline_code": float(view.inline_code),
        "versions": float(view.versions),
        "release": float(release),
        "cves": float(view.cves),
        "fix_mentions": float(view.fixes),
        "advisory": float(advisory),
        "code_link": float(code_link),
    }
    reasons = []
    if advisory and view.fixes:
        reasons.append("advisory naming a fix")
    elif advisory:
        reasons.append("advisory without a named fix")
    if release:
        reasons.append(f"release notes with {view.versions} version number(s)")
    if view.code_blocks:
        reasons.append(f"{view.code_blocks} code block(s)")
    if view.commands:
        reasons.append(f"{view.commands} command(s)")
    if steps:
        reasons.append(f"{steps} numbered steps")
    if imperative:
        reasons.append(f"{imperative} list items saying what to do")
    if how_to:
        reasons.append("how-to title")
    if code_link:
        reasons.append("links to code to run")
    if view.inline_code and not view.code_blocks:
        reasons.append(f"{view.inline_code} inline code span(s)")
    return DimensionScore(
        value=round(clamp(value), 4),
        reason=", ".join(reasons) if reasons else "nothing to act on (no steps, code or fix)",
        features=features,
    )


def score_depth(view: TextView, is_primary: Callable[[str], bool]) -> DimensionScore:
    """Substance: length, structure, code, data, references; thin or clickbait scores low.

    :param is_primary: tells whether a linked host is a primary source (docs, papers,
        standards, advisories, code hosts).
    """
    primary_links = sum(1 for host in set(view.links) if host != view.url_host and is_primary(host))
    listicle = bool(_LISTICLE_TITLE.search(view.title))
    clickbait = sum(_CLICKBAIT.count_tokens(view.title_tokens).values()) + min(
        sum(_CLICKBAIT.count_tokens(view.body_tokens[:_OPENING_TOKENS]).values()), 2
    )
    shouting = view.title_exclamations + max(view.title_caps_words - 1, 0)

    parts = {
        "length": 0.42 * ramp(view.log_words, 1.8, 3.0),  # ~60 words -> 0, 1,000 words -> full
        "headings": 0.1 * min(view.headings, 4) / 4,
        "lists": 0.07 * min(view.bullets + view.numbered, 8) / 8,
        "code": 0.12 * min(view.code_blocks, 3) / 3,
        "data": 0.1 * min(view.numbers, 15) / 15 + (0.03 if view.table_rows >= 3 else 0.0),
        "primary_links": 0.13 * min(primary_links, 4) / 4,
        "references": 0.05 if (view.references_section or view.citations >= 2) else 0.0,
        # A paper, a standard or an advisory is itself the primary source.
        "is_primary_source": 0.12 if is_primary(view.url_host) else 0.0,
    }
    value = sum(parts.values())
    penalties = []
    if view.words < 60:
        value *= 0.5
        penalties.append(f"thin ({view.words} words)")
    if listicle:
        value *= 0.55
        penalties.append("listicle title")
    if clickbait:
        value *= 0.6 ** min(clickbait, 2)
        penalties.append(f"clickbait phrasing x{clickbait}")
    if shouting >= 2:
        value *= 0.8
        penalties.append("shouting title")

    features = {
        "words": float(view.words),
        "headings": float(view.headings),
        "list_items": float(view.bullets + view.numbered),
        "code_blocks": float(view.code_blocks),
        "numbers": float(view.numbers),
        "table_rows": float(view.table_rows),
        "primary_links": float(primary_links),
        "citations": float(view.citations),
        "is_primary_source": float(parts["is_primary_source"] > 0),
        "listicle": float(listicle),
        "clickbait": float(clickbait),
    }
    shape = [f"{view.words} words"]
    if view.headings:
        shape.append(f"{view.headings} headings")
    if view.bullets + view.numbered:
        shape.append(f"{view.bullets + view.numbered} list items")
    if view.code_blocks:
        shape.append(f"{view.code_blocks} code blocks")
    if primary_links:
        shape.append(f"{primary_links} primary-source links")
    if parts["references"]:
        shape.append("references")
    if parts["is_primary_source"]:
        shape.append("primary source itself")
    reason = ", ".join(shape) + (f"; penalised: {', '.join(penalties)}" if penalties else "")
    return DimensionScore(value=round(clamp(value), 4), reason=reason, features=features)
