"""Check that every reason on a card agrees with its number, its features and the decision.

Each claim a reason can make is read back and compared with what the card measured: counts
("3 code block(s)", "412 words"), penalties ("penalised: listicle title"), the shift learned
from corrections ("you kept 2 similar items (+0.14)", and that the composite is the weighted
sum plus that shift), the resemblance to kept articles ("reads like articles curators keep
(+0.12)", and that depth moved by what it says), the source's reputation ("unknown site
0.45"), the route's domain and confidence, and the one-line summary's decision and sign.
"""

from __future__ import annotations

import re

from signaldesk.items import Item
from signaldesk.scoring import DIMENSIONS, ScoreCard, ScoreWeights
from signaldesk.scoring.records import TEASER_NOTE, DimensionScore

__all__ = ["contradictions"]

_COUNTS_ACTION = {
    r"(\d+) code block\(s\)": "code_blocks",
    r"(\d+) command\(s\)": "commands",
    r"(\d+) sentence\(s\) saying what to do": "guidance",
    r"(\d+) step\(s\) written as sentences": "prose_steps",
    r"(\d+) list items saying what to do": "imperative_items",
    r"(\d+) inline code span\(s\)": "inline_code",
    r"links to (\d+) code repository": "code_links",
}
_COUNTS_DEPTH = {
    r"^(\d+) words": "words",
    r"(\d+) headings": "headings",
    r"(\d+) list items": "list_items",
    r"(\d+) code blocks": "code_blocks",
    r"(\d+) code lines": "code_lines",
    r"(\d+) measurements": "measurements",
    r"(\d+) primary-source links": "primary_links",
}
_PENALTIES = {
    "thin (": "penalty_thin",
    "listicle title": "penalty_listicle",
    "clickbait phrasing": "penalty_clickbait",
    "shouting title": "penalty_shouting",
    "an announcement (event, team, survey)": "penalty_announcement",
}


def _counts(
    reason: str, features: dict[str, float], table: dict[str, str], where: str
) -> list[str]:
    out = []
    for pattern, name in table.items():
        for match in re.finditer(pattern, reason):
            if float(match.group(1)) != features.get(name):
                out.append(f"{where}: says {match.group(0)!r} but {name} = {features.get(name)}")
    return out


def _learned(card: ScoreCard) -> list[str]:
    """The learned shift: its reason, its features and its part of the composite agree."""
    weights = ScoreWeights()  # the bench scores with the default formula
    weighted = sum(getattr(weights, name) * card.dimension(name).value for name in DIMENSIONS)
    learned = card.learned
    if learned is None:
        if abs(card.composite - weighted) > 0.0006:
            return [f"composite {card.composite} is not the weighted sum {weighted:.4f}"]
        return []
    out = []
    expected = min(1.0, max(0.0, weighted + learned.value))
    if abs(card.composite - expected) > 0.0006:
        out.append(f"composite {card.composite} is not {weighted:.4f} {learned.value:+.4f}")
    said = re.search(r"\(([+-]\d\.\d\d)\)$", learned.reason)
    if said is None or float(said.group(1)) != round(learned.value, 2):
        out.append(f"learned: reason {learned.reason!r} does not state {learned.value:+.2f}")
    f = learned.features
    if f["shift"] != learned.value or abs(f["votes"] + f["line"] - learned.value) > 0.0002:
        out.append("learned: its votes and the person's line do not add up to the value")
    out += _votes_said(learned.reason, f)
    out += _line_said(learned.reason, f)
    both = bool(f["votes"]) and bool(f["line"])  # each part's figure, then "in all (...)"
    if len(re.findall(r"\([+-]\d\.\d\d\)", learned.reason)) != (3 if both else 1):
        out.append(f"learned: reason {learned.reason!r} states the wrong number of figures")
    if f"{learned.value:+.2f} learned" not in card.summary(0.55):
        out.append("summary does not show the learned shift")
    return out


