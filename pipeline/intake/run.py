"""The staged async intake pipeline: one scan of the due feeds and the drop folders.

::

    discover ──feeds──▶ fetch (N workers) ──┐
       │  (drop folders, resumed items) ───┴──▶ extract (M workers) ──▶ dedupe (1) ──▶ handoff

Stages are joined by bounded anyio memory object streams (``[pipeline]
queue_size``), so the first stages wait when a later one is busy; the task
group owns every worker, and an error in one cancels the scan cleanly. Each
item's progress is in the ledger, so a scan killed at any point is finished by
the next one (see :mod:`pipeline.ledger.store`).

The seam to triage is ``handoff``: an async callable awaited with each new
item's ledger id (status ``pending``) as soon as dedupe settles it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime
from pathlib import Path

import anyio
import httpx

from signaldesk.items import SourceKind
from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.errors import IntakeError
from signaldesk.pipeline.intake.feeds import FeedRecord, FeedRegistry
from signaldesk.pipeline.intake.full_text import discover_refetch, extract_worker
from signaldesk.pipeline.intake.stages import (
    ScanContext,
    Work,
    discover_feeds,
    discover_local,
    fetch_worker,
    resume,
    settle_worker,
)
from signaldesk.pipeline.intake.summary import SOURCE_KINDS, FeedProblem, Handoff, ScanStats
from signaldesk.pipeline.ledger.base import ItemLedger
from signaldesk.pipeline.ledger.records import LedgerEntry
from signaldesk.pipeline.ledger.store import open_ledger, utcnow
from signaldesk.sources.http import HostLimiter, build_client
from signaldesk.sources.rss import feed_parse_limiter
from signaldesk.sources.tool_output import write_capture

__all__ = ["IntakeSession", "capture", "run_scan", "scan"]


def _kinds(sources: Collection[str] | None) -> tuple[SourceKind, ...]:
    if sources is None:
        return SOURCE_KINDS
    unknown = set(sources) - set(SOURCE_KINDS)
    if unknown:
        raise IntakeError(
            f"unknown source kind(s): {', '.join(sorted(unknown))}",
            hint=f"use one of: {', '.join(SOURCE_KINDS)}",
        )
    return tuple(k for k in SOURCE_KINDS if k in sources)


def _of_kinds(entries: list[LedgerEntry], kinds: Collection[str]) -> list[LedgerEntry]:
    return [e for e in entries if e.item.source_kind in kinds]


async def run_scan(
    workspace: Workspace,
    ledger: ItemLedger,
    client: httpx.AsyncClient | None,
    *,
    sources: Collection[str] | None = None,
    force: bool = False,
    handoff: Handoff | None = None,
    on_progress: Callable[[ScanStats], None] | None = None,
    now: Callable[[], datetime] = utcnow,
    parse_limiter: anyio.CapacityLimiter | None = None,
) -> ScanStats:
    """Run one scan through every stage and return what it did.

    Items left mid-stage by an earlier run are finished first. Feeds are polled
    when due (``force``: all enabled feeds); the drop folders are read whole; then
    the article pages of earlier teasers that are due another try are fetched.

    :param client: the shared HTTP client; may be ``None`` when no feed is scanned.
    :param sources: the source kinds to scan (default all).
    :param handoff: awaited with each new item's id (the seam to triage).
    :param on_progress: called with the live :class:`ScanStats` after each step.
    :param parse_limiter: bounds the feed parses running in worker threads at once
        (default: a new one for this scan, one thread per CPU; pass one to share the
        bound with other work, e.g. a scheduler running scans side by side).
    :raises IntakeError: an unknown source kind, or feeds to scan but no client.
    """
    kinds = _kinds(sources)
    if "rss" in kinds and client is None:
        raise IntakeError("scanning feeds needs an HTTP client")
    settings = workspace.config.pipeline
    started = time.monotonic()
    registry = FeedRegistry(ledger)
    feeds = await registry.records()
    ctx = ScanContext(
        workspace=workspace,
        ledger=ledger,
        registry=registry,
        client=client,
        limiter=HostLimiter(workspace.config.http.per_host),
        stats=ScanStats(),
        now=now,
        force=force,
        handoff=handoff,
        on_progress=on_progress,
        full_text_by_feed={f.url: f.state.full_text for f in feeds},
        parse_limiter=parse_limiter or feed_parse_limiter(),
    )
    in_flight = _of_kinds(await ledger.in_flight(), kinds)
    ctx.stats.resumed = len(in_flight)

    feed_send, feed_receive = anyio.create_memory_object_stream[FeedRecord](settings.queue_size)
    work_send, work_receive = anyio.create_memory_object_stream[Work](settings.queue_size)
    done_send, done_receive = anyio.create_memory_object_stream[Work](settings.queue_size)

    async def _discover(
        send_feeds: anyio.abc.ObjectSendStream[FeedRecord],
        send_work: anyio.abc.ObjectSendStream[Work],
    ) -> None:
        async with send_feeds, send_work:
            await resume(ctx, in_flight, send_work)
            if "rss" in kinds:
                await discover_feeds(ctx, send_feeds)
            await send_feeds.aclose()  # feeds are all out: fetch workers may finish
            await discover_local(ctx, [k for k in kinds if k != "rss"], send_work)
            if "rss" in kinds:
                # Last: pages of earlier teasers, after this scan's own entries.
                await discover_refetch(ctx, send_work)
            if ledger.shared:
                # A worker that died during this scan left items mid-stage: finish them
                # now rather than in the next round.
                abandoned = await ledger.in_flight(abandoned=True)
                await resume(ctx, _of_kinds(abandoned, kinds), send_work)

    # Each worker gets its own clone of the streams it uses; the originals close when
    # the block is left, so a stream ends exactly when its last producer is done.
    async with (
        anyio.create_task_group() as tg,
        feed_send,
        feed_receive,
        work_send,
        work_receive,
        done_send,
        done_receive,
    ):
        tg.start_soon(_discover, feed_send.clone(), work_send.clone())
        if "rss" in kinds:
            for _ in range(settings.feed_concurrency):
                tg.start_soon(fetch_worker, ctx, feed_receive.clone(), work_send.clone())
        for _ in range(settings.extract_concurrency):
            tg.start_soon(extract_worker, ctx, work_receive.clone(), done_send.clone())
        tg.start_soon(settle_worker, ctx, done_receive.clone())
    # Feeds disabled earlier are still worth showing at the end of every scan.
    reported = {p.url for p in ctx.stats.feed_problems}
    for record in await registry.records():
        if record.disabled and record.url not in reported:
            ctx.stats.feed_problems.append(
                FeedProblem(
                    record.url,
                    record.state.title,
                    "disabled",
                    record.state.last_error,
                    record.state.error_count,
                    record.state.disabled_reason,
                )
            )
    ctx.stats.elapsed = time.monotonic() - started
    ctx.progress()
    return ctx.stats


class IntakeSession:
    """One intake run's resources: the ledger and, when feeds are polled, the HTTP client.

    The callers that go on to triage (``pipeline.triage.run``) consume a session: they
    hand :meth:`scan` or :meth:`capture` their triager's ``submit`` as the hand-off, and
    intake never calls back into triage.
    """

    def __init__(
        self, workspace: Workspace, ledger: ItemLedger, client: httpx.AsyncClient | None = None
    ) -> None:
        self.workspace = workspace
        self.ledger = ledger
        self.client = client

    @classmethod
    @asynccontextmanager
    async def open(
        cls, workspace: Workspace, *, sources: Collection[str] | None = None
    ) -> AsyncIterator[IntakeSession]:
        """Open the ledger, and one shared HTTP client when ``sources`` include feeds."""
        kinds = _kinds(sources)
        async with open_ledger(workspace) as ledger, AsyncExitStack() as stack:
            client = None
            if "rss" in kinds:
                client = await stack.enter_async_context(build_client(workspace.config.http))
            yield cls(workspace, ledger, client)

    async def scan(
        self,
        *,
        sources: Collection[str] | None = None,
        force: bool = False,
        handoff: Handoff | None = None,
        on_progress: Callable[[ScanStats], None] | None = None,
    ) -> ScanStats:
        """One scan (see :func:`run_scan`)."""
        return await run_scan(
            self.workspace,
            self.ledger,
            self.client,
            sources=sources,
            force=force,
            handoff=handoff,
            on_progress=on_progress,
        )

    async def capture(
        self,
        text: str,
        *,
        title: str | None = None,
        tags: Collection[str] = (),
        source: str | None = None,
        handoff: Handoff | None = None,
    ) -> tuple[Path, ScanStats]:
        """Capture ``text`` into this session's ledger (see :func:`capture`)."""
        return await capture(
            self.workspace,
            text,
            title=title,
            tags=tags,
            source=source,
            handoff=handoff,
            ledger=self.ledger,
        )


