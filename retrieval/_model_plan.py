"""Which embedding model an index run uses, and whether the index must be rebuilt for it.

A different fingerprint, dimension or vector format means a rebuild; a model that does
not load is an error when the index already has vectors (rebuilding without them, or
with the bundled stand-in, would throw away every stored vector over what may be a
passing problem: a model folder missing for a moment, a cleared cache).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from signaldesk.retrieval._writer import ModelMeta, WriterLike
from signaldesk.retrieval.embedder import (
    BUNDLED_MODEL_NAME,
    Embedder,
    fingerprint_for,
    source_key,
)
from signaldesk.retrieval.errors import ModelError
from signaldesk.retrieval.settings import IndexSettings

__all__ = ["ModelPlan", "current_model", "plan_model"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ModelPlan:
    """What a run embeds with and whether it rebuilds (``reason``)."""

    model: ModelMeta
    model_error: str | None
    index_format: str
    reason: str | None
    stored: ModelMeta | None


def plan_model(
    writer: WriterLike,
    embedder: Embedder,
    settings: IndexSettings,
    *,
    full: bool,
    index_format: str,
    vector_type: str,
) -> ModelPlan:
    """Which model this run embeds with, and whether (and why) it must rebuild.

    :raises ModelError: the model does not load (or only the bundled stand-in did) and
        the index holds vectors of another one; the index is left as it is.
    """
    model, model_error = current_model(writer, embedder, vector_type)
    reason = "full rebuild requested" if full else None
    stored = writer.model_meta()
    if model_error and stored is not None and stored.vector_type != "none":
        raise ModelError(
            f"{model_error}; the index has vectors from {stored.name}, so it was left as is",
            hint="run `signaldesk doctor` to see why the model does not load",
        )
    if reason is None and stored is not None and _differs(stored, model):
        if _fell_back(model, settings) and stored.vector_type != "none":
            raise ModelError(
                f"the configured embedding model {settings.model!r} did not load "
                f"(the bundled model stood in); the index has vectors from "
                f"{stored.name or '?'}, so it was left as is",
                hint="restore the model (or fix `[index] model`), or run "
                "`signaldesk index --full` to rebuild with the bundled model",
            )
        reason = f"embedding model changed ({_describe(stored)} -> {_describe(model)})"
    if reason is None and stored is None and writer.note_count() > 0:
        reason = "index has no model record"
    return ModelPlan(model, model_error, index_format, reason, stored)


def current_model(
    writer: WriterLike, embedder: Embedder, vector_type: str
) -> tuple[ModelMeta, str | None]:
    """The model this run embeds with; ``vector_type="none"`` when vectors are off."""
    if not writer.has_vec:
        return ModelMeta("", "", 0, "none"), None
    try:
        return (
            ModelMeta(
                name=embedder.name,
                # The recorded fingerprint when these are the model files the index
                # recorded (embedder.fingerprint_for): no hashing of the model.
                fingerprint=fingerprint_for(
                    embedder, writer.meta("model_fingerprint"), writer.meta("model_source_key")
                ),
                dimensions=int(embedder.dimensions),
                vector_type=vector_type,
                source_key=source_key(embedder),
            ),
            None,
        )
    except ModelError as exc:
        logger.warning("no embedding model, indexing for keyword search only: %s", exc)
        return ModelMeta("", "", 0, "none"), f"embedding model unavailable: {exc.message}"


def _fell_back(model: ModelMeta, settings: IndexSettings) -> bool:
    """The configured model did not load and the bundled one stood in for it."""
    configured = settings.model.strip()
    return model.name == BUNDLED_MODEL_NAME and configured != BUNDLED_MODEL_NAME


def _differs(stored: ModelMeta, current: ModelMeta) -> bool:
    return (stored.fingerprint, stored.dimensions, stored.vector_type) != (
        current.fingerprint,
        current.dimensions,
        current.vector_type,
    )


def _describe(model: ModelMeta) -> str:
    if model.vector_type == "none":
        return "no vectors"
    return f"{model.name or '?'} {model.dimensions}d {model.vector_type} [{model.fingerprint[:12]}]"
