"""The fusion weights measured for each kind of embedding model.

How much the vector list should count depends on how good the vectors are: the
bundled static model is right far less often than a sentence transformer, so a
blend tuned for one is wrong for the other. ``[search] note_weight``,
``bm25_weight`` and ``vector_weight`` left unset take the weights measured for
the model that built the index's vectors (docs/ranking.md has the figures and
how they were chosen, on the tuning halves only); each one set in the config
overrides its measured value.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from signaldesk.retrieval.onnx_embedder import ONNX_MODEL_NAME, is_onnx_folder

if TYPE_CHECKING:
    from signaldesk.retrieval.settings import SearchSettings

__all__ = [
    "DECISIVE_DEPTH",
    "MEASURED",
    "ListWeights",
    "decisiveness",
    "measured_weights",
    "model_kind",
    "resolve_weights",
    "vector_weight_for",
]


@dataclass(frozen=True, slots=True)
class ListWeights:
    """Weights of the note keyword, chunk keyword and vector lists in fusion, and how
    far the vector weight yields to a decisive keyword list (see :func:`vector_weight_for`).
    """

    note: float
    bm25: float
    vector: float
    vector_yield: float = 0.0


# Chosen on the vault questions' tuning half and SciFact train by one rule,
# `python -m bench.quality.pick` (docs/ranking.md, "One rule for every model");
# only the ratios of the three weights matter.
MEASURED: dict[str, ListWeights] = {
    "static": ListWeights(note=0.5, bm25=0.1, vector=0.7, vector_yield=1.0),
    "transformer": ListWeights(note=0.4, bm25=0.2, vector=1.0, vector_yield=1.0),
}


def model_kind(model_name: str | None) -> str:
    """``"transformer"`` for the ONNX tier (by name, or a folder holding an export),
    else ``"static"`` (Model2Vec models, the bundled one, or no model at all)."""
    if not model_name:
        return "static"
    if model_name == ONNX_MODEL_NAME:
        return "transformer"
    folder = Path(model_name)
    return "transformer" if folder.is_absolute() and is_onnx_folder(folder) else "static"


def measured_weights(model_name: str | None) -> ListWeights:
    """The measured weights for the model named ``model_name`` (the index's ``model_name``)."""
    return MEASURED[model_kind(model_name)]


def resolve_weights(settings: SearchSettings, model_name: str | None) -> ListWeights:
    """The weights in force: each one set in ``settings``, else the measured one."""
    measured = measured_weights(model_name)
    return ListWeights(
        note=measured.note if settings.note_weight is None else settings.note_weight,
        bm25=measured.bm25 if settings.bm25_weight is None else settings.bm25_weight,
        vector=measured.vector if settings.vector_weight is None else settings.vector_weight,
        vector_yield=(
            measured.vector_yield if settings.vector_yield is None else settings.vector_yield
        ),
    )


DECISIVE_DEPTH = 10
"""How many of the keyword list's best scores :func:`decisiveness` compares."""


def decisiveness(keyword_scores: Iterable[float], depth: int = DECISIVE_DEPTH) -> float:
    """How decisive a keyword list is, in [0, 1]: the gap between its best and its
    ``depth``-th best score (its last, when fewer match), relative to the best;
    0 for an empty list or a single match."""
    top = heapq.nlargest(depth, keyword_scores)
    if not top or top[0] <= 0:
        return 0.0
    return max(0.0, min(1.0, (top[0] - top[-1]) / top[0]))


def vector_weight_for(weights: ListWeights, keyword_scores: Iterable[float]) -> float:
    """The vector list's weight for one query.

    Trigger: a question whose words single out a few notes (a rare name, a
    technical term) is answered by the keyword lists; one made of everyday words
    that match half the vault is not, and the vectors should decide more.
    Why: on the tuning sets a fixed weight could not serve both kinds (the vault
    questions wanted vectors at 0.5-0.6, SciFact at 0.3 or less with the static
    model); scaling the vector weight by ``1 - vector_yield * decisiveness``
    served both (docs/ranking.md). Outcome: the same ranking as a fixed weight
    when ``vector_yield`` is 0.
    """
    return weights.vector * (1.0 - weights.vector_yield * decisiveness(keyword_scores))
