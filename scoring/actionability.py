"""Actionability: can the reader do something with it.

A sum of named, capped features of the text (see :mod:`scoring.text` and
:mod:`scoring.prose`), saturated into [0, 1]: code and commands, fenced or not; steps, as a
numbered list or as sentences; guidance ("use ...", "you should ...", "do not ..."); release
notes with versions; an advisory that names the fixed version or the workaround. The reason
lists exactly the features that counted, largest share first.
"""

from __future__ import annotations

import re

from signaldesk.scoring._calc import clamp, saturate
from signaldesk.scoring.keywords import KeywordMatcher
from signaldesk.scoring.records import DimensionScore
from signaldesk.scoring.text import TextView

__all__ = ["is_advisory", "is_bare_announcement", "is_release", "score_actionability"]

_HOW_TO_TITLE = re.compile(
    r"\bhow\s+(?:to|i|we)\b|\bguide\b|\btutorial\b|\bstep[- ]by[- ]step\b|\bgetting\s+started\b"
    r"|\bwalkthrough\b|\bmigrat\w*|\bupgrad\w*|\bset(?:ting)?\s+up\b|\bconfigur\w*|\bcheat\s*sheet\b"
    r"|\binstall\w*|\bfix(?:ing)?\b|\bdebug\w*|\busing\b|\bwith\b.+\bin\b|\bwriting\b|\brunning\b"
    r"|\benabling\b|\bcreating\b|\bbuilding\b|\bprepare\b|\bimporting\b"
    # A title that starts with a gerund ("Preventing double form submissions with ..."),
    # but not one that announces ("Introducing electron/rfcs") or a noun ("String ...").
    r"|^(?!(?:introduc|announc|welcom|celebrat|unveil|present|th|str|spr|someth|everyth)ing\b)"
    r"[a-z]+ing\b"
)
_RELEASE_TITLE = re.compile(
    r"\brelease[sd]?\b|\breleasing\b|\bannounc\w*|\bversion\b|\bchangelog\b|\bv?\d+\.\d+(?!\d|\.[a-wyz]\b)"
    r"|\bnow\s+available\b|\bwhat'?s\s+new\b|\bsunset\b|\bdeprecat\w*|\bend\s+of\s+life\b"
    r"|\bis\s+out\b"
)
_ADVISORY_TITLE = re.compile(
    r"vulnerab|advisory|security\s+(?:release|update|fix|issue)|\bcve-|exploit|malicious"
    r"|\bunsound\b|out-of-bounds|bypass|injection|overflow|underflow|leak"
    # Classes of vulnerability a title names ("Path traversal in tarsafe 3.2 ...").
    r"|\b(?:path|directory)\s+traversal|remote\s+code\s+execution|\brce\b"
    r"|denial[\s-]+of[\s-]+service|cross[\s-]+site|\bxss\b|\bcsrf\b|\bssrf\b"
    r"|privilege\s+escalation|use[\s-]+after[\s-]+free|sandbox\s+escape|\bghsa-"
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
        "stabilized",
        "now available",
    )
)
_RELEASE_TOKENS = 800
# A paper's abstract that states its method and a result is something to build on (the
# labelling rule files it as "learned from measurement"), though it has no steps or code:
# it counts as much as release notes do ("a change to act on"). Chosen on the tuning half,
# where it files 1 of the 3 papers that missed (0.2-0.4 gave the same agreement in feed mode).
_PAPER_RESULT = 0.3
# Saturation scale of the actionability sum: a sum of 0.6 gives ~0.63.
_ACTION_SCALE = 0.6


def is_release(view: TextView) -> bool:
    """Release notes: version numbers under a release-shaped title (or a release tag)."""
    if view.prose.paper_shaped:
        return False  # "v2" of a preprint is not a release
    return view.versions > 0 and (bool(_RELEASE_TITLE.search(view.title)) or "release" in view.tags)


def is_advisory(view: TextView) -> bool:
    """A security advisory: an advisory id, or an advisory-shaped title with a severity."""
    if view.cves > 0:
        return True
    return bool(_ADVISORY_TITLE.search(view.title)) and (
        "severity" in view.body or "cvss" in view.body or "affected" in view.body
    )


# "Go Developer Survey 2022 Q2 Results": a survey's results are something learned from
# measurement (LABELLING.md), not the survey's announcement.
_RESULTS_TITLE = re.compile(r"\bresults?\b|\breport\b|\bfindings\b", re.IGNORECASE)
# The results of a survey under its plain name ("2020 Julia User and Developer Survey") carry
# their figures: this many measurements (percentages, timings) make a report of results.
_RESULT_FIGURES = 10
# A newsletter or round-up that names this many versions carries what changed (LABELLING.md
# keeps "a round-up that carries what changed"); a link round-up names few or none.
_ROUND_UP_VERSIONS = 5


# A list of links this long, making up four in five list items, is a link round-up (the
# curated "awesome" lists); release notes link their changes in lists of 10-25.
_LINK_LIST_ITEMS = 40
# What an announcement keeps of its actionability. At 0.5 (the first choice), an on-topic
# recap from a project's own blog still passed on relevance and authority alone.
_ANNOUNCEMENT_FACTOR = 0.25


