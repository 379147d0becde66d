"""Learning from corrections: the composite and the route follow what the person did."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from signaldesk.items import Item
from signaldesk.scoring import DIMENSIONS, Scorer, ScoringSettings
from signaldesk.scoring.feedback import Correction, Feedback, text_vector
from tests.index_helpers import real_embedder

_SQLITE = (
    "SQLite WAL mode lets readers and a writer work at once. Turn it on with "
    "`PRAGMA journal_mode=wal;` on the database file; the setting sticks to the file. "
    "Checkpoints move pages from the WAL back into the database; `PRAGMA wal_checkpoint` "
    "runs one by hand. Busy timeouts still matter when two writers meet."
)
_SQLITE_2 = (
    "Fixing 'database is locked' in SQLite: switch the file to WAL mode with "
    "`PRAGMA journal_mode=wal;` so that readers and the writer stop blocking each other. "
    "The WAL setting is stored in the database file. Run `PRAGMA wal_checkpoint` to fold "
    "the WAL back in, and set a busy timeout for the rare case of two writers."
)
_GARDEN = (
    "My tomatoes did well this year: I planted them in May, watered every evening and "
    "picked the first ones in July. Next year I will try beans along the fence."
)
_ABSTRACT = (
    "Abstract. We propose {name}, a method for {task}. We evaluate it on three benchmarks "
    "and show that it outperforms strong baselines by 4.1 points of accuracy. Our results "
    "suggest that {task} benefits from the proposed objective. Code and data are released."
)

_DOCKER = (
    "Running SQLite inside a Docker container: mount the database file on a volume, switch "
    "it to WAL mode with `PRAGMA journal_mode=wal;`, and give the container a health check. "
    "Kubernetes pods need the same volume claim; do not share one file between replicas."
)
_DOCKER_2 = (
    "SQLite in containers: keep the database file on a mounted volume, turn on WAL with "
    "`PRAGMA journal_mode=wal;`, add a Docker health check, and never let two Kubernetes "
    "replicas open the same file."
)


def _item(title: str, text: str, url: str | None = None, feed: str | None = None) -> Item:
    """A feed entry; each title its own feed unless ``feed`` names one."""
    feed = feed or f"https://feeds.example/{title}"
    return Item(source_kind="rss", source_id=feed, title=title, text=text, url=url)


def _clipping(title: str, text: str, url: str) -> Item:
    return Item(source_kind="clipper", source_id="Clippings", title=title, text=text, url=url)


def _weighted(card: object) -> float:
    settings = ScoringSettings()
    return sum(
        getattr(settings.weights, name) * card.dimension(name).value  # type: ignore[attr-defined]
        for name in DIMENSIONS
    )


def test_no_corrections_change_nothing() -> None:
    item = _item("Fixing database is locked in SQLite", _SQLITE_2)
    plain = Scorer(ScoringSettings(), None).score(item)
    empty = Scorer(ScoringSettings(), None, corrections=()).score(item)
    assert plain == empty and plain.learned is None


def test_kept_and_rejected_similar_items_move_the_composite_with_a_reason() -> None:
    item = _item("Fixing database is locked in SQLite", _SQLITE_2)
    kept = [Correction(_item("SQLite WAL mode", _SQLITE), True, "data", "`triage accept`")]
    thrown = [Correction(_item("SQLite WAL mode", _SQLITE), False, None, "`triage reject`")]
    embedder = real_embedder()
    plain = Scorer(ScoringSettings(), embedder).score(item)
    up = Scorer(ScoringSettings(), embedder, corrections=kept).score(item)
    down = Scorer(ScoringSettings(), embedder, corrections=thrown).score(item)
    assert up.learned is not None and down.learned is not None
    assert up.learned.value > 0 > down.learned.value
    assert up.learned.reason.startswith("you kept 1 similar item")
    assert down.learned.reason.startswith("you rejected 1 similar item")
    assert up.learned.reason.endswith(f"({up.learned.value:+.2f})")
    assert up.composite > plain.composite > down.composite
    assert up.composite == pytest.approx(_weighted(up) + up.learned.value, abs=1e-3)
    assert f"{up.learned.value:+.2f} learned from your corrections" in up.summary(0.55)
    # The four scores are still what the text says; the shift is its own part of the card.
    for name in DIMENSIONS:
        assert up.dimension(name) == plain.dimension(name) == down.dimension(name)
    front = up.as_frontmatter()
    assert front["scores"]["learned"] == round(up.learned.value, 3)
    assert front["why"]["learned"] == up.learned.reason


def test_the_shift_is_not_capped_by_relevance() -> None:
    # Relevance near 1 cannot rise much; a correction must still carry a similar item over.
    item = _item(
        "Sparse retrieval with learned term weights",
        _ABSTRACT.format(name="SpladeX", task="sparse retrieval with learned term weights"),
    )
    other = _item(
        "Dense retrieval with hard negatives",
        _ABSTRACT.format(name="DenseHN", task="dense retrieval with hard negatives"),
    )
    embedder = real_embedder()
    plain = Scorer(ScoringSettings(), embedder).score(item)
    up = Scorer(
        ScoringSettings(), embedder, corrections=[Correction(other, True, "research", "x")]
    ).score(item)
    assert up.learned is not None and "you kept 1 similar item" in up.learned.reason
    # More than moving relevance to 1 could have given.
    headroom = 0.35 * (1.0 - plain.relevance.value)
    assert up.composite - plain.composite > headroom + 0.02
    assert up.composite - plain.composite == pytest.approx(up.learned.value, abs=1e-3)


def test_an_unrelated_correction_does_not_vote() -> None:
    item = _item("Fixing database is locked in SQLite", _SQLITE_2)
    garden = [Correction(_item("Tomatoes", _GARDEN), False, None, "deleted the note")]
    embedder = real_embedder()
    plain = Scorer(ScoringSettings(), embedder).score(item)
    after = Scorer(ScoringSettings(), embedder, corrections=garden).score(item)
    assert after == plain


def test_same_site_votes_a_little_and_says_so() -> None:
    url = "https://blog.example.org/a"
    item = _item("Running SQLite in Docker", _DOCKER, url="https://blog.example.org/b")
    other = _clipping("Something else entirely", _GARDEN, url=url)
    card = Scorer(ScoringSettings(), None, corrections=[Correction(other, True, None, "x")]).score(
        item
    )
    assert card.route.domain != "other"
    assert card.learned is not None
    shift = card.learned.value
    assert card.learned.reason == f"you kept 1 other item from this site ({shift:+.2f})"
    assert 0 < card.learned.value < 0.06
    assert card.learned.features["same_site"] == 1.0


def test_the_site_says_nothing_of_an_item_routed_to_no_domain() -> None:
    # A blog of how-tos whose kept notes would otherwise carry its cocktail recipe upwards.
    url = "https://blog.example.org/a"
    item = _item("Gardening notes", _GARDEN, url="https://blog.example.org/b")
    kept = [
        Correction(_clipping(f"SQLite note {n}", _SQLITE, url=f"{url}{n}"), True, "data", "x")
        for n in range(3)
    ]
    settings = ScoringSettings()
    plain = Scorer(settings, None).score(item)
    assert plain.route.domain == "other"
    garden = Scorer(settings, None, corrections=kept).score(item)
    # No vote of the site; what moves it is the person's line alone (three kept items the
    # rules left under the threshold), which moves every item alike.
    assert garden.learned is not None and garden.learned.features["votes"] == 0
    assert garden.learned.reason.startswith("your 3 corrections near the threshold put your line")
    assert garden.route == plain.route
    # The same corrections do vote for an item of the site that the rules route somewhere.
    routed = _item("Running SQLite in Docker", _DOCKER, url="https://blog.example.org/c")
    card = Scorer(settings, None, corrections=kept).score(routed)
    assert card.learned is not None and card.learned.value > 0
    assert card.learned.reason.startswith("you kept 3 other items from this site")


def test_feed_entries_share_a_source_through_their_feed_not_a_redirecting_host() -> None:
    # Two blogs behind one redirector (as feedproxy.google.com was): a kept entry of the
    # ads blog says nothing of the testing blog; one of the testing blog's own entries does.
    ads = "https://ads.example/feed"
    testing = "https://testing.example/feed"
    item = _item(
        "Running SQLite in Docker", _DOCKER, url="https://proxy.example/~r/t/1", feed=testing
    )
    other_feed = _item("Something else", _GARDEN, url="https://proxy.example/~r/a/2", feed=ads)
    same_feed = _item("Something else", _GARDEN, url="https://testing.example/3", feed=testing)
    settings = ScoringSettings()
    plain = Scorer(settings, None).score(item)
    unrelated = Correction(other_feed, True, None, "x")
    assert Scorer(settings, None, corrections=[unrelated]).score(item) == plain
    card = Scorer(settings, None, corrections=[Correction(same_feed, True, None, "x")]).score(item)
    assert card.learned is not None and card.learned.value > 0
    shift = card.learned.value
    assert card.learned.reason == f"you kept 1 other item from this feed ({shift:+.2f})"
    assert card.learned.features["same_site"] == 1.0
    assert card.composite > plain.composite


def test_a_correction_votes_only_on_its_side_of_the_items_score() -> None:
    # One topic, two items triage scores far apart: a thin announcement and a how-to.
    thin = _item(
        "SQLite WAL mode news",
        "SQLite WAL mode is here. WAL mode in SQLite is the mode we like for the database; "
        "readers and writers and WAL. More on SQLite WAL soon.",
    )
    howto = _item("Fixing database is locked in SQLite", _SQLITE_2)
    settings, embedder = ScoringSettings(), real_embedder()
    plain = Scorer(settings, embedder)
    assert plain.score(howto).composite - plain.score(thin).composite > 0.1

    def learned(correction: Correction, item: Item) -> float:
        card = Scorer(settings, embedder, corrections=[correction]).score(item)
        return card.learned.value if card.learned is not None else 0.0

    # Throwing the announcement away pulls down what is like it and no better, not the how-to.
    assert learned(Correction(thin, False, None, "x"), thin) < 0
    assert learned(Correction(thin, False, None, "x"), howto) == 0
    # Keeping the how-to lifts what is like it and no worse, not the announcement.
    assert learned(Correction(howto, True, "data", "x"), howto) > 0
    assert learned(Correction(howto, True, "data", "x"), thin) == 0
    # The other way round both vote: a kept announcement says its betters are wanted too.
    assert learned(Correction(thin, True, "data", "x"), howto) > 0
    assert learned(Correction(howto, False, None, "x"), thin) < 0


def test_both_sides_are_named_when_votes_disagree() -> None:
    url = "https://blog.example.org/a"
    item = _item("Fixing database is locked in SQLite", _SQLITE_2, url="https://blog.example.org/b")
    thrown = Correction(_item("SQLite WAL mode", _SQLITE), False, None, "x")
    kept = Correction(_clipping("Tomatoes", _GARDEN, url=url), True, None, "x")
    card = Scorer(ScoringSettings(), real_embedder(), corrections=[kept, thrown]).score(item)
    assert card.learned is not None and card.learned.value < 0
    assert card.learned.reason.startswith("you rejected 1 similar item; ")
    assert "; you kept 1 other item from this site (" in card.learned.reason
    assert card.learned.features["kept"] == 1.0 and card.learned.features["rejected"] == 1.0


def test_moves_of_similar_items_reroute_and_undo_restores() -> None:
    item = _item("SQLite in a Docker container", _DOCKER)
    embedder = real_embedder()
    plain = Scorer(ScoringSettings(), embedder).score(item)
    assert plain.route.domain == "devops"
    assert "data" in dict(plain.route.candidates)  # the rules' runner-up
    moves = [
        Correction(_item("SQLite in containers", _DOCKER_2), True, "data", "moved the note"),
        Correction(_item("SQLite in pods", _DOCKER_2), True, "data", "moved the note"),
    ]
    moved = Scorer(ScoringSettings(), embedder, corrections=moves).score(item)
    assert moved.route.domain == "data"
    assert moved.route.reason.startswith("data (")
    assert "you filed 2 similar items under data" in moved.route.reason
    assert f"({moved.route.confidence:.2f})" in moved.route.reason
    undone = Scorer(ScoringSettings(), embedder).score(item)
    assert undone == plain


def test_moves_do_not_send_an_item_where_the_rules_see_nothing_of_it() -> None:
    # The person moved two similar notes to `other` (or to a domain the rules give 0):
    # that decides nothing for this one, whose rules name devops and data only.
    item = _item("SQLite in a Docker container", _DOCKER)
    embedder = real_embedder()
    plain = Scorer(ScoringSettings(), embedder).score(item)
    for target in ("other", "career"):
        moves = [
            Correction(_item("SQLite in containers", _DOCKER_2), True, target, "moved the note"),
            Correction(_item("SQLite in pods", _DOCKER_2), True, target, "moved the note"),
        ]
        card = Scorer(ScoringSettings(), embedder, corrections=moves).score(item)
        assert card.route == plain.route


def test_feedback_checks_its_inputs() -> None:
    correction = Correction(_item("a", _SQLITE), True, None, "x")
    with pytest.raises(ValueError, match="vectors"):
        Feedback([correction], np.zeros((2, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="composites"):
        Feedback([correction], np.zeros((1, 4), dtype=np.float32), composites=[0.5, 0.6])
    vector = text_vector(correction.item)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    assert dataclasses.is_dataclass(correction)


def test_same_source_is_the_feed_for_feed_entries_and_the_site_otherwise() -> None:
    from signaldesk.scoring.feedback import same_source

    a = _item("A", _SQLITE, url="https://proxy.example/1", feed="https://one.example/feed")
    b = _item("B", _SQLITE, url="https://proxy.example/2", feed="https://two.example/feed")
    c = _item("C", _SQLITE, url="https://elsewhere.example/3", feed="https://one.example/feed")
    assert not same_source(a, b) and same_source(a, c)
    clip = _clipping("D", _SQLITE, url="https://proxy.example/4")
    assert same_source(clip, a) and same_source(a, clip)
    assert not same_source(clip, _clipping("E", _SQLITE, url="https://other.example/5"))


def test_the_persons_line_follows_what_they_kept_near_it() -> None:
    from signaldesk.scoring.feedback import fit_line

    # Kept items just under the threshold and thrown ones well under it: their line is lower.
    lower = fit_line([0.50, 0.51, 0.52, 0.53, 0.30, 0.35], [True] * 4 + [False] * 2, 0.55)
    assert 0.01 <= lower <= 0.1
    # Thrown items just over it: higher (a negative line, added to every composite).
    higher = fit_line([0.57, 0.58, 0.60, 0.61, 0.80], [False] * 4 + [True], 0.55)
    assert -0.1 <= higher <= -0.01
    # Decisions the rules made right say nothing of a line, and nothing is not a line.
    assert fit_line([0.8, 0.75, 0.2, 0.3], [True, True, False, False], 0.55) == 0.0
    assert fit_line([], [], 0.55) == 0.0
    # However many corrections agree, the line moves at most 0.1.
    assert fit_line([0.40] * 500, [True] * 500, 0.55) == 0.1


def test_the_persons_line_moves_every_item_and_says_so() -> None:
    # Four kept items the rules left just under the line: an unrelated item moves with them.
    embedder = real_embedder()
    plain = Scorer(ScoringSettings(), embedder)
    kept = [_item(f"Garden log {n}", _GARDEN + f" Week {n}: the beans came up.") for n in range(4)]
    composites = [c.composite for c in plain.score_many(kept)]
    # Rebuilt so each kept item sits just under the threshold: what was left out.
    settings = ScoringSettings(threshold=max(composites) + 0.02)
    corrections = [Correction(item, True, "other", "`triage accept`") for item in kept]
    item = _item("Fixing database is locked in SQLite", _SQLITE_2)
    before = Scorer(settings, embedder).score(item)
    after = Scorer(settings, embedder, corrections=corrections).score(item)
    learned = after.learned
    assert learned is not None
    line = learned.features["line"]
    assert 0.01 <= line <= 0.1
    said = f"your 4 corrections near the threshold put your line {line:.2f} lower ({line:+.2f})"
    assert said in learned.reason
    assert after.composite == pytest.approx(before.composite + learned.value, abs=1e-3)
    assert learned.value == pytest.approx(learned.features["votes"] + line, abs=1e-4)
    # Undoing the corrections (a scorer without them) gives back the card of before.
    assert Scorer(settings, embedder).score(item) == before


def test_only_corrections_near_the_threshold_move_the_line() -> None:
    # Keeping notes triage scored far under the line says something of those notes (their
    # votes carry it), not that every line should drop.
    kept = [Correction(_item(f"Note {n}", _GARDEN), True, None, "x") for n in range(4)]
    vectors = np.stack([text_vector(c.item) for c in kept])
    far = Feedback(kept, vectors, composites=[0.2] * 4, threshold=0.55)
    near = Feedback(kept, vectors, composites=[0.5] * 4, threshold=0.55)
    assert (far.line, far.line_corrections) == (0.0, 0)
    assert near.line > 0.01 and near.line_corrections == 4
    with pytest.raises(ValueError, match="composites"):
        Feedback(kept, vectors, composites=[0.5])


def test_the_persons_line_reads_the_composite_triage_gave_with_the_feeds_prior() -> None:
    # Triage scored these items with their feed's prior; the line must be read against
    # those composites, not the lower ones of the same items without it.
    from signaldesk.scoring.feedback import fit_line

    embedder = real_embedder()
    plain = Scorer(ScoringSettings(), embedder)
    kept = [_item(f"Garden log {n}", _GARDEN + f" Week {n}: the beans came up.") for n in range(4)]
    given = [c.composite for c in plain.score_many(kept, priors=[0.95] * 4)]
    bare = [c.composite for c in plain.score_many(kept)]
    assert min(given) > max(bare)  # the prior moved them: the test can tell the two apart
    settings = ScoringSettings(threshold=max(given) + 0.02)

    def line(prior: float | None) -> float:
        corrections = [Correction(i, True, None, "`triage accept`", prior) for i in kept]
        return Scorer(settings, embedder, corrections=corrections).learned_line()[0]

    with_prior = fit_line(given, [True] * 4, settings.threshold)
    assert line(0.95) == pytest.approx(with_prior)
    assert line(None) == pytest.approx(fit_line(bare, [True] * 4, settings.threshold))
    assert line(0.95) < line(None)  # items kept nearer the line move it less
