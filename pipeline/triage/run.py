"""The triage runs: ``signaldesk triage``, a scan followed by triage, a capture and its
triage; each takes the workspace, the lock and the ledger, and drives a
:class:`~pipeline.triage.triager.Triager`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.to_thread

from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.intake.run import IntakeSession
from signaldesk.pipeline.intake.summary import ScanStats
from signaldesk.pipeline.ledger.base import ItemLedger
from signaldesk.pipeline.ledger.store import ledger_exists, open_ledger
from signaldesk.pipeline.triage.corrections import notice_vault_corrections
from signaldesk.pipeline.triage.lock import TriageBusyError, triage_lock
from signaldesk.pipeline.triage.records import (
    TriageProgress,
    TriageReport,
)
from signaldesk.pipeline.triage.triager import CONFIGURED_MODEL, Triager, _Default, triage_lock_path
from signaldesk.retrieval.embedder import Embedder, LazyEmbedder
from signaldesk.vault import sweep_temp_files

__all__ = ["capture_and_triage", "scan_and_triage", "triage"]

logger = logging.getLogger(__name__)


async def _sweep_leftovers(workspace: Workspace) -> None:
    """Remove the temporary files a killed triage (or capture) left in the folders it
    writes to, under the triage lock so that no other triage is writing meanwhile."""
    started = time.time()
    settings = workspace.config.triage
    signals = workspace.vault / settings.signals_folder
    drop = workspace.resolve(workspace.config.tool_output.drop_folder)
    lock = triage_lock_path(workspace)

    def sweep() -> list[Path]:
        removed = sweep_temp_files(signals, older_than=started) if signals.is_dir() else []
        # A capture does not take the triage lock: leave it a minute to finish.
        if drop.is_dir():
            removed += sweep_temp_files(drop, older_than=started - 60)
        return removed

    try:
        async with triage_lock(lock, timeout=settings.lock_timeout):
            removed = await anyio.to_thread.run_sync(sweep)
    except (TriageBusyError, OSError) as exc:
        logger.debug("temporary files not swept: %s", exc)
        return
    if removed:
        logger.info(
            "removed %d temporary file(s) an interrupted run left: %s",
            len(removed),
            ", ".join(p.name for p in removed[:5]),
        )


@asynccontextmanager
async def _maybe_ledger(workspace: Workspace, dry_run: bool) -> AsyncIterator[ItemLedger | None]:
    if dry_run and not ledger_exists(workspace):
        yield None  # a dry run never creates the ledger
        return
    async with open_ledger(workspace) as ledger:
        yield ledger


async def triage(
    workspace: Workspace,
    *,
    dry_run: bool = False,
    item_ids: Collection[str] | None = None,
    rescore: bool = False,
    inbox: bool = True,
    progress: Callable[[TriageProgress], None] | None = None,
    embedder: Embedder | _Default | None = CONFIGURED_MODEL,
    decided: Mapping[str, tuple[bool, str | None]] | None = None,
) -> TriageReport:
    """Triage the inbox and the ledger's pending items: score, file, record, index.

    :param dry_run: decide everything and write nothing (no note, no ledger row, no index).
    :param item_ids: triage exactly these ledger items (pending, filed or rejected).
    :param rescore: also re-score items already filed or rejected (their notes get new
        scores unless a person edited them; nothing is moved or deleted).
    :param inbox: pick up what waits in the drop folders first (new Web Clipper notes,
        newsletters, tool output; ignored with ``item_ids``).
    :param embedder: the embedding model the scorer and the indexer share (default: the
        configured one, loaded on first use; ``None``: keyword-only, nothing indexed).
    :param decided: the person's decisions for some items (see :class:`Triager`).
    :raises TriageError: the scorer cannot be built.
    """
    if embedder is CONFIGURED_MODEL:
        embedder = LazyEmbedder(workspace.config.index)
    if not dry_run:
        await _sweep_leftovers(workspace)
    async with _maybe_ledger(workspace, dry_run) as ledger:
        triager = Triager(
            workspace,
            ledger,
            embedder=embedder,
            dry_run=dry_run,
            progress=progress,
            decided=decided,
        )
        if ledger is not None and not dry_run:
            noticed = await notice_vault_corrections(ledger, triager.writer, triager.settings)
            triager.report.corrections = [f"{r.how}: {r.item_id[:10]}" for r in noticed]
        if inbox and item_ids is None:
            if dry_run:
                await triager.preview_inbox()
            else:
                assert ledger is not None
                # Every drop folder, not only the clipper's: a newsletter waiting in its
                # folder must not make `triage` say there is nothing to triage.
                await IntakeSession(workspace, ledger).scan(
                    sources=("clipper", "newsletter", "tool_output"), handoff=triager.submit
                )
        await triager.run_ledger(item_ids=item_ids, rescore=rescore)
        return await triager.finish()


async def scan_and_triage(
    workspace: Workspace,
    *,
    sources: Collection[str] | None = None,
    force: bool = False,
    on_progress: Callable[[ScanStats], None] | None = None,
    progress: Callable[[TriageProgress], None] | None = None,
    embedder: Embedder | _Default | None = CONFIGURED_MODEL,
) -> tuple[ScanStats, TriageReport | None]:
    """One scan that runs through to filing: intake hands each new item to triage,
    which scores and files it in batches while the scan goes on; then items left
    pending earlier are triaged too, and every written note is indexed.

    With ``[triage] after_scan = false`` this is a plain scan (report ``None``).
    """
    await _sweep_leftovers(workspace)
    async with IntakeSession.open(workspace, sources=sources) as intake:
        if not workspace.config.triage.after_scan:
            stats = await intake.scan(sources=sources, force=force, on_progress=on_progress)
            return stats, None
        triager = Triager(
            workspace,
            intake.ledger,
            embedder=(
                LazyEmbedder(workspace.config.index) if embedder is CONFIGURED_MODEL else embedder
            ),
            progress=progress,
        )
        stats = await intake.scan(
            sources=sources, force=force, handoff=triager.submit, on_progress=on_progress
        )
        await triager.run_ledger()
        return stats, await triager.finish()


async def capture_and_triage(
    workspace: Workspace,
    text: str,
    *,
    title: str | None = None,
    tags: Collection[str] = (),
    source: str | None = None,
    progress: Callable[[TriageProgress], None] | None = None,
    embedder: Embedder | _Default | None = CONFIGURED_MODEL,
) -> tuple[Path, ScanStats, TriageReport | None]:
    """Capture ``text`` (:func:`pipeline.intake.run.capture`) and triage it through the
    same hand-off a scan uses: when it passes, its note is filed and indexed by the
    time this returns.

    Only what this capture ingested is triaged (items pending from elsewhere wait
    for the next scan or ``signaldesk triage``, so a capture stays quick). With
    ``[triage] after_scan = false`` intake leaves triage for later, and so does
    this: the item stays pending and the report is ``None``.

    :raises IntakeError: the text is empty.
    :raises TriageError: the scorer cannot be built (the capture is kept, pending).
    """
    async with IntakeSession.open(workspace, sources=("tool_output",)) as intake:
        if not workspace.config.triage.after_scan:
            path, stats = await intake.capture(text, title=title, tags=tags, source=source)
            return path, stats, None
        triager = Triager(
            workspace,
            intake.ledger,
            embedder=(
                LazyEmbedder(workspace.config.index) if embedder is CONFIGURED_MODEL else embedder
            ),
            progress=progress,
        )
        path, stats = await intake.capture(
            text, title=title, tags=tags, source=source, handoff=triager.submit
        )
        return path, stats, await triager.finish()
