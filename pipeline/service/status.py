"""What `signaldesk status` shows: the scheduler's jobs, feeds in trouble, the ledger
and the index, read without disturbing a running `serve`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.intake.feeds import FeedRegistry
from signaldesk.pipeline.ledger.store import ledger_exists, open_ledger
from signaldesk.pipeline.reports.triage_report import FeedIssue, feed_issues
from signaldesk.pipeline.service.job_state import ServeState, load_state, serve_running, state_path
from signaldesk.retrieval.records import IndexStatus
from signaldesk.retrieval.status import index_status

__all__ = ["ServiceStatus", "gather_status"]


@dataclass
class ServiceStatus:
    """A snapshot of the service of one vault."""

    vault: Path
    running: bool
    state: ServeState | None
    feeds_total: int = 0
    feed_issues: list[FeedIssue] = field(default_factory=list)
    items: dict[str, int] = field(default_factory=dict)
    index: IndexStatus | None = None


async def gather_status(workspace: Workspace) -> ServiceStatus:
    """Read the state file, the ledger (if there is one; none is created) and the index."""
    vault = workspace.vault
    status = ServiceStatus(
        vault=vault,
        running=serve_running(vault),
        state=load_state(state_path(vault)),
        index=index_status(vault, workspace.config.index),
    )
    if ledger_exists(workspace):
        async with open_ledger(workspace) as ledger:
            records = await FeedRegistry(ledger).records()
            counts = await ledger.status_counts()
        status.feeds_total = len(records)
        status.feed_issues = feed_issues(records, datetime.now(UTC))
        by_status: Counter[str] = Counter()
        for (_, item_status), n in counts.items():
            by_status[item_status] += n
        status.items = dict(sorted(by_status.items()))
    return status
