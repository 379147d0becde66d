"""Keeping one vault's rows in the team database in step with the vault (``backend = "postgres"``).

The same run as :class:`~retrieval.indexer.Indexer` (the same scan, chunker, scrubber,
embedder, batching and vector reuse; only the store differs):

1. Connect, migrate, and take this vault's writer lock (an advisory lock: writers of
   other vaults, on this machine or others, run at the same time).
2. Plan the model as the SQLite run does. A full rebuild (``full=True``, another model)
   is one transaction: the vault's rows are deleted and re-written inside it, so
   searches keep seeing the old rows until it commits and a failed or stopped rebuild
   leaves them as they were. Other vaults' rows are never touched.
3. Otherwise incremental: stat and content-hash comparisons against this vault's rows,
   one transaction per batch of files, deletions last.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from signaldesk.postgres import PostgresSettings
from signaldesk.retrieval._prepare import PrepareOptions
from signaldesk.retrieval._scan import plan_paths, plan_vault
from signaldesk.retrieval.embedder import Embedder
from signaldesk.retrieval.errors import StoreError
from signaldesk.retrieval.index_progress import IndexProgress
from signaldesk.retrieval.indexer import Indexer, _Counters, _Stopped
from signaldesk.retrieval.lock import DEFAULT_LOCK_TIMEOUT
from signaldesk.retrieval.pg_writer import PgIndexWriter
from signaldesk.retrieval.records import IndexReport
from signaldesk.retrieval.settings import IndexSettings

__all__ = ["PgIndexer"]


class PgIndexer(Indexer):
    """Builds and updates the rows of one vault in the team database.

    :param vault: the vault root.
    :param vault_name: its name in the database (``Workspace.vault_name``).
    :param postgres: the ``[postgres]`` settings.
    """

    def __init__(
        self,
        vault: Path,
        vault_name: str,
        settings: IndexSettings,
        postgres: PostgresSettings,
        embedder: Embedder,
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        workers: int | None = None,
    ) -> None:
        super().__init__(vault, settings, embedder, lock_timeout=lock_timeout, workers=workers)
        if not vault_name:
            raise StoreError("the vault has no name for the team database", hint="set [vault] name")
        self.vault_name = vault_name
        self.postgres = postgres

    def _prepare_options(self) -> PrepareOptions:
        base = super()._prepare_options()
        return PrepareOptions(base.max_chars, base.min_chars, base.embed_chars, keep_text=True)

    def run_sync(
        self,
        *,
        full: bool = False,
        paths: Sequence[str] | None = None,
        progress: Callable[[IndexProgress], None] | None = None,
    ) -> IndexReport:
        import psycopg

        started = time.perf_counter()
        writer = PgIndexWriter.open(self.postgres, self.vault_name)
        try:
            writer.lock(self.lock_timeout)
            return self._run_pg(writer, full, paths, progress, started)
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreError(
                f"cannot write vault {self.vault_name!r} to the team database: {reason}; "
                "the transaction in flight was rolled back"
            ) from exc
        finally:
            writer.close()

    def _run_pg(
        self,
        writer: PgIndexWriter,
        full: bool,
        paths: Sequence[str] | None,
        progress: Callable[[IndexProgress], None] | None,
        started: float,
    ) -> IndexReport:
        plan_ = self._plan(writer, full)
        reason = plan_.reason
        counters = _Counters()
        if plan_.model_error:
            counters.errors.append(plan_.model_error)
        model, index_format = plan_.model, plan_.index_format
        interrupted = False
        if reason is not None:
            if progress:
                progress(IndexProgress("scanning", rebuild_reason=reason))
            plan = plan_vault(self.vault, {}, force=False)
            writer.prepare_vectors(model)
            try:
                with writer.rebuilding():
                    writer.set_model(model, index_format)
                    self._apply(writer, plan, {}, False, counters, progress, reason)
            except _Stopped:
                interrupted = True  # rolled back: the vault's previous rows are kept
                counters = _Counters(errors=counters.errors)
            else:
                writer.analyze()
            return self._finish(counters, plan, started, reason, interrupted, progress)
        if plan_.stored is None:
            writer.set_model(model, index_format)
        elif model.source_key and writer.meta("model_source_key") != model.source_key:
            writer.set_source_key(model.source_key)
        force = writer.meta("index_format") != index_format
        if progress:
            progress(IndexProgress("scanning"))
        known = writer.load_known()
        if paths is None:
            plan = plan_vault(self.vault, known, force=force)
        else:
            plan = plan_paths(self.vault, known, paths, force=force)
        try:
            self._apply(writer, plan, known, force, counters, progress, None)
            if force and paths is None:
                writer.set_index_format(index_format)
        except _Stopped:
            interrupted = True
        return self._finish(counters, plan, started, None, interrupted, progress)