async def scan(
    workspace: Workspace,
    *,
    sources: Collection[str] | None = None,
    force: bool = False,
    handoff: Handoff | None = None,
    on_progress: Callable[[ScanStats], None] | None = None,
) -> ScanStats:
    """One scan in a session of its own (see :class:`IntakeSession`)."""
    kinds = _kinds(sources)
    async with IntakeSession.open(workspace, sources=kinds) as intake:
        return await intake.scan(
            sources=kinds, force=force, handoff=handoff, on_progress=on_progress
        )


async def capture(
    workspace: Workspace,
    text: str,
    *,
    title: str | None = None,
    tags: Collection[str] = (),
    source: str | None = None,
    handoff: Handoff | None = None,
    ledger: ItemLedger | None = None,
) -> tuple[Path, ScanStats]:
    """Write ``text`` into the tool-output drop folder and ingest that folder at once.

    :param handoff: awaited with each new item's id, as in :func:`run_scan`
        (:func:`pipeline.triage.run.capture_and_triage` passes triage's).
    :param ledger: an open ledger to record into (default: open the workspace's).
    :returns: the file written and the stats of the ingest.
    :raises IntakeError: the text is empty.
    """
    if not text.strip():
        raise IntakeError(
            "nothing to capture: the text is empty", hint="pass TEXT or pipe it on stdin"
        )
    folder = workspace.resolve(workspace.config.tool_output.drop_folder)
    path = await anyio.to_thread.run_sync(
        lambda: write_capture(folder, text, title=title, tags=tuple(tags), source=source)
    )
    if ledger is None:
        stats = await scan(workspace, sources=("tool_output",), handoff=handoff)
    else:
        stats = await run_scan(workspace, ledger, None, sources=("tool_output",), handoff=handoff)
    return path, stats
