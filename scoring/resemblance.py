"""Resemblance: how much an item reads like the articles a careful curator keeps.

The rules of depth, actionability and authority see structure (code, steps, numbers, the
source) but not what kind of page an item is: a vendor's press release and a how-to on the
same topic can carry the same headings and figures. The embedding of an item's opening
does see that, so signaldesk ships one direction in the bundled model's embedding space,
fitted on the tuning halves of the labelled triage sets (``python -m
bench.triage.fit_resemblance``, bench/triage/README.md): the logistic fit of the curator's
labels on the calibrated composite and the embedding, with the composite's slope free and
the embedding's weights regularised. Its part of the logit, over the composite's slope, is
how far the composite had to move for the curator's line; it is added to depth (the
substance score, whose calibrated values leave it the most room) and said in depth's
reason ("reads like articles curators keep (+0.12)").

The direction belongs to one model: with another embedding model, or none, depth is as
measured and calibrated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from signaldesk.scoring._calc import clamp
from signaldesk.scoring.catalogue import load_data_file
from signaldesk.scoring.errors import DataFileError
from signaldesk.scoring.records import DimensionScore

__all__ = ["DATA_FILE", "Resemblance", "with_resemblance"]

DATA_FILE = "resemblance.toml"
"""The fitted direction, under ``scoring/data/``."""


@dataclass(frozen=True, slots=True)
class Resemblance:
    """A fitted direction in one model's embedding space.

    :param fingerprint: the :attr:`Embedder.fingerprint` of the model it was fitted on.
    :param weights: one weight per embedding dimension (depth units per unit of a
        unit-length embedding).
    :param bias: the depth shift of an embedding of all zeros.
    """

    fingerprint: str
    weights: npt.NDArray[np.float64]
    bias: float

    @classmethod
    def shipped(cls) -> Resemblance:
        """The direction in ``scoring/data/resemblance.toml``.

        :raises DataFileError: the file is missing or malformed (a broken install).
        """
        data = load_data_file(DATA_FILE)
        try:
            weights = np.asarray(data["weights"], dtype=np.float64)
            out = cls(str(data["fingerprint"]), weights, float(data["bias"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise DataFileError(
                f"shipped scoring data file {DATA_FILE} is malformed: {exc}",
                hint="reinstall signaldesk",
            ) from exc
        if weights.ndim != 1 or not weights.size:
            raise DataFileError(
                f"shipped scoring data file {DATA_FILE} has no weights",
                hint="reinstall signaldesk",
            )
        return out

    def fits(self, fingerprint: str, dimensions: int) -> bool:
        """True when vectors of this model can be read along the direction."""
        return fingerprint == self.fingerprint and dimensions == self.weights.size

    def shifts(self, vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        """The depth shift of each unit-length row of ``vectors``."""
        shifts: npt.NDArray[np.float64] = vectors @ self.weights + self.bias
        return shifts


def with_resemblance(depth: DimensionScore, shift: float) -> DimensionScore:
    """``depth`` moved by ``shift`` (kept in 0..1); the reason says what was applied."""
    value = round(clamp(depth.value + shift), 4)
    applied = round(value - depth.value, 4)
    if round(applied, 2) == 0:
        # Too small to say in two decimals: leave the card as it was, so no reason
        # claims a change of +0.00.
        return depth
    side = "keep" if applied > 0 else "reject"
    return DimensionScore(
        value=value,
        reason=f"{depth.reason}; reads like articles curators {side} ({applied:+.2f})",
        features={**depth.features, "resemblance": applied, "before_resemblance": depth.value},
    )
