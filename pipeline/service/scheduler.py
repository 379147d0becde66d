"""`signaldesk serve`: every job on a schedule, in one long-running process.

Who does what:

- APScheduler 3.11's :class:`AsyncIOScheduler`, on the anyio (asyncio) event loop,
  decides *when*: interval triggers for scanning and indexing, cron triggers for
  the daily report and log, coalescing of missed runs, one instance per job and
  a misfire grace suited to each job.
- The work itself runs in *our* task group, one worker task per job. The
  scheduler's callback only wakes that worker and waits for the run to finish
  (so ``max_instances=1`` means what it says). Why not let APScheduler run the
  coroutines: its asyncio executor runs them as loose tasks and *cancels* them on
  shutdown, whereas a stop must let the running step finish.
- Every run is bounded by ``anyio.fail_after`` (the job's timeout); an error or a
  timeout is logged with its traceback, counted and recorded, and the scheduler
  goes on.
- SIGINT/SIGTERM: no new runs start; running ones get ``shutdown_grace`` seconds
  to finish, then are cancelled (safe: every file write is atomic and every
  ledger/index write is a transaction). A second signal cancels at once. The
  process then exits 0.

Job state goes to ``.signaldesk/scheduler.json`` (see :mod:`pipeline.service.job_state`).
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import anyio
import anyio.to_thread
import tzlocal
from anyio.abc import TaskStatus
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.errors import PipelineError
from signaldesk.pipeline.service.job_state import (
    JobState,
    ServeLock,
    ServeState,
    load_state,
    render_state,
    state_path,
)
from signaldesk.pipeline.service.jobs import (
    JobFunc,
    JobServices,
    captains_log_job,
    drops_job,
    feeds_job,
    index_job,
    report_job,
    triage_job,
    watch_job,
)
from signaldesk.pipeline.service.search_socket import SearchAnswer, SearchSocket
from signaldesk.pipeline.service.watcher import VaultWatcher
from signaldesk.pipeline.settings import ScheduleSettings
from signaldesk.retrieval.embedder import Embedder, LazyEmbedder
from signaldesk.vault import atomic_write_text

__all__ = ["JOB_NAMES", "JobSpec", "ScheduleError", "build_specs", "resolve_timezone", "serve"]

logger = logging.getLogger(__name__)

JOB_NAMES = ("feeds", "drops", "triage", "watch", "index", "report", "captains_log")


class ScheduleError(PipelineError):
    """The schedule cannot be set up (an unknown time zone, say)."""


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One scheduled job.

    :param misfire_grace: seconds a run may start late and still happen.
    :param catch_up: a daily job: run at start if its last scheduled time was missed.
    :param quiet: a frequent job whose uneventful runs are not written to the state file.
    """

    name: str
    description: str
    func: JobFunc
    trigger: BaseTrigger
    timeout: float
    misfire_grace: int
    catch_up: bool = False
    quiet: bool = False


def resolve_timezone(name: str | None) -> tzinfo:
    """The configured IANA zone, or the machine's local one.

    :raises ScheduleError: an unknown zone name.
    """
    if not name:
        return tzlocal.get_localzone()
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(
            f"unknown time zone {name!r}", hint='use an IANA name such as "Europe/Madrid"'
        ) from exc


def _daily(at: str, tz: tzinfo) -> CronTrigger:
    hour, minute = (int(part) for part in at.split(":"))
    return CronTrigger(hour=hour, minute=minute, timezone=tz)


def _every(seconds: float) -> IntervalTrigger:
    return IntervalTrigger(seconds=seconds)