def is_bare_announcement(view: TextView) -> bool:
    """An event, team, governance, survey or brand announcement, or a link round-up.

    An item whose title says it is one ("React Conf 2025 Recap", "Announcing the Language
    Workgroup", "This Week in Rust 419") is one, whatever code or versions it quotes along
    the way, unless it is an advisory, a paper or a report of results: on both labelled sets
    42 of 44 such titles are rejects, and the two keepers are survey results. Otherwise the
    opening must have the phrases of one and nothing technical. A long list of links is a
    round-up too.
    """
    prose = view.prose
    lists = view.bullets + view.numbered
    if view.link_items >= _LINK_LIST_ITEMS and view.link_items * 5 >= lists * 4:
        return True  # a curated list of links ("awesome" lists): a round-up
    if prose.titled_announcement:
        results = bool(_RESULTS_TITLE.search(view.title)) or prose.measurements >= _RESULT_FIGURES
        return not (is_advisory(view) or prose.paper_shaped or results)
    technical = (
        view.code_blocks
        or prose.code_lines >= 2
        or view.fixes
        or view.cves
        or prose.measurements >= 2
        or prose.paper_shaped
        or is_release(view)
        or view.versions >= _ROUND_UP_VERSIONS
        or is_advisory(view)
    )
    return prose.announcement >= 3 and not technical


def score_actionability(view: TextView) -> DimensionScore:
    """Steps, commands, code, guidance, versions to move to, a named fix."""
    prose = view.prose
    how_to = bool(_HOW_TO_TITLE.search(view.title))
    release = is_release(view)
    release_detail = (
        sum(_RELEASE_BODY.count_tokens(view.body_tokens[:_RELEASE_TOKENS]).values())
        if release
        else 0
    )
    advisory = is_advisory(view)
    steps = view.numbered if view.numbered >= 3 else 0
    parts = {
        "advisory_fix": (0.6 if view.fixes else 0.15) if advisory else 0.0,
        "release_versions": (0.3 + 0.04 * min(release_detail, 3)) if release else 0.0,
        "code_blocks": 0.18 * min(view.code_blocks, 3),
        "code_lines": 0.04 * min(prose.code_lines, 6) + 0.012 * min(view.code_lines, 20),
        "commands": 0.08 * min(view.commands, 4),
        "steps": 0.12 + 0.03 * min(steps, 6) if steps else 0.0,
        "prose_steps": 0.05 * min(prose.prose_steps, 4),
        "guidance": 0.035 * min(prose.guidance, 10),
        "imperative_items": 0.04 * min(view.imperative_items, 4),
        "how_to_title": 0.15 if how_to else 0.0,
        "inline_code": 0.025 * min(view.inline_code, 6),
        "version_numbers": 0.03 * min(view.versions, 3) if not release else 0.0,
        "code_links": 0.1 if view.code_links else 0.0,
        "paper_result": _PAPER_RESULT if prose.paper_shaped and prose.paper_result else 0.0,
    }
    value = saturate(sum(parts.values()), _ACTION_SCALE)
    # The halvings apply (and are reported) only where there is something to halve.
    tiny = value > 0 and view.words < 25 and not (view.code_blocks or view.fixes)
    if tiny:
        # A one-line "v3.9.0" release entry names a version but gives nothing to act on.
        value *= 0.5
    announcement = value > 0 and is_bare_announcement(view)
    if announcement:
        # "Register now" and "take the survey" say what to do, but not with software; what
        # a recap quotes from a keynote is not the reader's to act on either.
        value *= _ANNOUNCEMENT_FACTOR
    features = {
        "code_blocks": float(view.code_blocks),
        "code_lines": float(prose.code_lines),
        "fenced_code_lines": float(view.code_lines),
        "commands": float(view.commands),
        "numbered_steps": float(view.numbered),
        "prose_steps": float(prose.prose_steps),
        "guidance": float(prose.guidance),
        "imperative_items": float(view.imperative_items),
        "how_to_title": float(how_to),
        "inline_code": float(view.inline_code),
        "versions": float(view.versions),
        "release": float(release),
        "cves": float(view.cves),
        "fix_mentions": float(view.fixes),
        "advisory": float(advisory),
        "code_links": float(view.code_links),
        "paper_result": float(prose.paper_shaped and prose.paper_result),
        "penalty_tiny": float(tiny),
        "penalty_announcement": float(announcement),
    }
    described = {
        "advisory_fix": "advisory naming a fix" if view.fixes else "advisory without a named fix",
        "release_versions": (
            f"{view.versions} version number(s) to move to"
            if advisory  # an advisory's versions are the affected and fixed releases
            else f"release notes with {view.versions} version number(s)"
        ),
        "code_blocks": f"{view.code_blocks} code block(s)",
        "code_lines": f"{prose.code_lines + view.code_lines} line(s) of code",
        "commands": f"{view.commands} command(s)",
        "steps": f"{steps} numbered steps",
        "prose_steps": f"{prose.prose_steps} step(s) written as sentences",
        "guidance": f"{prose.guidance} sentence(s) saying what to do",
        "imperative_items": f"{view.imperative_items} list items saying what to do",
        "how_to_title": "how-to title",
        "inline_code": f"{view.inline_code} inline code span(s)",
        "version_numbers": f"{view.versions} version number(s)",
        "code_links": f"links to {view.code_links} code repository(ies) or package(s)",
        "paper_result": "a paper's method and result to build on",
    }
    counted = sorted((share, name) for name, share in parts.items() if share > 0)
    reasons = [described[name] for _, name in reversed(counted)][:5]
    if not reasons:
        reason = "nothing to act on (no steps, code, guidance or fix)"
    else:
        reason = ", ".join(reasons)
        if tiny:
            reason += f"; halved: only {view.words} words"
        if announcement:
            reason += (
                f"; x{_ANNOUNCEMENT_FACTOR}: an announcement (event, team, governance, round-up)"
            )
    return DimensionScore(value=round(clamp(value), 4), reason=reason, features=features)
