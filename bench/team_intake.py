"""Team intake benchmark: ``python -m bench.team_intake``.

Two worker processes (``signaldesk scan``, what each round of ``serve`` runs) share one
PostgreSQL ledger (``[pipeline] ledger_backend = "postgres"``) and one vault, and take in
``--feeds`` local feeds (default 200, ``--entries`` entries each, every
``--teaser-every``-th a teaser whose article page is fetched) served on 127.0.0.1.

Trial 1, both workers at once: every entry must be in the ledger exactly once, settled
and triaged once, each filed item's note written once (no note id twice in the vault),
and each feed fetched exactly once (the two workers split the round between them).

Trial 2, the same in a fresh database, but one worker is killed with SIGKILL mid-scan:
the feed ``5-trap.xml`` (in the middle of the round) holds its answer until the worker
that claimed it is killed; the other worker goes on, takes over what the dead one had
claimed (its feed, its in-flight and pending items), and runs further rounds, as its
``serve`` would, until nothing is left. The same checks: nothing lost, nothing doubled.
Feeds the killed worker had on the wire when it died are fetched again (counted).

``--workers serve`` runs the same two trials with two ``signaldesk serve`` processes
instead (one ``serve`` per vault, so each has a vault of its own, as on two machines;
feeds looked at every second), stopped with SIGTERM once the ledger has nothing left to
do; the notes are then counted across both vaults. ``both`` (the default) runs the four.

Prints each trial's figures and exits 1 when a check fails. A PostgreSQL with pgvector is
started from the ``pgserver`` wheel in a temporary folder (``pip install pgserver``).
The pytest version (``tests/test_team_intake.py``) runs both trials on a dozen feeds.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import anyio

from signaldesk.postgres import PostgresSettings

__all__ = ["TrialResult", "main", "run_trial"]

_REPO = Path(__file__).resolve().parent.parent
_TRAP = "/feeds/5-trap.xml"
_TRAP_ENTRIES = 5
_FEED_CONCURRENCY = 4
# How long a trap or a worker may take before the trial is declared stuck (a guard
# against a hang, not a measurement).
_STUCK = 600.0


@dataclass
class TrialResult:
    """What one trial found; :meth:`problems` lists every failed check."""

    name: str
    feeds: int
    entries_expected: int
    rows: int = 0
    distinct_entries: int = 0
    missing_entries: int = 0
    doubled_entries: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    unpolled_feeds: int = 0
    fetches: Counter[str] = field(default_factory=Counter)
    notes: int = 0
    doubled_notes: int = 0
    filed_without_note: int = 0
    new_by_worker: dict[str, int] = field(default_factory=dict)
    rounds: int = 0
    killed: str | None = None
    refetched_after_kill: int = 0
    wall: float = 0.0

    def problems(self) -> list[str]:
        found = []
        if self.missing_entries:
            found.append(f"{self.missing_entries} entries lost")
        if self.doubled_entries:
            found.append(f"{self.doubled_entries} entries in the ledger twice")
        if self.rows != self.entries_expected:
            found.append(f"{self.rows} ledger rows for {self.entries_expected} entries")
        left = {s: n for s, n in self.statuses.items() if s not in ("filed", "rejected")}
        if left:
            found.append(f"not triaged: {left}")
        if self.unpolled_feeds:
            found.append(f"{self.unpolled_feeds} feeds never polled")
        if self.doubled_notes:
            found.append(f"{self.doubled_notes} notes written twice")
        if self.filed_without_note:
            found.append(f"{self.filed_without_note} filed items without their note")
        if not self.killed and sum(self.new_by_worker.values()) != self.entries_expected:
            found.append(
                f"the workers took in {sum(self.new_by_worker.values())} new entries, "
                f"not {self.entries_expected}"
            )
        doubled_fetches = sum(1 for n in self.fetches.values() if n > 1)
        if doubled_fetches > self.refetched_after_kill:
            found.append(f"{doubled_fetches} feeds fetched more than once in a round")
        return found

    def lines(self) -> list[str]:
        fetched_twice = sum(1 for n in self.fetches.values() if n > 1)
        workers = ", ".join(f"{w} {n}" for w, n in sorted(self.new_by_worker.items()))
        out = [
            f"{self.name}: {self.feeds} feeds, {self.entries_expected} entries, "
            f"{f'{self.rounds} round(s)' if self.rounds else 'serve on its schedule'}, "
            f"{self.wall:.1f} s",
            f"  ledger rows {self.rows}, distinct entries {self.distinct_entries}, lost "
            f"{self.missing_entries}, doubled {self.doubled_entries}",
            f"  statuses {dict(sorted(self.statuses.items()))}",
            f"  new entries taken in by worker: {workers}",
            f"  feeds unpolled {self.unpolled_feeds}; fetched more than once "
            f"{fetched_twice} (allowed after the kill: {self.refetched_after_kill})",
            f"  notes {self.notes}, note ids twice {self.doubled_notes}, filed without "
            f"note {self.filed_without_note}",
        ]
        if self.killed:
            rest = self.entries_expected - sum(self.new_by_worker.values())
            out.append(
                f"  killed with SIGKILL mid-scan: {self.killed} (it had taken in the other "
                f"{rest} entries)"
            )
        out.append("  OK" if not self.problems() else "  FAILED: " + "; ".join(self.problems()))
        return out


class _Trap:
    """A feed whose answer waits until :meth:`release` (or the stuck guard)."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.arrived = threading.Event()
        self.released = threading.Event()

    def __call__(self, request: Any) -> Any:
        from tests.feedserver import Reply

        self.arrived.set()
        self.released.wait(_STUCK)
        return Reply(body=self.body, content_type="application/rss+xml")

    def release(self) -> None:
        self.released.set()


