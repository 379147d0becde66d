"""After a whole-vault index run: forget the ledger's queued paths (see
:meth:`pipeline.ledger.store.Ledger.index_queue`), which that run has looked at.

Kept apart from :mod:`pipeline.intake.run` so that `signaldesk index` does not import
the intake stack (HTTP client, feed parser) just to clear a queue.
"""

from __future__ import annotations

import logging
import sqlite3
from datetime import datetime

from signaldesk.errors import SignaldeskError
from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.ledger.store import ledger_exists, open_ledger

__all__ = ["forget_indexed"]

logger = logging.getLogger(__name__)


async def forget_indexed(workspace: Workspace, started: datetime) -> None:
    """Drop the paths queued before ``started`` (a whole-vault index run began then).

    Best effort: a ledger that cannot be opened only means the next triage run
    looks at those paths once more (a stat each).
    """
    if not ledger_exists(workspace):
        return  # `index` never creates a ledger
    try:
        async with open_ledger(workspace) as ledger:
            await ledger.clear_index_queue(started)
    except (SignaldeskError, OSError, sqlite3.Error) as exc:
        logger.info("index queue not cleared: %s", exc)
