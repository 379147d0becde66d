"""How a running index reports its progress, and how that report reaches the event loop."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import anyio.from_thread

__all__ = ["IndexProgress", "ProgressPhase", "threadsafe_progress"]

logger = logging.getLogger(__name__)

ProgressPhase = Literal["scanning", "indexing", "done"]


@dataclass(frozen=True, slots=True)
class IndexProgress:
    """A snapshot of a running index, handed to the ``progress`` callback."""

    phase: ProgressPhase
    files_total: int = 0
    files_done: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    rebuild_reason: str | None = None


def threadsafe_progress(
    callback: Callable[[IndexProgress], None] | None,
) -> Callable[[IndexProgress], None] | None:
    """Run ``callback`` in the event loop's thread; a failing callback never stops indexing."""
    if callback is None:
        return None

    def call(snapshot: IndexProgress) -> None:
        try:
            anyio.from_thread.run_sync(callback, snapshot)
        except Exception:
            logger.debug("progress callback failed", exc_info=True)

    return call
