"""The triage evaluation set, its split, and the reasons on every held-out card.

The set lives in ``bench/triage/`` (``labels.jsonl``, labelled by ``LABELLING.md``). The
items whose text comes from ``shared/data`` load everywhere (CI included); the others are
read from the local page cache when it is there (``python -m bench.triage.build_cache``).
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from bench.triage.corpus import LABELS, MODES, SETS, Example, load_examples
from bench.triage.metrics import auc, measure
from bench.triage.reasons import contradictions
from bench.triage.replay import choose_corrections, replay_corrections
from bench.triage.split import assign
from signaldesk.scoring import ScoreCard, Scorer, ScoringSettings
from signaldesk.scoring.feedback import Correction
from signaldesk.vault import DOMAINS
from tests.index_helpers import real_embedder


def _all_rows() -> list[dict[str, object]]:
    return [json.loads(x) for x in LABELS.read_text(encoding="utf-8").splitlines() if x]


def _rows() -> list[dict[str, object]]:
    """The first set (the second, ``"set": "fresh"``, and the third, ``"fresh2"``, are split
    and measured on their own)."""
    return [r for r in _all_rows() if r.get("set", "first") == "first"]


@cache
def _examples(shared: Path) -> tuple[Example, ...]:
    examples, _ = load_examples(shared=shared)
    return tuple(examples)


def _score(scorer: Scorer, examples: list[Example], mode: str) -> list[ScoreCard]:
    cards: list[ScoreCard] = []
    for start in range(0, len(examples), 64):
        cards += scorer.score_many([x.item(mode) for x in examples[start : start + 64]])
    return cards


def test_the_set_is_labelled_by_a_written_rule_and_split_once() -> None:
    rows = _rows()
    assert len(rows) >= 150
    assert (LABELS.parent / "LABELLING.md").is_file()
    assert {r["domain"] for r in rows} == set(DOMAINS)
    assert len({r["id"] for r in rows}) == len(rows)
    assert all(r["why"] and r["licence"] and r["split"] in ("tuning", "heldout") for r in rows)
    for half in ("tuning", "heldout"):
        labels = Counter(bool(r["file"]) for r in rows if r["split"] == half)
        assert labels[True] >= 40 and labels[False] >= 40
    groups: Counter[tuple[str, bool, str]] = Counter(
        (str(r["domain"]), bool(r["file"]), str(r["split"])) for r in rows
    )
    for domain in DOMAINS:
        for label in (True, False):
            assert abs(groups[(domain, label, "tuning")] - groups[(domain, label, "heldout")]) <= 1
    # The split is fixed: assigning again moves nothing.
    again = assign([dict(r) for r in rows])
    assert [r["split"] for r in again] == [r["split"] for r in rows]


def test_the_fresh_set_is_labelled_like_the_first_and_split_once_on_its_own() -> None:
    rows = _all_rows()
    assert len({r["id"] for r in rows}) == len(rows)
    fresh = [r for r in rows if r.get("set", "first") == "fresh"]
    assert len(fresh) >= 150
    first_keys = {k for r in _rows() for k in r}
    for r in fresh:
        assert r["set"] == "fresh" and r["split"] in ("tuning", "heldout")
        assert r["domain"] in DOMAINS and isinstance(r["file"], bool)
        assert r["why"] and r["licence"] and r["url"] and r["title"]
        assert set(r) <= first_keys | {"set"}
        if r["source"] == "repo":
            assert isinstance(r["ref"], dict)
            assert set(r["ref"]) == {"repo", "commit", "path"}
    for half in ("tuning", "heldout"):
        labels = Counter(bool(r["file"]) for r in fresh if r["split"] == half)
        assert labels[True] >= 35 and labels[False] >= 35
    keepers = Counter(str(r["domain"]) for r in fresh if r["file"])
    assert all(keepers[d] >= 3 for d in DOMAINS)
    # Its halves are dealt within the set, and assigning again moves nothing in any set.
    placed = [r for r in rows if "split" in r]
    again = assign([dict(r) for r in placed])
    assert [r["split"] for r in again] == [r["split"] for r in placed]
    # Loading one set leaves the other's rows out.
    fresh_ids = {r["id"] for r in fresh}
    examples, missing = load_examples(shared=None)
    assert not fresh_ids & ({x.id for x in examples} | set(missing))
    examples, missing = load_examples(shared=None, sets=("fresh",))
    assert {x.id for x in examples} | set(missing) == fresh_ids


@pytest.mark.parametrize(
    ("name", "size", "keepers_each"),
    [
        ("fresh2", 140, 3),
        ("fresh3", 100, 2),
        ("fresh4", 100, 3),
        ("fresh5", 44, 0),
        ("fresh6", 40, 0),
        ("fresh7", 36, 0),
        ("fresh8", 37, 0),
        ("fresh9", 108, 1),
    ],
)
def test_the_later_sets_are_labelled_like_the_others_and_kept_apart(
    name: str, size: int, keepers_each: int
) -> None:
    """``"set": "fresh2"`` to ``"fresh9"``, each labelled before anything scored it, from
    sources no earlier set uses, and split once on its own (fresh5 to fresh8, 36-44 pages
    of hosts of their own, do not have a keeper in every domain)."""
    rows = _all_rows()
    later = [r for r in rows if r.get("set") == name]
    assert len(later) >= size
    assert {str(r.get("set", "first")) for r in rows} == set(SETS)
    first_keys = {k for r in _rows() for k in r}
    for r in later:
        assert r["domain"] in DOMAINS and isinstance(r["file"], bool)
        assert r["why"] and r["licence"] and r["url"] and r["title"]
        assert set(r) <= first_keys | {"set"} and r["split"] in ("tuning", "heldout")
        if r["source"] == "repo":
            assert set(r["ref"]) == {"repo", "commit", "path"}
    # No source of the earlier sets is reused: not a repository, not a site.
    earlier = [r for r in rows if SETS.index(r.get("set", "first")) < SETS.index(name)]
    used_repos = {r["ref"]["repo"] for r in earlier if r["source"] == "repo"}
    used_sites = {r["site"] for r in earlier if r.get("site")}
    for r in later:
        assert r.get("site") not in used_sites
        assert r["source"] != "repo" or r["ref"]["repo"] not in used_repos
    keepers = Counter(str(r["domain"]) for r in later if r["file"])
    assert all(keepers[d] >= keepers_each for d in DOMAINS)
    # Its halves are stratified within the set, and dealing again moves nothing anywhere.
    groups = Counter((str(r["domain"]), bool(r["file"]), str(r["split"])) for r in later)
    for domain in DOMAINS:
        for label in (True, False):
            assert abs(groups[(domain, label, "tuning")] - groups[(domain, label, "heldout")]) <= 1
    again = assign([dict(r) for r in rows])
    assert [r["split"] for r in again] == [r["split"] for r in rows]
    examples, missing = load_examples(shared=None, sets=SETS[: SETS.index(name)])
    assert not {r["id"] for r in later} & ({x.id for x in examples} | set(missing))


def test_the_committed_part_loads_as_the_pipeline_presents_items(shared_data: Path) -> None:
    examples = _examples(shared_data)
    shared = [x for x in examples if x.source in ("articles", "feeds")]
    assert len(shared) >= 90
    for x in shared:
        assert x.item("feed").source_kind == "rss" and x.item("clipper").source_kind == "clipper"
        assert x.item("clipper").origin_path == f"Clippings/{x.id}.md"
    pages = [x for x in shared if x.source == "articles"]
    # A page's full text came through trafilatura and the full-text merge, like intake.
    assert all(x.item("feed").extra.get("full_text") == "fetched" for x in pages)


def test_metrics_arithmetic() -> None:
    assert auc([True, False], [0.9, 0.1]) == 1.0
    assert auc([True, False], [0.5, 0.5]) == 0.5
    a = measure(
        [True, True, False, False],
        [True, False, True, False],
        [0.9, 0.4, 0.6, 0.1],
        domains=["data", "web", "data", "web"],
        routes=["data", "web", "web", "web"],
    )
    assert (a.agreement, a.precision, a.recall) == (0.5, 0.5, 0.5)
    assert a.both_filed == 1 and a.routing == 1.0 and a.domain_recall("web") == 0.0


@pytest.mark.parametrize("mode", MODES)
def test_no_reason_contradicts_its_score_or_decision(shared_data: Path, mode: str) -> None:
    examples = list(_examples(shared_data))
    heldout = [x for x in examples if x.split == "heldout"]
    tuning = [x for x in examples if x.split == "tuning"]
    settings = ScoringSettings()
    plain = Scorer(settings, real_embedder())
    corrections = choose_corrections(tuning, _score(plain, tuning, mode), mode)
    learned = Scorer(settings, real_embedder(), corrections=corrections)
    problems = []
    checked = 0
    for scorer in (plain, learned):
        for x, card in zip(heldout, _score(scorer, heldout, mode), strict=True):
            checked += 1
            problems += [f"{x.id}: {p}" for p in contradictions(card, x.item(mode), 0.55)]
    assert checked >= 2 * 45
    assert not problems, "\n".join(problems)


def test_triage_agrees_with_the_curator_on_the_readable_heldout_half(shared_data: Path) -> None:
    examples = list(_examples(shared_data))
    heldout = [x for x in examples if x.split == "heldout"]
    cards = _score(Scorer(ScoringSettings(), real_embedder()), heldout, "feed")
    a = measure([x.file for x in heldout], [c.passed for c in cards], [c.composite for c in cards])
    # Floors well under the figures `python -m bench.scoring` prints, so that a regression,
    # not noise, fails this.
    assert a.agreement >= 0.85 and a.auc >= 0.85, a


def test_undoing_replayed_corrections_restores_every_decision(shared_data: Path) -> None:
    examples = list(_examples(shared_data))
    result = replay_corrections(examples, Scorer(ScoringSettings(), None), "clipper")
    assert result.corrections > 0 and result.restored


def test_the_reason_checker_catches_a_learned_shift_that_lies() -> None:
    import dataclasses

    from signaldesk.items import Item
    from signaldesk.scoring.feedback import Correction

    # Text the rules route to a domain: the site votes only for such items.
    text = "Switch the SQLite database file to WAL mode with PRAGMA journal_mode=wal. " * 6

    def item(title: str, url: str) -> Item:
        return Item(source_kind="rss", source_id="f", title=title, text=text, url=url)

    thrown = Correction(item("Other post", "https://blog.example.org/a"), False, None, "x")
    new = item("A post", "https://blog.example.org/b")
    card = Scorer(ScoringSettings(), None, corrections=[thrown]).score(new)
    assert card.learned is not None and not contradictions(card, new, 0.55)
    learned = card.learned
    lies = [
        dataclasses.replace(learned, reason=learned.reason.replace("(-", "(+")),
        dataclasses.replace(learned, reason=learned.reason.replace("rejected", "kept")),
        dataclasses.replace(learned, features={**learned.features, "rejected": 2.0}),
    ]
    for wrong in lies:
        assert contradictions(dataclasses.replace(card, learned=wrong), new, 0.55)
    # A composite that is not the weighted sum plus the shift is caught too.
    assert contradictions(dataclasses.replace(card, composite=card.composite + 0.05), new, 0.55)


def test_the_reason_checker_reads_the_persons_line() -> None:
    import dataclasses

    from signaldesk.items import Item
    from signaldesk.scoring.feedback import Correction

    def item(n: int) -> Item:
        text = f"Week {n} in the garden: the tomatoes and the beans came up along the fence."
        return Item(source_kind="rss", source_id=f"f{n}", title=f"Garden {n}", text=text)

    # Kept items the rules left just under the line: a line of its own, and no vote.
    items = [item(n) for n in range(4)]
    threshold = max(c.composite for c in Scorer(ScoringSettings(), None).score_many(items)) + 0.02
    settings = ScoringSettings(threshold=threshold)
    kept = [Correction(one, True, "other", "`triage accept`") for one in items]
    new = Item(
        source_kind="rss", source_id="g", title="SQLite", text="PRAGMA journal_mode=wal. " * 9
    )
    card = Scorer(settings, None, corrections=kept).score(new)
    learned = card.learned
    assert learned is not None and learned.features["line"] > 0 and not learned.features["votes"]
    assert learned.reason.startswith("your 4 corrections near the threshold put your line ")
    assert not contradictions(card, new, threshold)
    lies = [
        dataclasses.replace(learned, reason=learned.reason.replace("lower", "higher")),
        dataclasses.replace(learned, reason=learned.reason.replace("your 4", "you kept 4")),
        dataclasses.replace(learned, features={**learned.features, "line": 0.0}),
        dataclasses.replace(learned, reason=f"{learned.reason}; in all ({learned.value:+.2f})"),
    ]
    for wrong in lies:
        assert contradictions(dataclasses.replace(card, learned=wrong), new, threshold), wrong


def test_the_replay_from_other_sources_never_draws_the_items_own_source(
    shared_data: Path,
) -> None:
    from bench.triage.inner_replay import one_out
    from signaldesk.scoring.feedback import same_source

    # Feed entries first: they share their feeds whether or not the page cache is here.
    tuning = sorted(
        (x for x in _examples(shared_data) if x.split == "tuning"),
        key=lambda x: x.source != "feeds",
    )[:24]
    items = [x.item("feed") for x in tuning]
    sharing = sum(same_source(a, b) for a in items for b in items if a is not b)
    assert sharing > 0  # the set has feeds with several entries: the protocol has work to do
    plain = Scorer(ScoringSettings(), None)
    for other_sources in (False, True):
        wrong, fixed, broken = one_out(tuning, plain, "feed", 6, other_sources=other_sources)
        assert 0 <= fixed <= wrong and 0 <= broken <= len(tuning) - wrong


def test_other_draws_keep_the_mistakes_and_confirm_only_near_decisions(shared_data: Path) -> None:
    from bench.triage.replay import NEAR

    tuning = [x for x in _examples(shared_data) if x.split == "tuning"]
    cards = _score(Scorer(ScoringSettings(), None), tuning, "clipper")
    fixed = choose_corrections(tuning, cards, "clipper")
    margins = {
        x.item("clipper").title: abs(c.composite - 0.55) for x, c in zip(tuning, cards, strict=True)
    }
    confirming = ("kept the note", "deleted the clipping")
    mistakes = [c.item.title for c in fixed if c.how not in confirming]

    def beyond_near(chosen: list[Correction]) -> list[str]:
        return [
            c.item.title for c in chosen if c.how in confirming and margins[c.item.title] > NEAR
        ]

    # The fixed rule confirms the nearest decisions; a draw picks others among those within
    # NEAR only, so the mistakes and any confirmation beyond NEAR (when there are too few
    # near ones to fill the 20) are the fixed rule's own.
    draws = [choose_corrections(tuning, cards, "clipper", seed=seed) for seed in range(4)]
    for drawn in draws:
        assert len(drawn) == len(fixed)
        assert [c.item.title for c in drawn if c.how not in confirming] == mistakes
        assert beyond_near(drawn) == beyond_near(fixed)
    assert len({tuple(c.item.title for c in d) for d in draws}) > 1