def build_specs(settings: ScheduleSettings, tz: tzinfo) -> list[JobSpec]:
    """The jobs of `serve`, as the ``[schedule]`` settings describe them."""

    def grace(interval: float) -> int:
        # An interval job late by more than one interval is skipped: the next one is near.
        return max(1, int(interval))

    daily_grace = int(settings.daily_misfire_grace)
    return [
        JobSpec(
            "feeds",
            "poll due feeds, triage",
            feeds_job,
            _every(settings.feeds_interval),
            settings.feeds_timeout,
            grace(settings.feeds_interval),
        ),
        JobSpec(
            "drops",
            "read clipper/newsletter/tool drops, triage",
            drops_job,
            _every(settings.drops_interval),
            settings.drops_timeout,
            grace(settings.drops_interval),
        ),
        JobSpec(
            "triage",
            "triage items still pending",
            triage_job,
            _every(settings.triage_interval),
            settings.triage_timeout,
            grace(settings.triage_interval),
        ),
        JobSpec(
            "watch",
            "look for vault edits",
            watch_job,
            _every(settings.watch_interval),
            settings.watch_timeout,
            grace(settings.watch_interval),
            quiet=True,
        ),
        JobSpec(
            "index",
            "incremental index",
            index_job,
            _every(settings.index_interval),
            settings.index_timeout,
            grace(settings.index_interval),
        ),
        JobSpec(
            "report",
            f"daily triage report at {settings.report_time}",
            report_job,
            _daily(settings.report_time, tz),
            settings.report_timeout,
            daily_grace,
            catch_up=settings.catch_up,
        ),
        JobSpec(
            "captains_log",
            f"daily captain's log at {settings.log_time}",
            captains_log_job,
            _daily(settings.log_time, tz),
            settings.log_timeout,
            daily_grace,
            catch_up=settings.catch_up,
        ),
    ]


def _last_scheduled(trigger: BaseTrigger, now: datetime) -> datetime | None:
    """The trigger's latest fire time at or before ``now`` (looking back one day)."""
    last: datetime | None = None
    moment = trigger.get_next_fire_time(None, now - timedelta(days=1, minutes=1))
    while moment is not None and moment <= now:
        last = moment
        moment = trigger.get_next_fire_time(moment, moment + timedelta(seconds=1))
    return last


# How far back a start writes the daily notes missed while serve was stopped; older ones
# `signaldesk report --date` / `log --date` write on request.
_OWED_DAYS = 7


def _owed_days(trigger: BaseTrigger, done: datetime, latest: datetime, tz: tzinfo) -> list[date]:
    """The days (in ``tz``) of the fire times after ``done`` and before ``latest``, at most
    :data:`_OWED_DAYS` back: the runs missed before the one a catch-up answers."""
    days: list[date] = []
    since = max(done, latest - timedelta(days=_OWED_DAYS))
    moment = trigger.get_next_fire_time(None, since + timedelta(seconds=1))
    while moment is not None and moment < latest:
        days.append(moment.astimezone(tz).date())
        moment = trigger.get_next_fire_time(moment, moment + timedelta(seconds=1))
    return days


def _now() -> datetime:
    return datetime.now().astimezone()


class _Slot:
    """One job's worker mailbox: a wake-up flag that coalesces requests."""

    def __init__(self, spec: JobSpec) -> None:
        self.spec = spec
        self.wake = anyio.Event()
        self.waiters: list[anyio.Event] = []
        self.exited = anyio.Event()


