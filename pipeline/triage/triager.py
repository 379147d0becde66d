"""The triage engine: score pending items in batches, file the ones that pass, record them.

::

    ledger (pending) ──▶ score (batches, one embedding call each) ──▶ route
        ──▶ file: new note │ move/copy/leave a clipping │ refresh an existing note
        ──▶ ledger (filed / rejected, with scores) ──▶ indexer (the written paths)

:class:`Triager` does the work for a stream of ledger ids: its :meth:`~Triager.submit`
is the intake pipeline's hand-off (``pipeline.intake.summary.Handoff``), so a scan
files notes while it is still fetching, and :meth:`~Triager.finish` sweeps up items
left pending by earlier runs and hands every written path to the indexer in the
same run, so ``signaldesk search`` finds a note as soon as the command returns.

Crash safety: each item is recorded in the ledger right after its note is
written, and a note carries the item's id, so an item whose note was written but
not recorded is recognised on the next run (its note is refreshed, never doubled).
Two runs at once (the scheduler and a person) take turns batch by batch under
:func:`~pipeline.triage.lock.triage_lock`, re-reading each item's status first.
"""

from __future__ import annotations

import enum
import functools
import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

import anyio
import anyio.to_thread

from signaldesk.errors import SignaldeskError
from signaldesk.items import Item
from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.errors import PipelineError
from signaldesk.pipeline.intake.feeds import FeedRegistry, prior_of
from signaldesk.pipeline.intake.stages import normalise
from signaldesk.pipeline.ledger.base import ItemLedger
from signaldesk.pipeline.ledger.clippings import resolve_clipping
from signaldesk.pipeline.ledger.store import (
    LedgerEntry,
    item_identity,
    ledger_path,
    utcnow,
)
from signaldesk.pipeline.triage.corrections import scoring_corrections
from signaldesk.pipeline.triage.decisions import as_decided, full_text_arrived, lookup_entry
from signaldesk.pipeline.triage.filing import FilingError, NoteResult, NoteWriter, read_note_id
from signaldesk.pipeline.triage.lock import TriageBusyError, triage_lock
from signaldesk.pipeline.triage.records import (
    WRITTEN_OUTCOMES,
    TriageDecision,
    TriageProgress,
    TriageReport,
    card_to_json,
)
from signaldesk.retrieval.backends import make_indexer
from signaldesk.retrieval.embedder import Embedder
from signaldesk.scoring.feedback import Correction
from signaldesk.scoring.records import ScoreCard
from signaldesk.scoring.scorer import Scorer
from signaldesk.sources.clipper import scan_clippings

__all__ = ["CONFIGURED_MODEL", "TriageError", "Triager", "triage_lock_path"]


logger = logging.getLogger(__name__)


# Statuses triage may (re)score; the others are in flight, duplicates or parked.
_TRIAGEABLE = ("pending", "filed", "rejected")


class _Default(enum.Enum):
    CONFIGURED = enum.auto()


CONFIGURED_MODEL: Final = _Default.CONFIGURED
"""The default ``embedder`` of :func:`triage`: the configured model, loaded lazily
(``None`` means "no model": keyword-only scoring, nothing indexed)."""


class TriageError(PipelineError):
    """Triage cannot start (for example the scoring data is broken)."""


@dataclass(frozen=True, slots=True)
class _Job:
    item_id: str
    item: Item
    status: str
    note_path: str | None
    in_ledger: bool = True
    # Re-scoring only (`--rescore` over rejected items): record the new scores, file
    # nothing. A person asks for filing with `--item`.
    hold: bool = False


