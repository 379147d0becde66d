"""Fusion weights measured per kind of embedding model, and config overrides."""

from __future__ import annotations

from pathlib import Path

from signaldesk.retrieval.embedder import BUNDLED_MODEL_NAME
from signaldesk.retrieval.onnx_embedder import ONNX_MODEL_NAME, bundled_onnx_path
from signaldesk.retrieval.settings import SearchSettings
from signaldesk.retrieval.weights import (
    MEASURED,
    ListWeights,
    decisiveness,
    measured_weights,
    model_kind,
    resolve_weights,
    vector_weight_for,
)


def test_the_transformer_tier_is_known_by_name_or_by_its_folder(tmp_path: Path) -> None:
    assert model_kind(ONNX_MODEL_NAME) == "transformer"
    assert model_kind(str(bundled_onnx_path())) == "transformer"
    assert model_kind(BUNDLED_MODEL_NAME) == "static"
    assert model_kind("minishlab/potion-base-8M") == "static"
    assert model_kind(None) == "static"
    assert model_kind("") == "static"
    assert model_kind(str(tmp_path)) == "static"  # a folder without an export


def test_each_kind_gets_its_own_measured_weights() -> None:
    assert MEASURED["transformer"] != MEASURED["static"]
    assert measured_weights(ONNX_MODEL_NAME) == MEASURED["transformer"]
    assert measured_weights(BUNDLED_MODEL_NAME) == MEASURED["static"]
    assert measured_weights(None) == MEASURED["static"]


def test_a_weight_set_in_the_config_overrides_only_itself() -> None:
    measured = MEASURED["transformer"]
    w = resolve_weights(SearchSettings(vector_weight=0.25), ONNX_MODEL_NAME)
    assert w == ListWeights(measured.note, measured.bm25, 0.25, measured.vector_yield)
    assert resolve_weights(SearchSettings(), ONNX_MODEL_NAME) == measured
    assert resolve_weights(SearchSettings(vector_yield=0.0), None).vector_yield == 0.0


def test_the_vector_weight_yields_to_a_decisive_keyword_list() -> None:
    assert decisiveness([]) == 0.0
    assert decisiveness([5.0]) == 0.0
    assert decisiveness([10.0, 1.0]) == 0.9
    assert decisiveness([10.0, 10.0, 10.0]) == 0.0
    weights = ListWeights(note=0.5, bm25=0.0, vector=0.5, vector_yield=1.0)
    assert vector_weight_for(weights, [10.0, 9.5, 9.0]) > vector_weight_for(weights, [10.0, 1.0])
    fixed = ListWeights(note=0.5, bm25=0.0, vector=0.5, vector_yield=0.0)
    assert vector_weight_for(fixed, [10.0, 1.0]) == 0.5