class _Runner:
    """Runs each job in its own worker task, one run at a time, and records the outcome."""

    def __init__(self, specs: list[JobSpec], services: JobServices, state: ServeState) -> None:
        self.slots = {spec.name: _Slot(spec) for spec in specs}
        self.services = services
        self.state = state
        self.scheduler: AsyncIOScheduler | None = None
        self.closing = False
        self.cancelled = 0
        # APScheduler's callbacks waiting for their run (see fire); a stop waits for them
        # to return before the scheduler shuts down (which cancels what is pending).
        self._firing = 0
        self._fired = anyio.Event()
        self._path = state_path(services.workspace.vault)
        self._write_lock = anyio.Lock()
        for spec in specs:
            job = state.job(spec.name)
            job.description = spec.description

    def trigger(self, name: str) -> None:
        """Ask for a run of ``name`` soon (no-op while one is already queued, or stopping)."""
        slot = self.slots.get(name)
        if slot is not None and not self.closing:
            slot.wake.set()

    async def fire(self, name: str) -> None:
        """APScheduler's callback: queue a run and wait until it is over."""
        slot = self.slots[name]
        if self.closing:
            return
        done = anyio.Event()
        slot.waiters.append(done)
        slot.wake.set()
        self._firing += 1
        try:
            await done.wait()
        finally:
            self._firing -= 1
            if self._firing == 0:
                self._fired.set()

    async def callbacks_returned(self) -> None:
        """Until no APScheduler callback waits any more (their runs are over or dropped)."""
        while self._firing:
            self._fired = anyio.Event()
            await self._fired.wait()

    def close(self) -> None:
        """Start no new run; idle workers leave at once, busy ones after their run."""
        self.closing = True
        for slot in self.slots.values():
            slot.wake.set()

    async def wait_idle(self) -> None:
        """Until every worker has left."""
        for slot in self.slots.values():
            await slot.exited.wait()

    async def worker(self, slot: _Slot) -> None:
        try:
            while not self.closing:
                await slot.wake.wait()
                if self.closing:
                    break
                slot.wake = anyio.Event()
                waiters, slot.waiters = slot.waiters, []
                try:
                    await self._run(slot.spec)
                finally:
                    for waiter in waiters:
                        waiter.set()
        finally:
            for waiter in slot.waiters:
                waiter.set()
            slot.exited.set()

    async def _run(self, spec: JobSpec) -> None:
        job = self.state.job(spec.name)
        previous = (job.outcome, job.summary)
        job.last_started = _now()
        job.outcome = "running"
        if not spec.quiet:
            await self.persist()
        started = time.monotonic()
        summary: str | None = None
        error: str | None = None
        try:
            with anyio.fail_after(spec.timeout) as scope:
                summary = await spec.func(self.services)
            outcome = "ok"
        except TimeoutError as exc:
            timed_out = scope.cancel_called
            outcome = "timeout" if timed_out else "error"
            error = f"timed out after {spec.timeout:g} s" if timed_out else _describe(exc)
            logger.error("job %s: %s", spec.name, error, exc_info=True)
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            self._finish(job, "cancelled", started, None, "cancelled at shutdown")
            with anyio.CancelScope(shield=True):
                await self.persist()
            raise
        except Exception as exc:
            outcome = "error"
            error = _describe(exc)
            logger.error("job %s failed: %s", spec.name, error, exc_info=True)
        self._finish(job, outcome, started, summary, error)
        if outcome == "ok":
            logger.info("job %s: %s", spec.name, summary)
        if not spec.quiet or outcome != "ok" or (job.outcome, job.summary) != previous:
            await self.persist()

    @staticmethod
    def _finish(
        job: JobState, outcome: Any, started: float, summary: str | None, error: str | None
    ) -> None:
        job.last_finished = _now()
        job.duration = round(time.monotonic() - started, 3)
        job.outcome = outcome
        job.summary = summary
        job.error = error
        job.runs += 1
        if outcome == "ok":
            job.consecutive_failures = 0
            job.last_success = job.last_finished
        else:
            job.failures += 1
            job.consecutive_failures += 1

    def _refresh_next_runs(self) -> None:
        scheduler = self.scheduler
        for name in self.slots:
            planned = (
                scheduler.get_job(name) if scheduler is not None and scheduler.running else None
            )
            self.state.job(name).next_run = planned.next_run_time if planned else None

    async def persist(self) -> None:
        """Write the state file (a snapshot taken now; writes never overtake each other)."""
        async with self._write_lock:
            self._refresh_next_runs()
            text = render_state(self.state)
            try:
                await anyio.to_thread.run_sync(atomic_write_text, self._path, text)
            except OSError as exc:
                # The jobs matter more than their bookkeeping: keep serving.
                logger.error("cannot write the scheduler state %s: %s", self._path, exc)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, PipelineError) else text