class Triager:
    """Scores, files and records items of one ledger; collects the paths to index.

    :param workspace: the vault and its config.
    :param ledger: an open ledger (``None`` only for a dry run with no ledger yet).
    :param embedder: shared by the scorer and the indexer (``None``: keyword-only
        scoring, and nothing is indexed).
    :param dry_run: decide everything, write nothing (vault, ledger and index untouched).
    :param progress: called after each item.
    :param decided: item id -> (file it?, domain): the person's own decision, which
        overrides the score (``signaldesk triage accept`` / ``move``).
    """

    def __init__(
        self,
        workspace: Workspace,
        ledger: ItemLedger | None,
        *,
        embedder: Embedder | None,
        dry_run: bool = False,
        progress: Callable[[TriageProgress], None] | None = None,
        now: Callable[[], datetime] | None = None,
        decided: Mapping[str, tuple[bool, str | None]] | None = None,
    ) -> None:
        if ledger is None and not dry_run:
            raise TriageError("triage needs the ledger")
        self.workspace = workspace
        self.ledger = ledger
        self.embedder = embedder
        self.dry_run = dry_run
        self.settings = workspace.config.triage
        self.threshold = workspace.config.scoring.threshold
        self.writer = NoteWriter(workspace.vault, self.settings, self.threshold, dry_run=dry_run)
        self.report = TriageReport(
            dry_run=dry_run, scoring_mode="keywords" if embedder is None else "embedding"
        )
        self._progress = progress
        self._now = now or (lambda: datetime.now().astimezone())
        self._scorer: Scorer | None = None
        self._priors: dict[str, float] | None = None
        self._buffer: list[str] = []
        self._seen: set[str] = set()
        self._index_paths: list[str] = []
        self._total = 0
        self._started = time.monotonic()
        self._lock_path = triage_lock_path(workspace)
        self._decided = dict(decided or {})
        self._corrections: list[Correction] = []

    # -- the hand-off -------------------------------------------------------------

    async def submit(self, item_id: str) -> None:
        """Queue one pending item (the intake hand-off); scores a batch once one is full."""
        if item_id in self._seen or item_id in self._buffer:
            return
        self._buffer.append(item_id)
        self._total += 1
        if len(self._buffer) >= self.settings.batch_size:
            await self.flush()

    async def flush(self) -> None:
        """Triage the queued items now."""
        ids, self._buffer = self._buffer, []
        if not ids or self.ledger is None:
            return
        jobs: list[_Job] = []
        for item_id in ids:
            entry = await self.ledger.get(item_id)
            if entry is not None and entry.status in _TRIAGEABLE:
                jobs.append(_Job(entry.id, entry.item, entry.status, entry.note_path))
        await self._process(jobs)

    async def run_ledger(
        self, *, item_ids: Collection[str] | None = None, rescore: bool = False
    ) -> None:
        """Triage what the ledger holds: every ``pending`` item (``rescore``: also the
        ``filed`` and ``rejected`` ones), or exactly ``item_ids`` in any triageable status."""
        await self.flush()
        if self.ledger is None:
            return
        jobs: list[_Job] = []
        if item_ids is not None:
            for item_id in item_ids:
                entry = await self._lookup(item_id)
                if entry is None:
                    self.report.errors.append(f"no item {item_id} in the ledger")
                elif entry.status not in _TRIAGEABLE:
                    self.report.errors.append(
                        f"item {item_id[:10]} is {entry.status}; only pending, filed or "
                        "rejected items are triaged"
                    )
                elif entry.id not in self._seen:
                    jobs.append(_Job(entry.id, entry.item, entry.status, entry.note_path))
        else:
            statuses = _TRIAGEABLE if rescore else ("pending",)
            for status in statuses:
                for entry in reversed(await self.ledger.entries(status=status)):
                    if entry.id not in self._seen:
                        jobs.append(
                            _Job(
                                entry.id,
                                entry.item,
                                entry.status,
                                entry.note_path,
                                hold=status == "rejected",
                            )
                        )
            if not rescore:
                # Scored on a teaser, and the full text has arrived since: score again.
                for item_id in await full_text_arrived(self.ledger):
                    entry = await self.ledger.get(item_id)
                    if entry is not None and entry.id not in self._seen:
                        jobs.append(_Job(entry.id, entry.item, entry.status, entry.note_path))
        if not self.dry_run:
            # On a shared ledger another worker may be at work on some of these (it
            # inserted them, or swept them first): only the ones claimed here are done.
            mine = await self.ledger.claim_items([job.item_id for job in jobs])
            if item_ids is not None:
                self.report.errors += [
                    f"item {job.item_id[:10]} is being triaged by another worker; try again "
                    "once it is done"
                    for job in jobs
                    if job.item_id not in mine
                ]
            jobs = [job for job in jobs if job.item_id in mine]
        self._total += len(jobs)
        await self._process(jobs)

    async def _lookup(self, item_id: str) -> LedgerEntry | None:
        assert self.ledger is not None
        return await lookup_entry(self.ledger, item_id)

    async def preview_inbox(self) -> None:
        """Dry run only: also show what the clippings not yet in the ledger would become."""
        config = self.workspace.config
        results = await anyio.to_thread.run_sync(
            lambda: list(scan_clippings(self.workspace.vault, config.clipper))
        )
        claims = await self.ledger.clipping_claims() if self.ledger is not None else {}
        known = {claim.guid for found in claims.values() for claim in found}
        # The identity a scan would give each file (a new clipping at a reused path too).
        items = [resolve_clipping(r.item, r.fingerprint, claims) for r in results if r.item]
        jobs = [
            _Job(item_identity(item), normalise(item), "new", None, in_ledger=False)
            for item in items
            if item.guid not in known
        ]
        self._total += len(jobs)
        await self._process(jobs)

    # -- the work -------------------------------------------------------------------

    async def _scorer_for_run(self) -> Scorer:
        if self._scorer is None:
            if self.ledger is not None:
                self._corrections = await scoring_corrections(self.ledger)
            try:
                self._scorer = Scorer(
                    self.workspace.config.scoring, self.embedder, corrections=self._corrections
                )
            except SignaldeskError as exc:
                raise TriageError(f"cannot build the scorer: {exc.message}", hint=exc.hint) from exc
            self.report.scoring_mode = "keywords" if self.embedder is None else "embedding"
        return self._scorer

    async def _prior_of(self, item: Item) -> float | None:
        if self._priors is None:
            self._priors = {} if self.ledger is None else await FeedRegistry(self.ledger).priors()
        return prior_of(item, self._priors)

    async def _score(self, jobs: Sequence[_Job]) -> list[ScoreCard]:
        scorer = await self._scorer_for_run()
        items = [job.item for job in jobs]
        priors = [await self._prior_of(item) for item in items]
        try:
            return await anyio.to_thread.run_sync(
                functools.partial(scorer.score_many, items, priors=priors)
            )
        except SignaldeskError as exc:
            if scorer.keyword_only:
                raise
            # The model could not be loaded or failed: keywords alone still give a
            # usable, explainable score, and the run goes on.
            logger.warning("embedding failed, scoring by keywords only: %s", exc, exc_info=True)
            self.report.errors.append(f"embedding failed, scored by keywords only: {exc}")
            self.embedder = None
            self._scorer = Scorer(
                self.workspace.config.scoring, None, corrections=self._corrections
            )
            self.report.scoring_mode = "keywords"
            return await anyio.to_thread.run_sync(
                functools.partial(self._scorer.score_many, items, priors=priors)
            )

    async def _process(self, jobs: Sequence[_Job]) -> None:
        size = self.settings.batch_size
        for start in range(0, len(jobs), size):
            batch = [j for j in jobs[start : start + size] if j.item_id not in self._seen]
            if not batch:
                continue
            if self.dry_run:
                await self._run_batch(batch)
                continue
            try:
                async with triage_lock(self._lock_path, timeout=self.settings.lock_timeout):
                    await self._run_batch(await self._still_waiting(batch))
            except TriageBusyError as exc:
                logger.warning("%s", exc.message, exc_info=True)
                self.report.errors.append(
                    f"{exc.message}; {len(batch)} item(s) left for the next run"
                )
                self._seen.update(job.item_id for job in batch)

    async def _still_waiting(self, batch: Sequence[_Job]) -> list[_Job]:
        """The batch re-read under the lock: another run may have triaged some meanwhile."""
        assert self.ledger is not None
        fresh: list[_Job] = []
        for job in batch:
            if not job.in_ledger:
                fresh.append(job)
                continue
            entry = await self.ledger.get(job.item_id)
            if entry is not None and entry.status == job.status:
                fresh.append(
                    _Job(entry.id, entry.item, entry.status, entry.note_path, hold=job.hold)
                )
            else:
                self._seen.add(job.item_id)
        return fresh

    async def _run_batch(self, batch: Sequence[_Job]) -> None:
        if not batch:
            return
        cards = await self._score(batch)
        for job, card in zip(batch, cards, strict=True):
            if job.item_id in self._decided:
                card = as_decided(card, *self._decided[job.item_id])
            self._seen.add(job.item_id)
            decision = await self._file(job, card)
            self.report.decisions.append(decision)
            if self._progress is not None:
                self._progress(
                    TriageProgress(
                        len(self.report.decisions),
                        max(self._total, len(self.report.decisions)),
                        len(self.report.filed),
                        len(self.report.rejected),
                    )
                )

    def _place(self, job: _Job, card: ScoreCard, now: datetime) -> NoteResult:
        """Decide and do what happens to the item's note (runs in a worker thread)."""
        writer = self.writer
        hint = job.note_path
        if hint is not None:
            existing = writer.find(job.item_id, hint, deep=True)
            if existing is not None:
                return writer.refresh(existing, card, job.item_id, now)
            origin = job.item.origin_path
            if (
                hint == origin
                and writer.exists(origin)
                and read_note_id(writer.vault / origin) is None
            ):
                return NoteResult(origin, "left")  # a clipping filed with `leave`
            # It had a note and the note is nowhere: a person deleted it. Not re-filed.
            return NoteResult(None, "missing", message=f"note {hint} is gone; not written again")
        if job.in_ledger:
            existing = writer.find(job.item_id, None, deep=False)
            if existing is not None:
                # Written by a run that died before recording it: refresh, never double.
                return writer.refresh(existing, card, job.item_id, now)
        if not card.passed:
            return NoteResult(None, "stays")
        if job.hold:
            return NoteResult(
                None,
                "held",
                message=f"passes now; `signaldesk triage --item {job.item_id[:12]}` files it",
            )
        if job.item.source_kind == "clipper":
            moved = writer.file_clipping(job.item, card, job.item_id, now)
            if moved is not None:
                return moved
        return writer.create(job.item, card, job.item_id, now)

    async def _file(self, job: _Job, card: ScoreCard) -> TriageDecision:
        now = self._now()
        message: str | None = None
        try:
            result = await anyio.to_thread.run_sync(self._place, job, card, now)
        except (FilingError, OSError) as exc:
            text = exc.message if isinstance(exc, FilingError) else str(exc)
            logger.warning("item %s not filed: %s", job.item_id[:10], text, exc_info=True)
            self.report.errors.append(f"{job.item.title}: {text}")
            result = NoteResult(None, "failed", message=text)
        message = result.message
        if card.teaser and message is None:
            message = "scored on the feed's teaser; re-scored when the full text arrives"
        if card.by_person and message is None:
            message = "your decision, whatever the score"
        if result.outcome in ("created", "moved", "copied") or (
            result.outcome == "updated" and result.path
        ):
            assert result.path is not None
            self._index_paths.append(result.path)
        if result.previous_path:
            self._index_paths.append(result.previous_path)
        if result.outcome == "stays" and job.item.origin_path:
            # A clipping (or drop) below the line stays a note of the vault: searchable now,
            # not after the next full index (`doctor` counted it "not indexed yet").
            self._index_paths.append(job.item.origin_path)
        has_note = result.path is not None and result.outcome not in ("stays", "failed")
        if result.outcome == "missing":
            has_note = True  # it was filed once; a person removed the note
        if not card.passed and has_note and result.outcome != "missing":
            message = message or "below the threshold now; the note stays"
        note_path = result.path if result.path is not None else job.note_path
        if not self.dry_run and self.ledger is not None and job.in_ledger:
            status: Literal["filed", "rejected", "pending"]
            if result.outcome == "failed":
                status = "pending"  # tried again next run
            else:
                status = "filed" if has_note else "rejected"
            await self.ledger.record_triage(
                job.item_id,
                status,
                score=card.composite,
                scores=card_to_json(card, threshold=self.threshold),
                domain=card.route.domain,
                note_path=note_path if has_note else None,
                index_paths=_paths_to_index(job, result, has_note),
                now=now.astimezone(UTC),
            )
        return TriageDecision(
            item_id=job.item_id,
            title=job.item.title,
            source_kind=job.item.source_kind,
            composite=card.composite,
            threshold=self.threshold,
            domain=card.route.domain,
            decision="filed" if card.passed else "rejected",
            outcome=result.outcome,
            note_path=note_path if has_note or result.outcome in WRITTEN_OUTCOMES else None,
            origin_path=job.item.origin_path,
            message=message,
            by_person=card.by_person,
        )

    async def finish(self) -> TriageReport:
        """Triage what is still queued, index every path written, and return the report.

        Paths an earlier run filed but did not index (it was killed, or its index step
        failed) are in the ledger's index queue and are indexed here too; they leave
        the queue only once an index run has looked at them.
        """
        await self.flush()
        paths = list(dict.fromkeys(self._index_paths))
        if not self.dry_run and self.ledger is not None:
            paths = list(dict.fromkeys([*paths, *await self.ledger.index_queue()]))
        if paths and not self.dry_run and self.settings.index_after:
            if self.embedder is None:
                self.report.index_error = "no embedding model: run `signaldesk index` later"
            else:
                workspace = self.workspace
                indexer = make_indexer(
                    workspace.vault,
                    workspace.config.index,
                    self.embedder,
                    vault_name=workspace.vault_name,
                    postgres=workspace.config.postgres,
                )
                started = utcnow()
                try:
                    self.report.indexed = await indexer.run(paths=paths)
                except SignaldeskError as exc:
                    # The notes are filed either way; the next run catches up.
                    logger.warning("filed notes not indexed: %s", exc, exc_info=True)
                    self.report.index_error = (
                        f"{exc.message}; {len(paths)} note path(s) stay queued for the next run"
                    )
                else:
                    if self.ledger is not None and not self.report.indexed.interrupted:
                        await self.ledger.clear_index_queue(started, paths)
        self.report.elapsed = time.monotonic() - self._started
        return self.report


def _paths_to_index(job: _Job, result: NoteResult, has_note: bool) -> list[str]:
    """Every vault path the index must look at after filing ``job``: its note, where
    its note was, and where the clipping it came from was (gone once moved)."""
    paths = [result.path if has_note else None, result.previous_path]
    if job.note_path != result.path:
        paths.append(job.note_path)
    origin = job.item.origin_path
    if job.item.source_kind == "clipper" and has_note and origin != result.path:
        paths.append(origin)
    if result.outcome == "stays":
        paths.append(origin)  # it stays a note of the vault, to be indexed as one
    return [p for p in dict.fromkeys(paths) if p]


def triage_lock_path(workspace: Workspace) -> Path:
    return ledger_path(workspace).parent / "triage.lock"
