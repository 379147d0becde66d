"""The shipped resemblance direction: loaded for the bundled model only, said in depth's
reason exactly as applied, and pointing from noise towards substance on real-shaped text."""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from bench.triage.reasons import contradictions
from signaldesk.items import Item
from signaldesk.scoring import Scorer, ScoringSettings
from signaldesk.scoring import resemblance as resemblance_module
from signaldesk.scoring.errors import DataFileError
from signaldesk.scoring.records import DimensionScore
from signaldesk.scoring.resemblance import Resemblance, with_resemblance
from tests.index_helpers import real_embedder

HOWTO = Item(
    source_kind="rss",
    source_id="f",
    title="Tuning autovacuum on a busy PostgreSQL table",
    url="https://blog.example.org/autovacuum",
    text=(
        "A table with 40 million rows and 2,000 updates a second bloated by 30 % a week. "
        "Autovacuum ran, but its default scale factor of 0.2 meant it waited for 8 million "
        "dead rows. Set it per table instead:\n\n"
        "```sql\nALTER TABLE events SET (autovacuum_vacuum_scale_factor = 0.01);\n```\n\n"
        "Then watch pg_stat_user_tables.n_dead_tup: it should stay under 400,000. "
        "Raise autovacuum_vacuum_cost_limit to 2000 if vacuum cannot keep up, and check "
        "that no long transaction holds back the xmin horizon."
    ),
)
PRESS = Item(
    source_kind="rss",
    source_id="f",
    title="Acme Corp announces strategic partnership to accelerate innovation",
    url="https://news.example.com/acme-partnership",
    text=(
        "Acme Corp, a leading provider of next-generation solutions, today announced a "
        "strategic partnership with Globex to accelerate digital transformation for "
        'enterprises worldwide. "We are thrilled to join forces," said the CEO. The '
        "partnership will unlock synergies and deliver unparalleled value to customers. "
        "Acme serves over 500 customers in 30 countries. For media inquiries, contact "
        "press@acme.example."
    ),
)


class OtherModel:
    """The bundled model's vectors under another model's fingerprint."""

    def __init__(self) -> None:
        self.inner = real_embedder()

    @property
    def name(self) -> str:
        return "another-model"

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    @property
    def fingerprint(self) -> str:
        return "0" * 64

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.inner.encode(texts)


def test_the_shipped_direction_belongs_to_the_bundled_model() -> None:
    # Fails when the bundled model changes without `python -m bench.triage.fit_resemblance`.
    embedder = real_embedder()
    shipped = Resemblance.shipped()
    assert shipped.fits(embedder.fingerprint, embedder.dimensions)
    assert not shipped.fits("0" * 64, embedder.dimensions)
    assert not shipped.fits(embedder.fingerprint, embedder.dimensions + 1)


def test_depth_moves_by_what_its_reason_says() -> None:
    on = Scorer(ScoringSettings(), real_embedder())
    off = Scorer(ScoringSettings(resemblance=False), real_embedder())
    for item in (HOWTO, PRESS):
        card, plain = on.score(item), off.score(item)
        assert "resemblance" not in plain.depth.features
        applied = card.depth.features["resemblance"]
        assert card.depth.features["before_resemblance"] == plain.depth.value
        assert card.depth.value == pytest.approx(plain.depth.value + applied, abs=1e-4)
        side = "keep" if applied > 0 else "reject"
        assert card.depth.reason == (
            f"{plain.depth.reason}; reads like articles curators {side} ({applied:+.2f})"
        )
        assert not contradictions(card, item, 0.55)
    # The direction points from the press release towards the how-to.
    shift = {item.title: on.score(item).depth.features["resemblance"] for item in (HOWTO, PRESS)}
    assert shift[HOWTO.title] > 0 > shift[PRESS.title]


def test_another_model_or_none_leaves_depth_as_measured() -> None:
    plain = Scorer(ScoringSettings(resemblance=False), real_embedder()).score(HOWTO)
    other = Scorer(ScoringSettings(), OtherModel()).score(HOWTO)
    assert other.depth == plain.depth
    keyword_only = Scorer(ScoringSettings(), None).score(HOWTO)
    assert "resemblance" not in keyword_only.depth.features