async def _on_signals(
    stop: anyio.Event,
    hard_stop: Callable[[], None],
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()  # from here on a Ctrl-C is a clean stop
        async for signum in signals:
            name = signal.Signals(signum).name
            if stop.is_set():
                logger.warning("%s again: cancelling the running jobs now", name)
                hard_stop()
                return
            logger.warning("%s: finishing the running jobs, then stopping", name)
            stop.set()


async def serve(
    workspace: Workspace,
    *,
    stop: anyio.Event | None = None,
    handle_signals: bool = True,
    embedder: Embedder | None = None,
    specs: list[JobSpec] | None = None,
    on_ready: Callable[[], None] | None = None,
    search_answer: SearchAnswer | None = None,
) -> ServeState:
    """Run the schedule until ``stop`` is set (or SIGINT/SIGTERM arrives).

    :param stop: set it to stop (tests); signals set it too when ``handle_signals``.
    :param on_ready: called once the jobs run and a signal would stop them cleanly (the
        line that tells a person, or a script, that Ctrl-C now works).
    :param embedder: the embedding model to share (default: the configured one, lazily).
    :param specs: the jobs (default: :func:`build_specs` of ``[schedule]``).
    :param search_answer: answers one-shot `search --json` commands on the search socket
        (the CLI passes the `search` verb's; ``None``: no socket).
    :returns: the final state (also in ``.signaldesk/scheduler.json``).
    :raises ServiceRunningError: another `serve` runs for this vault.
    :raises ScheduleError: the schedule is invalid.
    """
    settings = workspace.config.schedule
    tz = resolve_timezone(settings.timezone)
    stop = stop or anyio.Event()
    lock = ServeLock(workspace.vault)
    lock.acquire()
    try:
        return await _serve_locked(
            workspace, settings, tz, stop, handle_signals, embedder, specs, on_ready, search_answer
        )
    finally:
        lock.release()


async def _serve_locked(
    workspace: Workspace,
    settings: ScheduleSettings,
    tz: tzinfo,
    stop: anyio.Event,
    handle_signals: bool,
    embedder: Embedder | None,
    specs: list[JobSpec] | None,
    on_ready: Callable[[], None] | None,
    search_answer: SearchAnswer | None,
) -> ServeState:
    path = state_path(workspace.vault)
    previous = load_state(path)
    state = ServeState(
        pid=os.getpid(),
        started_at=_now(),
        jobs=previous.jobs if previous else {},
    )
    for job in state.jobs.values():
        if job.outcome == "running":  # the previous process died during this run
            job.outcome, job.error = "cancelled", "the previous serve ended during the run"
    specs = specs if specs is not None else build_specs(settings, tz)
    watcher = VaultWatcher(workspace.vault, settings.watch_debounce)
    runner: _Runner

    def trigger(name: str) -> None:
        runner.trigger(name)

    services = JobServices(
        workspace=workspace,
        embedder=embedder or LazyEmbedder(workspace.config.index),
        tz=tz,
        trigger=trigger,
        watcher=watcher,
        stopping=stop.is_set,
    )
    runner = _Runner(specs, services, state)
    hard_stopped = False

    async with anyio.create_task_group() as tg:

        def hard_stop() -> None:
            nonlocal hard_stopped
            hard_stopped = True
            tg.cancel_scope.cancel()

        for slot in runner.slots.values():
            tg.start_soon(runner.worker, slot)
        if handle_signals:
            # Started, not just scheduled: the receiver is open before anyone is told that
            # Ctrl-C stops (a signal before it would meet Python's default handler).
            await tg.start(functools.partial(_on_signals, stop, hard_stop))

        if (
            search_answer is not None
            and settings.search_socket
            and workspace.config.index.backend == "sqlite"
        ):
            # One-shot `search --json` commands, answered from a warm index (issue 15).
            # Listening before the first jobs fire: its thread hops then delay no job's
            # start against another's (the jobs' first runs race for a fresh ledger).
            await tg.start(SearchSocket(workspace, services.embedder, search_answer).serve)

        scheduler = AsyncIOScheduler(timezone=tz)
        now = datetime.now(tz)
        for spec in specs:
            first: datetime | None = None
            if isinstance(spec.trigger, IntervalTrigger):
                first = now  # every interval job runs once at start
            elif spec.catch_up:
                missed = _last_scheduled(spec.trigger, now)
                done = state.job(spec.name).last_success
                if missed is not None and (done is None or done < missed):
                    first = now
                    if done is not None:  # a first start owes nothing from before it
                        services.owed[spec.name] = _owed_days(spec.trigger, done, missed, tz)
            options: dict[str, Any] = {} if first is None else {"next_run_time": first}
            scheduler.add_job(
                runner.fire,
                trigger=spec.trigger,
                args=[spec.name],
                id=spec.name,
                name=spec.description,
                misfire_grace_time=spec.misfire_grace,
                coalesce=True,
                max_instances=1,
                replace_existing=True,
                **options,
            )
        scheduler.start()
        runner.scheduler = scheduler
        state.ready = True
        await runner.persist()
        logger.info("serving %s: %d jobs scheduled", workspace.vault, len(specs))
        if on_ready is not None:
            on_ready()

        await stop.wait()
        # No new fire times; the callbacks waiting for a run get it (or are dropped by
        # close) before the scheduler shuts down, which would cancel them mid-wait and log
        # each one as a job that "raised an exception".
        scheduler.pause()
        runner.scheduler = None
        runner.close()
        with anyio.move_on_after(settings.shutdown_grace) as grace:
            await runner.wait_idle()
            await runner.callbacks_returned()
        scheduler.shutdown(wait=False)
        if grace.cancelled_caught:
            logger.warning(
                "jobs still running after %g s: cancelling them", settings.shutdown_grace
            )
        tg.cancel_scope.cancel()

    state.ready = False
    state.stopped_at = _now()
    state.clean_exit = not hard_stopped and runner.cancelled == 0
    with anyio.CancelScope(shield=True):
        await runner.persist()
    logger.info("stopped")
    return state