def _trap_feed(server: Any) -> _Trap:
    from tests.intake_data import Entry, article_text, rss_document

    epoch = datetime(2026, 1, 1, tzinfo=UTC)
    entries = [
        Entry(
            guid=f"urn:signaldesk-test:trap:{e}",
            title=f"Trap entry {e}",
            link=server.url(f"/trap/articles/{e}"),
            description=article_text(10**9 + e),  # no seed of the served feeds
            published=epoch + timedelta(hours=e),
        )
        for e in range(_TRAP_ENTRIES)
    ]
    return _Trap(rss_document("Trap", server.url("/trap"), entries))


# `serve` workers: feeds looked at every second, everything else out of the way (the
# other jobs' own rounds do not concern this bar).
_SERVE_SCHEDULE = (
    "[schedule]\n"
    "feeds_interval = 1\n"
    "drops_interval = 3600\n"
    "triage_interval = 3600\n"
    "index_interval = 3600\n"
    "watch_interval = 3600\n"
    "catch_up = false\n"
)


def _write_config(folder: Path, settings: PostgresSettings, *, serve: bool) -> Path:
    config = folder / "team.toml"
    config.write_text(
        (_SERVE_SCHEDULE if serve else "") + "[pipeline]\n"
        'ledger_backend = "postgres"\n'
        f"feed_concurrency = {_FEED_CONCURRENCY}\n"
        "[postgres]\n"
        f"dsn = {json.dumps(settings.dsn)}\n"
        "[http]\n"
        "per_host = 16\n"
        "[triage]\n"
        # Scoring and filing run in full; indexing the notes is the index's business
        # (and two workers on one vault take turns on its lock), so it stays out.
        "index_after = false\n"
        # Every entry passes, so every one is filed: the strictest test of filing once.
        "[scoring]\n"
        "threshold = 0.0\n",
        encoding="utf-8",
    )
    return config


def _subscribe(vault: Path, config: Path, urls: list[str]) -> None:
    from signaldesk.pipeline.config import resolve_workspace
    from signaldesk.pipeline.intake.feeds import FeedRegistry
    from signaldesk.pipeline.ledger.store import open_ledger

    async def subscribe() -> None:
        async with open_ledger(resolve_workspace(vault, config)) as ledger:
            registry = FeedRegistry(ledger)
            for url in urls:
                await registry.add(url)

    anyio.run(subscribe)


def _start_worker(
    name: str, vault: Path, config: Path, log: IO[bytes], *, serve: bool = False
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": str(_REPO),
        "NO_PROXY": "127.0.0.1,localhost",
        # The worker's sessions carry its name, so the trial can tell which one holds
        # the trap feed (pg_stat_activity.application_name).
        "PGAPPNAME": name,
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "signaldesk",
            "--vault",
            str(vault),
            "--config",
            str(config),
            *(["serve"] if serve else ["scan", "--json"]),
        ],
        stdout=subprocess.PIPE,
        stderr=log,
        env=env,
        cwd=_REPO,
    )


def _new_count(proc: subprocess.Popen[bytes]) -> int:
    out, _ = proc.communicate(timeout=_STUCK)
    if proc.returncode != 0:
        return 0
    summary = json.loads(out.decode())
    return int(summary["totals"]["new"])


def _holder_of(settings: PostgresSettings, url: str) -> str | None:
    """The application name of the worker whose claim holds feed ``url``."""
    from signaldesk.pipeline.ledger.pg_schema import SCHEMA, WORKER_LOCK_SPACE
    from signaldesk.postgres import connect

    with connect(settings, autocommit=True) as conn:
        row = conn.execute(
            f"SELECT a.application_name FROM {SCHEMA}.feeds f "
            "JOIN pg_locks l ON l.locktype = 'advisory' AND l.objsubid = 2 "
            "AND l.classid = %s::oid AND l.objid::text::integer = f.claimed_by "
            "JOIN pg_stat_activity a ON a.pid = l.pid WHERE f.url = %s",
            (WORKER_LOCK_SPACE, url),
        ).fetchone()
    return str(row[0]) if row else None


