"""`signaldesk demo`: a demo vault and one pass of the whole pipeline on bundled data, offline.

Steps: create the vault (hand-written notes, a config, a small git repository),
serve the sample feeds and article pages on 127.0.0.1, drop a Web Clipper note, a
newsletter and a tool's output into their folders, then scan → triage/file →
index → triage report → captain's log → search. Each step is handed to
``on_step`` as it finishes (the CLI prints it).

Running it again on the same folder is safe: files that exist are never
overwritten, samples already placed once are not placed again (``.signaldesk/demo.json``
remembers them), and the ledger makes a second scan find nothing new.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread

from signaldesk.pipeline.config import (
    CONFIG_FILENAME,
    Workspace,
    render_default_config,
    resolve_workspace,
)
from signaldesk.pipeline.demo.server import DEMO_DATA, DemoServer, render_template
from signaldesk.pipeline.errors import PipelineError
from signaldesk.pipeline.intake.feeds import FeedRegistry
from signaldesk.pipeline.intake.summary import ScanStats
from signaldesk.pipeline.ledger.store import open_ledger
from signaldesk.pipeline.reports.captains_log import CaptainsLog, write_captains_log
from signaldesk.pipeline.reports.generated_notes import GeneratedNote
from signaldesk.pipeline.reports.triage_report import TriageReportNote, write_triage_report
from signaldesk.pipeline.triage.records import TriageReport
from signaldesk.pipeline.triage.run import scan_and_triage
from signaldesk.pipeline.vault_setup import InitReport, holds_notes, init_vault
from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.retrieval.ignore import VaultFilter, iter_vault_notes
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.records import IndexReport, SearchResult
from signaldesk.retrieval.retriever import Retriever
from signaldesk.vault import STATE_DIR, atomic_write_text

__all__ = [
    "DEFAULT_DEMO_DIR",
    "DEMO_FEEDS",
    "DEMO_PORT",
    "DEMO_QUERY",
    "DemoError",
    "DemoResult",
    "DemoStep",
    "DemoVault",
    "prepare_vault",
    "run_demo",
]

logger = logging.getLogger(__name__)

DEFAULT_DEMO_DIR = "demo-vault"
DEMO_PORT = 47615
DEMO_QUERY = "why does the SQLite WAL file keep growing"
# (path on the demo server, title) of the feeds the demo subscribes to.
DEMO_FEEDS: tuple[tuple[str, str], ...] = (
    ("/feeds/advisories.xml", "Patchwork Security Advisories"),
    ("/feeds/storage.atom", "Storage Engineering Notes"),
    ("/feeds/agents.xml", "Agents Weekly"),
    ("/feeds/retired.xml", "Retired Feed"),
)
_MARKER = "demo.json"
_REPO = "demo-repo"


class DemoError(PipelineError):
    """The demo cannot run (the target is a file, say)."""


@dataclass(frozen=True, slots=True)
class DemoStep:
    """One finished step: ``key`` says which, ``data`` is that step's own result."""

    key: str
    title: str
    data: Any
    seconds: float


@dataclass
class DemoVault:
    """What preparing the vault did."""

    init: InitReport
    notes_added: list[str] = field(default_factory=list)
    samples_placed: list[str] = field(default_factory=list)
    repo: Path | None = None
    repo_problem: str | None = None