def test_a_keyword_only_scorer_does_not_read_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(name: str) -> dict[str, object]:
        raise AssertionError(f"read {name}")

    monkeypatch.setattr(resemblance_module, "load_data_file", broken)
    Scorer(ScoringSettings(), None).score(HOWTO)
    Scorer(ScoringSettings(resemblance=False), real_embedder()).score(HOWTO)


@pytest.mark.parametrize(
    "data",
    [{"fingerprint": "f", "bias": 0.0}, {"fingerprint": "f", "bias": "x", "weights": [1.0]}],
)
def test_a_malformed_file_is_a_broken_install(
    monkeypatch: pytest.MonkeyPatch, data: dict[str, object]
) -> None:
    monkeypatch.setattr(resemblance_module, "load_data_file", lambda name: data)
    with pytest.raises(DataFileError, match="malformed"):
        Resemblance.shipped()
    monkeypatch.setattr(
        resemblance_module, "load_data_file", lambda name: {**data, "bias": 0, "weights": []}
    )
    with pytest.raises(DataFileError, match="no weights"):
        Resemblance.shipped()


def test_the_shift_is_kept_in_range_and_said_as_applied() -> None:
    depth = DimensionScore(value=0.95, reason="800 words", features={"words": 800.0})
    up = with_resemblance(depth, 0.3)
    assert up.value == 1.0 and up.features["resemblance"] == pytest.approx(0.05)
    assert up.reason == "800 words; reads like articles curators keep (+0.05)"
    down = with_resemblance(depth, -0.1)
    assert down.value == pytest.approx(0.85)
    assert down.reason.endswith("reads like articles curators reject (-0.10)")
    # Too small to show in two decimals: the card is left as it was.
    assert with_resemblance(depth, 0.004) is depth
    # At the edge already: nothing applied, nothing said.
    assert with_resemblance(dataclasses.replace(depth, value=1.0), 0.2).value == 1.0
    assert "reads like" not in with_resemblance(dataclasses.replace(depth, value=1.0), 0.2).reason


def test_the_reason_checker_catches_a_resemblance_claim_that_lies() -> None:
    card = Scorer(ScoringSettings(), real_embedder()).score(HOWTO)
    depth = card.depth
    assert not contradictions(card, HOWTO, 0.55)
    applied = depth.features["resemblance"]
    lies = [
        dataclasses.replace(depth, reason=depth.reason.replace("keep", "reject")),
        dataclasses.replace(depth, features={**depth.features, "resemblance": applied + 0.05}),
        dataclasses.replace(depth, value=round(depth.value - 0.03, 4)),
        dataclasses.replace(depth, reason=depth.reason.split("; reads like")[0]),
    ]
    for wrong in lies:
        assert contradictions(dataclasses.replace(card, depth=wrong), HOWTO, 0.55), wrong


def test_the_fit_is_written_as_the_scorer_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The standardisation folded into the weights gives the same shift, in depth units."""
    from bench.triage import fit_resemblance as fitting

    rng = np.random.default_rng(7)
    n, dims = 120, 16
    vectors = rng.normal(size=(n, dims))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    composite = rng.uniform(0.3, 0.8, size=n)
    labels = ((composite - 0.55) * 4 + vectors[:, 0] * 3 + rng.normal(0, 0.3, n) > 0).astype(float)
    ids = [f"item{i // 2}" for i in range(n)]
    rows = fitting.Rows(ids, ids, ["s"] * n, composite, rng.uniform(0, 1, size=n), vectors, labels)
    f = fitting.fit(rows, np.ones(n, dtype=bool), 10.0, 0.55)
    out = tmp_path / "resemblance.toml"
    fitting.write(f, depth_weight=0.25, l2=10.0, rows=rows, fingerprint="fp", model="m", out=out)
    monkeypatch.setattr(
        resemblance_module, "load_data_file", lambda name: tomllib.loads(out.read_text())
    )
    shipped = Resemblance.shipped()
    assert shipped.fits("fp", dims)
    expected = f.composite_shift(vectors) / 0.25
    assert np.allclose(shipped.shifts(vectors.astype(np.float32)), expected, atol=2e-3)
    # The direction it found is the one the labels were made from.
    assert shipped.weights[0] == max(shipped.weights)
