"""Learning from corrections: relevance and routing follow what the person did, explainably."""

from __future__ import annotations

import dataclasses

from signaldesk.items import Item
from signaldesk.scoring import Scorer, ScoringSettings
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


def _item(title: str, text: str, url: str | None = None) -> Item:
    return Item(
        source_kind="rss", source_id="https://feeds.example/x", title=title, text=text, url=url
    )


def test_no_corrections_change_nothing() -> None:
    item = _item("Fixing database is locked in SQLite", _SQLITE_2)
    plain = Scorer(ScoringSettings(), None).score(item)
    empty = Scorer(ScoringSettings(), None, corrections=()).score(item)
    assert plain == empty


def test_kept_and_rejected_similar_items_move_relevance_with_a_reason() -> None:
    item = _item("Fixing database is locked in SQLite", _SQLITE_2)
    kept = [Correction(_item("SQLite WAL mode", _SQLITE), True, "data", "`triage accept`")]
    thrown = [Correction(_item("SQLite WAL mode", _SQLITE), False, None, "`triage reject`")]
    embedder = real_embedder()
    plain = Scorer(ScoringSettings(), embedder).score(item)
    up = Scorer(ScoringSettings(), embedder, corrections=kept).score(item)
    down = Scorer(ScoringSettings(), embedder, corrections=thrown).score(item)
    assert up.relevance.value > plain.relevance.value > down.relevance.value
    assert up.relevance.features["feedback_shift"] > 0 > down.relevance.features["feedback_shift"]
    assert "you kept 1 similar item" in up.relevance.reason
    assert "you rejected 1 similar item" in down.relevance.reason
    assert up.composite > plain.composite > down.composite
    # The other dimensions are the scorer's own.
    assert up.depth == plain.depth and up.actionability == plain.actionability


def test_an_unrelated_correction_does_not_vote() -> None:
    item = _item("Fixing database is locked in SQLite", _SQLITE_2)
    garden = [Correction(_item("Tomatoes", _GARDEN), False, None, "deleted the note")]
    embedder = real_embedder()
    plain = Scorer(ScoringSettings(), embedder).score(item)
    after = Scorer(ScoringSettings(), embedder, corrections=garden).score(item)
    assert after == plain


def test_same_site_votes_a_little_and_says_so() -> None:
    url = "https://blog.example.org/a"
    item = _item("Gardening notes", _GARDEN, url="https://blog.example.org/b")
    other = _item("Something else entirely", _SQLITE, url=url)
    card = Scorer(ScoringSettings(), None, corrections=[Correction(other, False, None, "x")]).score(
        item
    )
    assert "1 other item from this site" in card.relevance.reason
    assert card.relevance.features["feedback_shift"] < 0


def test_moves_of_similar_items_reroute_and_undo_restores() -> None:
    item = _item("Fixing database is locked in SQLite", _SQLITE_2)
    embedder = real_embedder()
    moves = [
        Correction(_item("SQLite WAL mode", _SQLITE), True, "devops", "moved the note"),
        Correction(_item("SQLite WAL mode again", _SQLITE), True, "devops", "moved the note"),
    ]
    plain = Scorer(ScoringSettings(), embedder).score(item)
    assert plain.route.domain == "data"
    moved = Scorer(ScoringSettings(), embedder, corrections=moves).score(item)
    assert moved.route.domain == "devops"
    assert moved.route.reason.startswith("devops (")
    assert "you filed 2 similar items under devops" in moved.route.reason
    assert f"({moved.route.confidence:.2f})" in moved.route.reason
    undone = Scorer(ScoringSettings(), embedder).score(item)
    assert undone == plain


def test_feedback_checks_its_inputs() -> None:
    import numpy as np
    import pytest

    correction = Correction(_item("a", _SQLITE), True, None, "x")
    with pytest.raises(ValueError, match="vectors"):
        Feedback([correction], np.zeros((2, 4), dtype=np.float32))
    vector = text_vector(correction.item)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    assert dataclasses.is_dataclass(correction)