def _resemblance(depth: DimensionScore) -> list[str]:
    """'reads like articles curators keep (+0.12)': side, figure and value agree."""
    said = re.search(r"reads like articles curators (keep|reject) \(([+-]\d\.\d\d)\)", depth.reason)
    applied = depth.features.get("resemblance")
    if said is None or applied is None:
        if (said is None) != (applied is None):
            return ["depth: resemblance reason and feature disagree"]
        return []
    out = []
    if float(said.group(2)) != round(applied, 2) or (said.group(1) == "keep") != (applied > 0):
        out.append(f"depth: says {said.group(0)!r} but applied {applied:+.4f}")
    if abs(depth.features["before_resemblance"] + applied - depth.value) > 0.0006:
        out.append("depth: value is not the score before resemblance plus what was applied")
    return out


def _votes_said(reason: str, f: dict[str, float]) -> list[str]:
    """'you kept 2 similar items (+0.09)': leads with the votes' side, counts them right."""
    out = []
    first = re.match(r"you (kept|rejected) ", reason)
    if bool(first) != bool(f["votes"]):
        out.append(f"learned: reason {reason!r} names votes it does not have, or not those it has")
    elif first is not None and (first.group(1) == "kept") != (f["votes"] > 0):
        out.append(f"learned: reason {reason!r} leads with the wrong side")
    if f["votes"] and (f["evidence"] > 0) != (f["votes"] > 0):
        out.append("learned: the votes' shift and their evidence disagree")
    if first is not None:
        said = re.search(r"\(([+-]\d\.\d\d)\)", reason)
        if said is None or float(said.group(1)) != round(f["votes"], 2):
            out.append(f"learned: reason {reason!r} does not state the votes' {f['votes']:+.2f}")
    for verb, key in (("kept", "kept"), ("rejected", "rejected")):
        said_n = sum(int(n) for n in re.findall(r"(\d+) ", _side(reason, verb)))
        if said_n != f[key]:
            out.append(f"learned: reason counts {said_n} {verb}, features {f[key]}")
    return out


def _line_said(reason: str, f: dict[str, float]) -> list[str]:
    """'your 18 corrections put your line 0.06 lower (+0.06)': side and figure agree."""
    said = re.search(r"puts? your line (\d\.\d\d) (lower|higher) \(([+-]\d\.\d\d)\)", reason)
    if said is None:
        return [f"learned: reason {reason!r} leaves out the person's line"] if f["line"] else []
    value = round(f["line"], 2)
    if (
        not f["line"]
        or float(said.group(1)) != abs(value)
        or float(said.group(3)) != value
        or (said.group(2) == "lower") != (f["line"] > 0)
    ):
        return [f"learned: says {said.group(0)!r} but the line is {f['line']:+.4f}"]
    return []


def _side(reason: str, verb: str) -> str:
    """The part of a learned reason after 'you <verb>' up to the next side or the figure."""
    match = re.search(rf"you {verb} ([^;(]*)", reason)
    return match.group(1) if match else ""