@dataclass
class DemoResult:
    """Where everything went."""

    vault: Path
    seconds: float = 0.0
    server: str = ""
    scan: ScanStats | None = None
    triage: TriageReport | None = None
    index: IndexReport | None = None
    report: GeneratedNote | None = None
    log: GeneratedNote | None = None
    query: str = DEMO_QUERY
    results: list[SearchResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the demo showed what it should (its sample feeds could be read)."""
        return not self.problems


def _copy_tree(source: Traversable, target: Path, rel: str, added: list[str]) -> None:
    for entry in source.iterdir():
        child_rel = f"{rel}/{entry.name}" if rel else entry.name
        if entry.is_dir():
            _copy_tree(entry, target / entry.name, child_rel, added)
        elif not (target / entry.name).exists():
            atomic_write_text(target / entry.name, entry.read_text(encoding="utf-8"))
            added.append(child_rel)


def _git(repo: Path, *args: str, when: datetime | None = None) -> None:
    env = {
        "GIT_AUTHOR_NAME": "Demo Author",
        "GIT_AUTHOR_EMAIL": "demo@example.org",
        "GIT_COMMITTER_NAME": "Demo Author",
        "GIT_COMMITTER_EMAIL": "demo@example.org",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when.isoformat(timespec="seconds")
    subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, env=env, timeout=30
    )


_EVENING = timedelta(hours=4)  # yesterday's commit: 20:00 the day before
_COMMITS: tuple[tuple[bool, str, str, str], ...] = (
    # (made today, file, content, message)
    (
        False,
        "indexer/checkpoint.py",
        "def wal_pages(conn):\n"
        "    return conn.execute('PRAGMA wal_checkpoint(PASSIVE)').fetchone()\n",
        "Add WAL checkpoint monitoring to the indexer",
    ),
    (
        True,
        "ledger/writer.py",
        "# TODO: shield the rollback from cancellation\n"
        "async def transaction(self):\n    async with self._lock:\n        ...\n",
        "Decided to route every ledger write through one writer task",
    ),
    (
        True,
        "tests/test_feeds.py",
        "def test_gone_feed_is_disabled():\n    assert True\n",
        "Fix flaky feed test: wait on the status file instead of sleeping",
    ),
)


def _make_repo(repo: Path, now: datetime) -> None:
    """A small repository with commits from yesterday and today, for the captain's log.

    Today's are spread over the part of today that has passed, so a demo run just after
    midnight still has them in today's log (an hour before 00:20 is yesterday).
    """
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q", "-b", "main")
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    slots = sum(made_today for made_today, *_ in _COMMITS) + 1
    made = 0
    for made_today, name, content, message in _COMMITS:
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        _git(repo, "add", name)
        made += made_today
        when = midnight + (now - midnight) * made / slots if made_today else midnight - _EVENING
        _git(repo, "commit", "-q", "-m", message, when=when)


def _someones_vault(target: Path) -> bool:
    """Whether ``target`` holds a person's notes rather than an earlier demo's (which
    leaves its marker) or nothing: `signaldesk demo ~/vault` must not fill a real
    vault with sample notes, feeds on 127.0.0.1 and a demo repository."""
    if not target.is_dir() or (target / STATE_DIR / _MARKER).is_file():
        return False
    if holds_notes(target):
        return True
    # A vault `signaldesk init` made keeps its notes in the convention's folders.
    return next(iter_vault_notes(target, VaultFilter(target)), None) is not None


def _load_marker(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def prepare_vault(target: Path, *, now: datetime) -> DemoVault:
    """Create (or top up) the demo vault; nothing that exists is overwritten.

    :raises DemoError: ``target`` exists and is not a folder, or is someone's vault.
    """
    if target.exists() and not target.is_dir():
        raise DemoError(f"{target} exists and is not a folder", hint="pick another folder")
    target = target.expanduser().resolve()
    if _someones_vault(target):
        raise DemoError(
            f"{target} already holds notes, and the demo would add its sample notes, "
            "feeds and daily notes to them",
            hint="give the demo a new or empty folder (`signaldesk demo /tmp/d`); to use "
            f"signaldesk on this vault, run `signaldesk init {shlex.quote(str(target))}`",
        )
    repo = target / STATE_DIR / _REPO
    config = target / CONFIG_FILENAME
    config_written = not config.exists()
    if config_written:
        # Written before init_vault, which keeps an existing config: the demo's own
        # settings point the captain's log at the demo repository.
        overrides: dict[str, dict[str, Any]] = {
            "vault": {"path": str(target)},
            "captains_log": {"repos": [str(repo)], "covers": "same_day"},
            # The sample site is served by a thread of this very process, which a busy
            # machine can slow down for seconds: no reason to give up on a page early.
            "http": {"page_first_byte_timeout": 30.0, "page_total_timeout": 60.0},
        }
        atomic_write_text(config, render_default_config(overrides))
    result = DemoVault(init=init_vault(target))
    if config_written:
        # init_vault found the config this run wrote a moment ago: created, not kept
        # (a first demo said "26 folders/files created, 1 kept" of a folder it made).
        result.init.kept.remove(CONFIG_FILENAME)
        result.init.created.append(CONFIG_FILENAME)
    _copy_tree(DEMO_DATA / "vault", target, "", result.notes_added)

    marker_path = target / STATE_DIR / _MARKER
    marker = _load_marker(marker_path)
    placed: set[str] = set(marker.get("placed", []))
    workspace = resolve_workspace(target)
    cfg = workspace.config
    drops = {
        "clippings": workspace.resolve(cfg.clipper.folder),
        "newsletters": workspace.resolve(cfg.newsletter.drop_folder),
        "tool_output": workspace.resolve(cfg.tool_output.drop_folder),
    }
    for kind, folder in drops.items():
        for entry in (DEMO_DATA / kind).iterdir():
            key = f"{kind}/{entry.name}"
            destination = folder / entry.name
            if key in placed or destination.exists():
                continue
            text = render_template(entry.read_text(encoding="utf-8"), base="", now=now)
            atomic_write_text(destination, text)
            placed.add(key)
            result.samples_placed.append(destination.relative_to(target).as_posix())
    marker["placed"] = sorted(placed)
    atomic_write_text(marker_path, json.dumps(marker, indent=2) + "\n")

    if (repo / ".git").is_dir():
        result.repo = repo
    elif shutil.which("git") is None:
        result.repo_problem = "git is not installed: the captain's log will have no commits"
    else:
        try:
            _make_repo(repo, now)
            result.repo = repo
        except (OSError, subprocess.SubprocessError) as exc:
            result.repo_problem = f"could not create the demo git repository: {exc}"
            logger.warning("%s", result.repo_problem)
            logger.debug("demo repository not made", exc_info=True)
    return result


async def _subscribe(workspace: Workspace, base: str) -> list[str]:
    """Subscribe to the demo feeds at ``base``; re-point ones left from a run on another port."""
    wanted = {path: title for path, title in DEMO_FEEDS}
    added: list[str] = []
    async with open_ledger(workspace) as ledger:
        registry = FeedRegistry(ledger)
        existing = {r.url: r for r in await registry.records()}
        for url in existing:
            parts = urlsplit(url)
            stale = parts.hostname == "127.0.0.1" and parts.path in wanted
            if stale and not url.startswith(base + "/"):
                await registry.remove(url)
        for path, title in DEMO_FEEDS:
            url = base + path
            if url not in existing:
                await registry.add(url, title=title)
                added.append(url)
    return added


async def run_demo(
    target: Path,
    *,
    on_step: Callable[[DemoStep], None] | None = None,
    query: str = DEMO_QUERY,
    port: int = DEMO_PORT,
    now: datetime | None = None,
) -> DemoResult:
    """Build the demo vault in ``target`` and run the pipeline once, reporting each step.

    :raises DemoError: the target cannot hold a vault.
    """
    started = time.monotonic()
    moment = now or datetime.now().astimezone()
    today: date = moment.date()
    result = DemoResult(vault=target.expanduser().resolve(), query=query)
    mark = time.monotonic()

    def step(key: str, title: str, data: Any) -> None:
        nonlocal mark
        elapsed = time.monotonic() - mark
        mark = time.monotonic()
        if on_step is not None:
            on_step(DemoStep(key, title, data, elapsed))

    vault = await anyio.to_thread.run_sync(lambda: prepare_vault(target, now=moment))
    step("vault", "Demo vault", vault)
    workspace = resolve_workspace(result.vault)
    embedder = LazyEmbedder(workspace.config.index)
    tz = moment.tzinfo

    with DemoServer(port=port, now=moment) as server:
        result.server = server.base_url
        added = await _subscribe(workspace, server.base_url)
        step("feeds", f"Sample site on {server.base_url}", added)
        scan, triaged = await scan_and_triage(workspace, force=True, embedder=embedder)
    result.scan, result.triage = scan, triaged
    if scan.feeds_polled and scan.feeds_polled == scan.feeds_failed:
        # Trigger: a proxy or firewall between this process and 127.0.0.1, or the port
        # taken. Why: without its feeds the demo shows little, and "Done" would hide it.
        causes = sorted({f"{g.cause} at {g.host}" for g in scan.problems.values()})
        result.problems.append(
            f"none of the {scan.feeds_polled} sample feeds could be read from "
            f"{result.server} ({'; '.join(causes) or 'see `signaldesk feeds list`'})"
        )
    step("scan", "Scan and triage: feeds, clippings, newsletter, tool output", scan)
    step("triage", "Triage decisions (made during the scan)", triaged)

    report: TriageReportNote
    report, result.report = await write_triage_report(workspace, today, tz=tz)
    step("report", "Triage report", (report, result.report))

    log: CaptainsLog
    log, result.log = await anyio.to_thread.run_sync(
        lambda: write_captains_log(
            workspace.vault,
            workspace.config.captains_log,
            today,
            tz=tz,
            skip=[workspace.config.clipper.folder],  # as `log` and serve leave clippings out
        )
    )
    step("log", "Captain's log", (log, result.log))

    indexer = Indexer(workspace.vault, workspace.config.index, embedder, workers=1)
    result.index = await indexer.run()
    step("index", "Index", result.index)

    retriever = await Retriever.open(
        workspace.vault, workspace.config.index, workspace.config.search, embedder
    )
    async with retriever:
        result.results = await retriever.search(query, limit=5)
    step("search", f"Search: {query!r}", result.results)
    result.seconds = time.monotonic() - started
    return result