def _left_to_do(settings: PostgresSettings) -> int:
    from signaldesk.pipeline.ledger.pg_schema import SCHEMA
    from signaldesk.postgres import connect

    with connect(settings, autocommit=True) as conn:
        row = conn.execute(
            f"SELECT (SELECT COUNT(*) FROM {SCHEMA}.items WHERE status NOT IN "
            "('filed', 'rejected', 'duplicate', 'parked')) + "
            f"(SELECT COUNT(*) FROM {SCHEMA}.feeds WHERE last_success_at IS NULL)"
        ).fetchone()
    return int(row[0]) if row else 0


def _check(
    result: TrialResult,
    settings: PostgresSettings,
    vaults: list[Path],
    config: Path,
    expected: set[tuple[str, str]],
) -> None:
    from signaldesk.pipeline.config import resolve_workspace
    from signaldesk.pipeline.ledger.pg_schema import SCHEMA
    from signaldesk.pipeline.triage.filing import read_note_id
    from signaldesk.postgres import connect

    with connect(settings, autocommit=True) as conn:
        rows = conn.execute(
            f"SELECT id, status, note_path, source_id, payload::json ->> 'guid' FROM {SCHEMA}.items"
        ).fetchall()
        result.unpolled_feeds = int(
            conn.execute(
                f"SELECT COUNT(*) FROM {SCHEMA}.feeds WHERE last_success_at IS NULL"
            ).fetchone()[0]
        )
    result.rows = len(rows)
    keys = Counter((str(r[3]), str(r[4])) for r in rows)
    result.distinct_entries = len(keys)
    result.doubled_entries = sum(1 for n in keys.values() if n > 1)
    result.missing_entries = len(expected - set(keys))
    result.statuses = Counter(str(r[1]) for r in rows)
    folder = resolve_workspace(vaults[0], config).config.triage.signals_folder
    # Across every vault: a note filed twice, in one vault or in two, is counted.
    note_ids = Counter(
        note_id
        for vault in vaults
        for path in (vault / folder).rglob("*.md")
        if (note_id := read_note_id(path)) is not None
    )
    result.notes = sum(note_ids.values())
    result.doubled_notes = sum(1 for n in note_ids.values() if n > 1)
    result.filed_without_note = sum(
        1
        for r in rows
        if r[1] == "filed"
        and (
            r[0] not in note_ids
            or r[2] is None
            or not any((vault / str(r[2])).is_file() for vault in vaults)
        )
    )
    if len(vaults) > 1:
        # serve workers: what each took in shows as the notes in its own vault.
        for worker, vault in zip(("worker-a", "worker-b"), vaults, strict=True):
            result.new_by_worker[worker] = sum(1 for _ in (vault / folder).rglob("*.md"))


