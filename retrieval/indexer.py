"""Keeping the index in step with the vault: incremental by default, crash-safe, one writer.

How a run goes:

1. Take the writer lock (``<db>.lock``, bounded wait), delete old index
   generations no reader holds, and open the live one (see
   :mod:`retrieval.generations`).
2. Compare the embedding model with the one the index was built with. A
   different fingerprint or dimension, ``full=True``, or a file that SQLite finds
   unreadable (or ``quick_check`` finds corrupt, with ``verify``) rebuilds: a new
   generation is built from the vault beside the live one and published when it
   is complete, so searches keep answering from the old one until then and a
   failed rebuild leaves it as it was. A configured model that does not load is
   an error, never a reason to rebuild.
3. Stat the vault and compare ``mtime_ns`` + ``size`` with the notes table
   (cheap). Deleted or newly excluded files are removed.
4. Read the files whose stat changed, in batches. A file whose content hash is
   unchanged only gets its stat refreshed. The rest are chunked and scrubbed; a
   chunk whose embedded text already has a vector anywhere in the index reuses
   it, the others are embedded in batches of ``settings.batch_size``.
5. Each batch of files is written in one transaction that also bumps the
   ``generation`` meta value (the retriever reloads its vectors when it changes).

All of that is blocking work (file I/O, CPU, SQLite), so :meth:`Indexer.run`
runs it in a worker thread and stays responsive to cancellation: it then lets
the transaction in flight finish, so the index is always consistent.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.from_thread
import anyio.to_thread

from signaldesk.retrieval._model_plan import ModelPlan, plan_model
from signaldesk.retrieval._pool import default_workers, prepared
from signaldesk.retrieval._prepare import (
    FileJob,
    Gone,
    Outcome,
    PreparedNote,
    PrepareOptions,
    SkippedNote,
    Touched,
)
from signaldesk.retrieval._scan import (
    Known,
    ScanPlan,
    load_known,
    plan_paths,
    plan_vault,
)
from signaldesk.retrieval._writer import IndexWriter, WriterLike, quantize
from signaldesk.retrieval.embedder import Embedder
from signaldesk.retrieval.generations import (
    discard,
    new_generation,
    publish,
    read_pointer,
    remove_stale,
    seed_generation,
)
from signaldesk.retrieval.index_progress import IndexProgress, ProgressPhase, threadsafe_progress
from signaldesk.retrieval.lock import DEFAULT_LOCK_TIMEOUT, IndexLock, LockWaitAborted
from signaldesk.retrieval.records import IndexReport
from signaldesk.retrieval.settings import IndexSettings
from signaldesk.retrieval.store import (
    index_base_path,
    is_corruption_error,
    sqlite_module,
    store_error,
)
from signaldesk.retrieval.vector_cache import cache_token, load_cached, refresh_cache

__all__ = ["INDEX_FORMAT", "VECTOR_TYPE", "Indexer"]

logger = logging.getLogger(__name__)

# Bump when the chunker, the cleaning of embedded text or the scrubber change
# what they produce for the same note: every note is then re-chunked on the next
# run (vectors are still reused wherever the embedded text is unchanged).
# 3: whole-note scrubbing before chunking, the gitleaks rule set.
# 4: notes carry their note-level keyword row (`notes_fts`, schema v3).
INDEX_FORMAT = "4"

# int8 vectors (round(v * 127) of the L2-normalised float vector) take 256 bytes
# per chunk at 256 dimensions instead of 1,024; on the 45k-note test corpus that
# is what keeps the database under 1.7 KB per chunk (see bench/scale.py).
VECTOR_TYPE: Literal["float", "int8"] = "int8"

# A transaction holds at most this many files or chunks: big enough that
# commits are not the bottleneck, small enough that Ctrl-C is answered quickly.
_BATCH_FILES = 400
_BATCH_CHUNKS = 1500


@dataclass(slots=True)
class _Counters:
    added: int = 0
    changed: int = 0
    deleted: int = 0
    unchanged: int = 0
    embedded: int = 0
    reused: int = 0
    files_total: int = 0
    files_done: int = 0
    errors: list[str] = field(default_factory=list)


class _Stopped(Exception):
    """Internal: a stop was requested between two transactions."""


class Indexer:
    """Builds and updates the index of one vault.

    :param vault: the vault root.
    :param settings: the ``[index]`` settings.
    :param embedder: any :class:`~retrieval.embedder.Embedder`; a lazy one is only
        loaded when the run needs its fingerprint.
    :param lock_timeout: seconds to wait for another writer before giving up.
    :param workers: processes that chunk notes in a large run (default: CPUs, at most 4;
        1 keeps everything in this process).
    :param verify: run ``PRAGMA quick_check`` before a whole-vault run and rebuild
        from the vault when it fails (``signaldesk index`` does; it reads the whole file).

    One run at a time per instance (other processes and instances wait for the lock).
    """

    def __init__(
        self,
        vault: Path,
        settings: IndexSettings,
        embedder: Embedder,
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        workers: int | None = None,
        verify: bool = False,
    ) -> None:
        self.vault = Path(vault)
        self.settings = settings
        self.embedder = embedder
        self.lock_timeout = lock_timeout
        self.workers = default_workers() if workers is None else max(1, workers)
        self.verify = verify
        self.base_path = index_base_path(self.vault, settings)
        self._stop = threading.Event()

    def stop(self) -> None:
        """Ask a running :meth:`run` to stop after the transaction in flight.

        Thread- and signal-safe (the CLI calls it from its SIGINT handler); the
        run then returns a report with ``interrupted=True``.
        """
        self._stop.set()

    async def run(
        self,
        *,
        full: bool = False,
        paths: Iterable[str] | None = None,
        progress: Callable[[IndexProgress], None] | None = None,
    ) -> IndexReport:
        """Bring the index up to date with the vault.

        :param full: empty the index and rebuild everything.
        :param paths: only look at these vault-relative paths (deleted ones are removed).
        :param progress: called (in the event loop's thread) after the scan and each batch.
        :raises IndexLockedError: another writer kept the lock past ``lock_timeout``.
        :raises StoreError: the database cannot be written.

        When the calling scope is cancelled, the transaction in flight is
        finished before the cancellation propagates; :meth:`stop` instead makes
        the run return early with ``interrupted=True``.
        """
        self._stop.clear()
        path_list = None if paths is None else list(paths)
        emit = threadsafe_progress(progress)
        finished = threading.Event()
        outcome: dict[str, Any] = {}

        def work() -> None:
            try:
                outcome["report"] = self.run_sync(full=full, paths=path_list, progress=emit)
            except BaseException as exc:
                outcome["error"] = exc
            finally:
                finished.set()

        try:
            await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            # Let the worker commit (or roll back) what it is doing, then go.
            self._stop.set()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(finished.wait)
            raise
        if "error" in outcome:
            raise outcome["error"]
        report: IndexReport = outcome["report"]
        return report

    # -- the blocking part ------------------------------------------------------

    def run_sync(
        self,
        *,
        full: bool = False,
        paths: Sequence[str] | None = None,
        progress: Callable[[IndexProgress], None] | None = None,
    ) -> IndexReport:
        """:meth:`run` without the event loop (blocks the calling thread)."""
        started = time.perf_counter()
        lock = IndexLock(self.base_path, timeout=self.lock_timeout, abort=self._stop)
        try:
            lock.acquire()
        except LockWaitAborted:
            return IndexReport(seconds=round(time.perf_counter() - started, 3), interrupted=True)
        except OSError as exc:
            raise store_error(exc, "cannot take the index lock", self.base_path) from exc
        try:
            remove_stale(self.base_path)
            return self._run_locked(full, paths, progress, started)
        finally:
            lock.release()

    def _run_locked(
        self,
        full: bool,
        paths: Sequence[str] | None,
        progress: Callable[[IndexProgress], None] | None,
        started: float,
    ) -> IndexReport:
        db_error: type[Exception] = sqlite_module().Error
        current = read_pointer(self.base_path)
        try:
            writer = IndexWriter.open(current)
        except db_error as exc:
            if not is_corruption_error(exc):
                raise store_error(exc, f"cannot open the index {current}", current) from exc
            return self._rebuild(f"index was unreadable ({exc})", None, progress, started)
        except OSError as exc:
            raise store_error(exc, f"cannot open the index {current}", current) from exc
        try:
            if self.verify and paths is None:
                problem = writer.quick_check()
                if problem is not None:
                    writer.close()
                    return self._rebuild(
                        f"index was corrupt (quick_check: {problem})", None, progress, started
                    )
            return self._run_open(writer, full, paths, progress, started)
        except db_error as exc:
            if not is_corruption_error(exc):
                raise store_error(
                    exc, f"cannot write the index {current}", current, rolled_back=True
                ) from exc
            # A malformed page found mid-run: the vault is the source of truth.
            writer.close()
            return self._rebuild(f"index was unreadable ({exc})", None, progress, started)
        except OSError as exc:
            raise store_error(
                exc, f"cannot write the index {current}", current, rolled_back=True
            ) from exc
        finally:
            writer.close()

    def _plan(self, writer: WriterLike, full: bool) -> ModelPlan:
        # A change to how notes are chunked or embedded re-prepares every file; only
        # chunks whose embedding input changed are re-embedded.
        index_format = ":".join(
            str(part)
            for part in (
                INDEX_FORMAT,
                self.settings.chunk_max_chars,
                self.settings.chunk_min_chars,
                self.settings.embed_max_chars,
            )
        )
        return plan_model(
            writer,
            self.embedder,
            self.settings,
            full=full,
            index_format=index_format,
            vector_type=VECTOR_TYPE,
        )

    def _run_open(
        self,
        writer: IndexWriter,
        full: bool,
        paths: Sequence[str] | None,
        progress: Callable[[IndexProgress], None] | None,
        started: float,
    ) -> IndexReport:
        plan_ = self._plan(writer, full)
        reason = plan_.reason
        if reason is not None and (writer.note_count() > 0 or plan_.stored is not None):
            # Readers keep the index they have until the new one is complete.
            previous = writer.generation
            writer.close()
            return self._rebuild(reason, previous, progress, started, plan_)
        counters = _Counters()
        if plan_.model_error:
            counters.errors.append(plan_.model_error)
        model, index_format = plan_.model, plan_.index_format
        if reason is not None:
            logger.info("rebuilding the index: %s", reason)
            writer.reset(model, index_format)
        elif plan_.stored is None:
            writer.set_model(model, index_format)
        elif model.source_key and writer.meta("model_source_key") != model.source_key:
            # The same model (same fingerprint) from files this index has not
            # recorded yet: record them, so searches can skip hashing the model.
            writer.set_source_key(model.source_key)
        force = reason is None and writer.meta("index_format") != index_format
        if progress:
            progress(IndexProgress("scanning", rebuild_reason=reason))
        known = load_known(writer.conn)
        if paths is None or reason is not None:
            plan = plan_vault(self.vault, known, force=force)
        else:
            plan = plan_paths(self.vault, known, paths, force=force)
        interrupted = False
        try:
            self._apply(writer, plan, known, force, counters, progress, reason)
            if force and paths is None:
                writer.set_index_format(index_format)
        except _Stopped:
            interrupted = True
        if writer.vector_type != "none":
            self._refresh_vector_cache(writer, _database_file(writer))
        return self._finish(counters, plan, started, reason, interrupted, progress)

    def _rebuild(
        self,
        reason: str,
        previous: int | None,
        progress: Callable[[IndexProgress], None] | None,
        started: float,
        plan_: ModelPlan | None = None,
    ) -> IndexReport:
        """Build a new generation beside the live one and publish it once it is complete.

        The live index is not touched: when the rebuild fails (disk full, a file size
        limit, an error, ``kill -9``) or is stopped, the new file is deleted (or, after
        a kill, removed by the next run) and readers never saw it.
        """
        new = new_generation(self.base_path)
        logger.info("rebuilding the index into %s: %s", new.name, reason)
        counters = _Counters()
        writer: IndexWriter | None = None
        interrupted = False
        db_error: type[Exception] = sqlite_module().Error
        try:
            writer = IndexWriter.open(new)
            if plan_ is None:
                plan_ = self._plan(writer, full=True)
            if plan_.model_error:
                counters.errors.append(plan_.model_error)
            writer.seed_generation(seed_generation(previous))
            writer.set_model(plan_.model, plan_.index_format)
            if progress:
                progress(IndexProgress("scanning", rebuild_reason=reason))
            plan = plan_vault(self.vault, {}, force=False)
            try:
                self._apply(writer, plan, {}, False, counters, progress, reason)
            except _Stopped:
                interrupted = True
            if not interrupted:
                writer.seal()
                if writer.vector_type != "none":
                    self._refresh_vector_cache(writer, new)
                writer.close()
                publish(self.base_path, new)
        except BaseException as exc:
            if writer is not None:
                writer.close()
            discard(new)
            if isinstance(exc, db_error | OSError):
                raise store_error(exc, "the index rebuild failed", new, kept=True) from exc
            raise
        if interrupted:
            writer.close()
            discard(new)
            logger.info("rebuild stopped; the previous index is kept")
        else:
            remove_stale(self.base_path)
        return self._finish(counters, plan, started, reason, interrupted, progress)

    def _finish(
        self,
        counters: _Counters,
        plan: ScanPlan,
        started: float,
        reason: str | None,
        interrupted: bool,
        progress: Callable[[IndexProgress], None] | None,
    ) -> IndexReport:
        report = IndexReport(
            scanned=plan.scanned,
            added=counters.added,
            changed=counters.changed,
            deleted=counters.deleted,
            unchanged=plan.unchanged + counters.unchanged,
            chunks_embedded=counters.embedded,
            chunks_reused=counters.reused,
            seconds=round(time.perf_counter() - started, 3),
            full_rebuild=reason is not None,
            rebuild_reason=reason,
            interrupted=interrupted,
            errors=(*plan.errors, *counters.errors),
        )
        if progress:
            progress(self._snapshot("done", counters, reason))
        logger.info(
            "indexed %s: +%d ~%d -%d =%d, %d chunks embedded, %d reused, %.2f s%s",
            self.vault,
            report.added,
            report.changed,
            report.deleted,
            report.unchanged,
            report.chunks_embedded,
            report.chunks_reused,
            report.seconds,
            " (interrupted)" if interrupted else "",
        )
        return report

    def _refresh_vector_cache(self, writer: IndexWriter, db_path: Path) -> None:
        """Rewrite the matrix cache beside the index for the generation just committed.

        Trigger: any committed change, or a cache that is missing or stale. Why: a
        new process (a one-shot search, a hook) maps the cache instead of reading
        every vector out of sqlite-vec (vector_cache.py). Outcome: a failure only
        costs that speed-up; searches then read sqlite-vec and write the cache.
        """
        try:
            if writer.meta("generation_id") is None:
                writer.touch()  # an index from before the cache: give it a generation id
            token = cache_token(writer.conn)
            dims = int(writer.meta("dimensions") or 0)
            if writer.wrote or load_cached(db_path, token, dims) is None:
                refresh_cache(writer.conn, db_path)
        except Exception as exc:  # the cache is optional; the index is already committed
            logger.warning("vector cache beside %s not written: %s", db_path, exc)

    def _apply(
        self,
        writer: WriterLike,
        plan: ScanPlan,
        known: dict[str, Known],
        force: bool,
        counters: _Counters,
        progress: Callable[[IndexProgress], None] | None,
        reason: str | None,
    ) -> None:
        counters.files_total = len(plan.candidates)
        if progress:
            progress(self._snapshot("indexing", counters, reason))
        hashes = writer.known_hashes([rel for rel, _ in plan.candidates if rel in known])
        jobs = [
            FileJob(rel, stat.st_mtime_ns, stat.st_size, hashes.get(rel), force)
            for rel, stat in plan.candidates
        ]
        batch = _Batch()
        with prepared(
            str(self.vault), jobs, self._prepare_options(), workers=self.workers
        ) as outcomes:
            for outcome in outcomes:
                self._collect(outcome, known, batch, counters)
                # A stop request commits the notes prepared so far (each one whole)
                # rather than waiting for the batch to fill up.
                stopping = self._stop.is_set()
                if stopping or batch.files >= _BATCH_FILES or batch.chunks >= _BATCH_CHUNKS:
                    self._flush(writer, batch, counters, progress, reason)
                    batch = _Batch()
                    if progress:
                        progress(self._snapshot("indexing", counters, reason))
                    self._check_stop()
            if batch.files:
                self._flush(writer, batch, counters, progress, reason)
        # Deletions last: a note that moved finds its old chunks' vectors still there.
        if plan.deleted:
            for start in range(0, len(plan.deleted), _BATCH_FILES):
                writer.delete_paths(plan.deleted[start : start + _BATCH_FILES])
            counters.deleted += sum(1 for p in plan.deleted if not known[p][2])

    def _prepare_options(self) -> PrepareOptions:
        return PrepareOptions(
            self.settings.chunk_max_chars,
            self.settings.chunk_min_chars,
            self.settings.embed_max_chars,
        )

    @staticmethod
    def _collect(
        outcome: Outcome, known: dict[str, Known], batch: _Batch, counters: _Counters
    ) -> None:
        batch.files += 1
        entry = known.get(outcome.path)
        was_note = entry is not None and not entry[2]
        if isinstance(outcome, PreparedNote):
            batch.notes.append(outcome)
            batch.chunks += len(outcome.chunks)
            if was_note:
                batch.changed += 1
            else:
                batch.added += 1
        elif isinstance(outcome, Touched):
            skipped = entry is not None and entry[2]
            batch.touched.append((outcome.path, outcome.mtime_ns, outcome.size, skipped))
            batch.unchanged += 1
        elif isinstance(outcome, SkippedNote):
            batch.skipped.append(outcome)
            if was_note:
                batch.deleted_notes += 1
        elif isinstance(outcome, Gone):
            if entry is not None:
                batch.deleted.append(outcome.path)
                if was_note:
                    batch.deleted_notes += 1
        else:
            counters.errors.append(f"{outcome.path}: {outcome.message}")

    def _flush(
        self,
        writer: WriterLike,
        batch: _Batch,
        counters: _Counters,
        progress: Callable[[IndexProgress], None] | None = None,
        reason: str | None = None,
    ) -> None:
        vectors: dict[str, bytes] = {}
        embedded = reused = 0
        if writer.vector_type != "none" and batch.notes:
            wanted: dict[str, str] = {}
            total = 0
            for note in batch.notes:
                for chunk in note.chunks:
                    total += 1
                    wanted.setdefault(chunk.embed_hash, chunk.embed_input)
            vectors = writer.lookup_vectors(wanted)
            # Similar lengths in one batch: a transformer pads each batch to its longest
            # text (on the 45k-note corpus 41 % of the tokens it ran were padding in
            # batches of 64 as they come, 16 % sorted by length).
            missing = sorted((h for h in wanted if h not in vectors), key=lambda h: len(wanted[h]))
            size = self.settings.batch_size
            for start in range(0, len(missing), size):
                part = missing[start : start + size]
                encoded = self.embedder.encode([wanted[h] for h in part])
                vectors.update(zip(part, quantize(encoded, writer.vector_type), strict=True))
                if progress and start + size < len(missing):
                    # A slow model spends most of a batch here: keep the count moving.
                    progress(
                        self._snapshot("indexing", counters, reason, embedding=start + len(part))
                    )
            embedded = len(missing)
            reused = total - embedded
        if batch.deleted:
            writer.delete_paths(batch.deleted)
        writer.write_batch(batch.notes, batch.skipped, batch.touched, vectors)
        counters.added += batch.added
        counters.changed += batch.changed
        counters.unchanged += batch.unchanged
        counters.deleted += batch.deleted_notes
        counters.embedded += embedded
        counters.reused += reused
        counters.files_done += batch.files

    def _check_stop(self) -> None:
        if self._stop.is_set():
            raise _Stopped

    @staticmethod
    def _snapshot(
        phase: ProgressPhase, counters: _Counters, reason: str | None, embedding: int = 0
    ) -> IndexProgress:
        return IndexProgress(
            phase,
            files_total=counters.files_total,
            files_done=counters.files_done,
            # ``embedding``: chunks of the batch in flight embedded so far (not yet written).
            chunks_embedded=counters.embedded + embedding,
            chunks_reused=counters.reused,
            rebuild_reason=reason,
        )


@dataclass(slots=True)
class _Batch:
    files: int = 0
    chunks: int = 0
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    deleted_notes: int = 0
    notes: list[PreparedNote] = field(default_factory=list)
    skipped: list[SkippedNote] = field(default_factory=list)
    touched: list[tuple[str, int, int, bool]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


def _database_file(writer: IndexWriter) -> Path:
    """The file ``writer`` writes (this run's generation of the index)."""
    return Path(writer.conn.execute("PRAGMA database_list").fetchone()[2])