def contradictions(card: ScoreCard, item: Item, threshold: float) -> list[str]:
    """Every disagreement between the card's reasons and its numbers (empty: none)."""
    out: list[str] = []
    for name in ("relevance", "actionability", "depth", "authority"):
        dim = card.dimension(name)
        if not dim.reason.strip():
            out.append(f"{name}: empty reason")
        if not 0.0 <= dim.value <= 1.0:
            out.append(f"{name}: value {dim.value} outside 0..1")

    act = card.actionability
    nothing = act.reason.startswith("nothing to act on")
    if nothing and act.value > 0:
        out.append(f"actionability says nothing to act on but is {act.value}")
    if not nothing and act.value == 0:
        out.append(f"actionability lists reasons ({act.reason}) but is 0")
    out += _counts(act.reason, act.features, _COUNTS_ACTION, "actionability")
    release = re.search(r"release notes with (\d+) version", act.reason)
    if release and (
        act.features["release"] != 1 or float(release.group(1)) != act.features["versions"]
    ):
        out.append("actionability: release-notes claim does not match its features")
    if "advisory naming a fix" in act.reason and not (
        act.features["advisory"] and act.features["fix_mentions"] > 0
    ):
        out.append("actionability: names a fix the features do not see")
    if "advisory without a named fix" in act.reason and not (
        act.features["advisory"] and act.features["fix_mentions"] == 0
    ):
        out.append("actionability: 'without a named fix' where a fix is seen or no advisory")
    if ("halved: only" in act.reason) != bool(act.features.get("penalty_tiny")):
        out.append("actionability: tiny-item halving and its reason disagree")
    if (": an announcement" in act.reason) != bool(act.features.get("penalty_announcement")):
        out.append("actionability: announcement penalty and its reason disagree")

    depth = card.depth
    out += _counts(depth.reason, depth.features, _COUNTS_DEPTH, "depth")
    _, _, penalised = depth.reason.partition("; penalised: ")
    penalised = penalised.split("; ")[0]
    for phrase, flag in _PENALTIES.items():
        said = phrase in penalised
        if said != bool(depth.features.get(flag)):
            out.append(
                f"depth: penalty {phrase!r} said={said} but {flag}={depth.features.get(flag)}"
            )
    if "shaped like a paper" in depth.reason and depth.features["paper_marks"] < 2:
        out.append("depth: paper claim without the marks of a paper")
    out += _resemblance(depth)
    if (TEASER_NOTE in depth.reason) != card.teaser or card.teaser != item.teaser:
        out.append("depth: teaser note, card and item disagree")

    rel = card.relevance
    clipped = "clipped by you" in rel.reason
    if clipped != (item.source_kind == "clipper" and "clipping_intent" in rel.features):
        out.append("relevance: 'clipped by you' on an item that was not clipped, or missing")
    floor = rel.features.get("clipping_intent", 0.0)
    # The reason speaks of the measure; the calibration's scale (a "measured" feature
    # when it changed the value) only stretches it.
    measured = rel.features.get("measured", rel.value)
    if rel.reason.startswith("matches no interest topic") and measured > floor + 0.06:
        out.append(f"relevance: 'matches no interest topic' at {measured} measured")
    if "you kept" in rel.reason or "you rejected" in rel.reason:
        out.append("relevance: speaks of corrections (they belong to the learned shift)")
    muted = re.search(r"looks like muted topic .* \((\d\.\d\d)\)", rel.reason)
    if muted and abs(float(muted.group(1)) - rel.features["muted_topic"]) > 0.006:
        out.append("relevance: muted-topic figure disagrees with its feature")

    auth = card.authority
    source = re.search(r" (\d\.\d\d);", auth.reason)
    if source and abs(float(source.group(1)) - auth.features["source"]) > 0.006:
        out.append(f"authority: says source {source.group(1)} but it is {auth.features['source']}")
    if ("author named" in auth.reason) != bool(auth.features["author"]):
        out.append("authority: author claim disagrees with its feature")
    cites = re.search(r"cites (\d+) primary", auth.reason)
    if cites and float(cites.group(1)) != auth.features["primary_links"]:
        out.append("authority: primary-source count disagrees")

    route = card.route
    if not route.reason.startswith(f"{route.domain} ("):
        out.append(f"route: reason {route.reason!r} does not name the domain {route.domain}")
    shown = re.match(r"[\w-]+ \((\d\.\d\d)\)", route.reason)
    if shown and abs(float(shown.group(1)) - route.confidence) > 0.006:
        out.append(f"route: says {shown.group(1)} but confidence is {route.confidence}")

    out += _learned(card)

    summary = card.summary(threshold)
    if summary.startswith("filed") != card.passed:
        out.append(f"summary {summary!r} disagrees with passed={card.passed}")
    above = card.composite > threshold
    if (" > " in summary) != above:
        out.append(f"summary {summary!r} has the wrong sign")
    if card.passed != above and not card.by_person:
        out.append("passed disagrees with composite > threshold")
    return out
