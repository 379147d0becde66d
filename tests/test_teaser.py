"""Teasers are marked, not judged: a card scored on a feed's teaser says so, and the item is
scored again once its full text arrives."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from signaldesk.pipeline.ledger.store import open_ledger
from signaldesk.pipeline.triage.records import card_to_json
from signaldesk.pipeline.triage.run import triage
from signaldesk.scoring import Scorer, ScoringSettings
from signaldesk.scoring.records import TEASER_NOTE
from tests.index_helpers import real_embedder
from tests.triage_data import advisory_item, config, on_postgres, pend, workspace


def _teaser() -> object:
    full = advisory_item(1)
    return dataclasses.replace(full, text="A new post on the blog. Read more…", teaser=True)


def test_a_card_scored_on_a_teaser_says_so() -> None:
    item = _teaser()
    scorer = Scorer(ScoringSettings(), None)
    card = scorer.score(item)  # type: ignore[arg-type]
    assert card.teaser and card.depth.features["teaser"] == 1.0
    assert card.depth.reason.endswith(TEASER_NOTE)
    data = card_to_json(card, threshold=0.55)
    assert data["teaser"] is True and TEASER_NOTE in data["summary"]
    full = scorer.score(advisory_item(1))
    assert not full.teaser and TEASER_NOTE not in full.depth.reason
    assert "teaser" not in full.depth.features


@pytest.mark.anyio
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_an_item_scored_on_a_teaser_is_scored_again_with_its_full_text(
    vault: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    ws = workspace(vault, config(scoring=ScoringSettings()))
    if backend == "postgres":
        ws = on_postgres(workspace, request.getfixturevalue("postgres"))(ws.vault, ws.config)
    teaser = _teaser()
    (item_id,) = await pend(ws, [teaser])  # type: ignore[list-item]
    first = await triage(ws, embedder=real_embedder())
    (decision,) = first.decisions
    assert decision.decision == "rejected"
    assert decision.message is not None and "teaser" in decision.message
    # Nothing new: a second run leaves it alone.
    assert (await triage(ws, embedder=real_embedder())).decisions == []
    # Intake replaces the teaser with the page's full text.
    async with open_ledger(ws) as ledger:
        await ledger.advance(item_id, "rejected", item=advisory_item(1))
    again = await triage(ws, embedder=real_embedder())
    (rescored,) = again.decisions
    assert rescored.item_id == item_id and rescored.decision == "filed"
    assert rescored.message is None
    async with open_ledger(ws) as ledger:
        entry = await ledger.get(item_id)
    assert entry is not None and entry.status == "filed" and entry.scores is not None
    assert entry.scores["teaser"] is False
    # And it is not scored a third time.
    assert (await triage(ws, embedder=real_embedder())).decisions == []