def run_trial(
    name: str,
    settings: PostgresSettings,
    server: Any,
    urls: list[str],
    expected: set[tuple[str, str]],
    workdir: Path,
    *,
    kill: bool,
    serve: bool = False,
    max_rounds: int = 4,
) -> TrialResult:
    """One trial in a fresh vault against the (fresh, empty) database of ``settings``.

    :param urls: the feeds to subscribe (with ``kill``, the trap feed is added).
    :param expected: ``(feed URL, entry guid)`` of every entry the feeds hold.
    :param serve: the workers are `signaldesk serve` processes, each with a vault of its
        own (one `serve` per vault: as on two machines), stopped with SIGTERM once the
        ledger has nothing left to do; else `signaldesk scan` processes in one vault.
    """
    from signaldesk.pipeline.vault_setup import init_vault

    workdir.mkdir(parents=True, exist_ok=True)
    names = ("worker-a", "worker-b")
    vaults = {w: workdir / (f"vault-{w}" if serve else "vault") for w in names}
    for vault in set(vaults.values()):
        init_vault(vault)
    config = _write_config(workdir, settings, serve=serve)
    expected = set(expected)
    feeds = list(urls)
    trap: _Trap | None = None
    if kill:
        trap = _trap_feed(server)
        server.route(_TRAP, trap)
        trap_url = server.url(_TRAP)
        feeds.append(trap_url)
        expected |= {(trap_url, f"urn:signaldesk-test:trap:{e}") for e in range(_TRAP_ENTRIES)}
    _subscribe(vaults[names[0]], config, feeds)
    result = TrialResult(name, len(feeds), len(expected))
    started_requests = len(server.requests)
    log = (workdir / "workers.log").open("ab")
    started = time.perf_counter()
    workers = {w: _start_worker(w, vaults[w], config, log, serve=serve) for w in names}
    try:
        if trap is not None:
            if not trap.arrived.wait(_STUCK):
                raise SystemExit("the trap feed was never fetched")
            holder = _holder_of(settings, server.url(_TRAP))
            if holder not in workers:
                raise SystemExit(f"cannot tell which worker holds the trap feed ({holder})")
            workers[holder].send_signal(signal.SIGKILL)
            workers[holder].wait()
            result.killed = holder
            trap.release()
        survivor = next(w for w in names if w != result.killed)
        if serve:
            _wait_until_done(settings, workers)
            for worker, proc in workers.items():
                if worker != result.killed:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(_STUCK)
            result.rounds = 0  # as many feeds rounds as `serve` ran meanwhile
        else:
            for worker, proc in workers.items():
                if worker != result.killed:
                    result.new_by_worker[worker] = _new_count(proc)
            result.rounds = 1
            while _left_to_do(settings) and result.rounds < max_rounds:
                # The survivor's next round (what its `serve` runs on its schedule).
                again = _start_worker(survivor, vaults[survivor], config, log)
                result.new_by_worker[survivor] += _new_count(again)
                result.rounds += 1
    finally:
        if trap is not None:
            trap.release()
        for proc in workers.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        log.close()
    result.wall = time.perf_counter() - started
    result.fetches = Counter(
        r.path for r in server.requests[started_requests:] if r.path.startswith("/feeds/")
    )
    if result.killed:
        # Fetched by the dead worker, not yet recorded when it died, so fetched again:
        # at most one per fetch worker it had ([pipeline] feed_concurrency).
        result.refetched_after_kill = _FEED_CONCURRENCY
    _check(result, settings, sorted(set(vaults.values())), config, expected)
    return result


def _wait_until_done(settings: PostgresSettings, workers: dict[str, Any]) -> None:
    """Until every feed was polled and every item settled (the bench's own polling; the
    workers' progress is in the ledger)."""
    deadline = time.monotonic() + _STUCK
    while _left_to_do(settings):
        if time.monotonic() > deadline:
            raise SystemExit("the serve workers did not finish")
        if all(proc.poll() is not None for proc in workers.values()):
            raise SystemExit("every serve worker exited before the work was done")
        time.sleep(0.5)


def _expected(feed_set: Any, urls: list[str], entries: int) -> set[tuple[str, str]]:
    return {
        (url, f"urn:signaldesk-test:{f}:{e}") for f, url in enumerate(urls) for e in range(entries)
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.team_intake", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--feeds", type=int, default=200)
    parser.add_argument("--entries", type=int, default=10, help="Entries per feed.")
    parser.add_argument("--teaser-every", type=int, default=5)
    parser.add_argument(
        "--workers",
        choices=("scan", "serve", "both"),
        default="both",
        help="`scan` processes sharing one vault, `serve` processes with a vault each "
        "(one serve per vault), or both.",
    )
    args = parser.parse_args(argv)

    from tests.feedserver import FeedServer
    from tests.intake_data import serve_feeds
    from tests.postgres_server import start_server

    modes = ("scan", "serve") if args.workers == "both" else (args.workers,)
    with tempfile.TemporaryDirectory(prefix="bench-team-") as tmp:
        (Path(tmp) / "pg").mkdir()
        pg = start_server(Path(tmp) / "pg")
        if isinstance(pg, str):
            raise SystemExit(pg)
        failed = False
        try:
            with FeedServer() as server:
                feed_set = serve_feeds(
                    server, args.feeds, args.entries, teaser_every=args.teaser_every
                )
                urls = list(feed_set.urls)
                expected = _expected(feed_set, urls, args.entries)
                print(
                    f"local server {server.base_url}: {args.feeds} feeds x {args.entries} "
                    f"entries (every {args.teaser_every}th a teaser); one PostgreSQL ledger"
                )
                for mode in modes:
                    how = (
                        "two `signaldesk serve`, a vault each"
                        if mode == "serve"
                        else "two `signaldesk scan`, one vault"
                    )
                    for trial, kill in (("two workers", False), ("one killed with -9", True)):
                        name = f"{mode}: {trial} ({how})"
                        with pg.database() as settings:
                            result = run_trial(
                                name,
                                settings,
                                server,
                                urls,
                                expected,
                                Path(tmp) / f"{mode}-{int(kill)}",
                                kill=kill,
                                serve=mode == "serve",
                            )
                        print("\n".join(result.lines()), flush=True)
                        failed = failed or bool(result.problems())
        finally:
            pg.stop()
        load = os.getloadavg()
        print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        print("command: python -m bench.team_intake " + " ".join(argv or sys.argv[1:]))
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
