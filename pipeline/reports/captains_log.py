"""The captain's log: a daily note of what was done, decided, left open and read.

Built only from local sources: git history of the configured repositories, the
notes touched in the period, and the signals filed in it. No network.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path

from signaldesk.frontmatter import as_tags, first_heading, note_title, parse_note
from signaldesk.pipeline.reports.generated_notes import GeneratedNote, write_generated_note
from signaldesk.pipeline.reports.gitlog import (
    AddedTodo,
    Commit,
    GitError,
    added_todos,
    commits_between,
    find_repositories,
    is_repository,
)
from signaldesk.pipeline.reports.note_links import note_link
from signaldesk.pipeline.settings import CaptainsLogSettings
from signaldesk.pipeline.wording import plural
from signaldesk.retrieval.ignore import VaultFilter, iter_vault_notes
from signaldesk.signal_note import COMPOSITE_KEY, SIGNAL_TYPE, signal_scores

# Words that mark a commit message or a note line as a decision or a lesson.
_DECISION = re.compile(
    r"\b(decid\w*|decision|chose|choose|switch(ed|ing)? (to|from)|migrat\w+ (to|from)|"
    r"replac\w+ .{1,40} with|revert\w*|drop(ped)? support|deprecat\w+|adopt\w*|"
    r"lesson\w*|learn(ed|t)|TIL|turns out|root cause|gotcha|instead of)\b",
    re.IGNORECASE,
)
_UNCHECKED = re.compile(r"^\s*[-*+] \[ \] (.+)$")
# A numbered step ("1. Switch to the new client") is an instruction, not a decision.
_NUMBERED_STEP = re.compile(r"^\s*\d+[.)]\s")
_GENERATED_SUFFIXES = ("-captains-log.md", "-triage.md")


@dataclass(frozen=True, slots=True)
class Period:
    """The half-open span of local time a log covers."""

    start: datetime
    end: datetime

    @property
    def days(self) -> list[date]:
        first, last = self.start.date(), (self.end - timedelta(microseconds=1)).date()
        return [first + timedelta(days=n) for n in range((last - first).days + 1)]


@dataclass(frozen=True, slots=True)
class NoteLine:
    path: str
    text: str


@dataclass(frozen=True, slots=True)
class SignalEntry:
    path: str
    title: str
    domain: str
    composite: float


@dataclass
class CaptainsLog:
    """Everything the log shows, gathered before it is rendered (tests read this)."""

    day: date
    period: Period
    commits: dict[str, list[Commit]] = field(default_factory=dict)
    decisions: list[str] = field(default_factory=list)
    todos: list[AddedTodo] = field(default_factory=list)
    unchecked: list[NoteLine] = field(default_factory=list)
    signals: list[SignalEntry] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    repositories: int = 0  # how many were read (configured and found)


def period_for(day: date, covers: str, tz: tzinfo) -> Period:
    """The period the log dated ``day`` covers; Monday's reaches back over the weekend."""
    monday = day.weekday() == 0
    if covers == "same_day":
        first, last = (day - timedelta(days=2) if monday else day), day
    else:
        first = day - timedelta(days=3 if monday else 1)
        last = day - timedelta(days=1)
    start = datetime.combine(first, time.min, tzinfo=tz)
    end = datetime.combine(last + timedelta(days=1), time.min, tzinfo=tz)
    return Period(start, end)


def _repositories(settings: CaptainsLogSettings, problems: list[str]) -> list[Path]:
    """The repositories to read; each configured one that is not a repository is added
    to ``problems`` (the log's own Problems section: serve writes it unattended)."""
    repos = [Path(p).expanduser() for p in settings.repos]
    repos += find_repositories(Path(p) for p in settings.repo_roots)
    unique: dict[Path, None] = {}
    for repo in repos:
        if is_repository(repo):
            unique.setdefault(repo.resolve(), None)
        else:
            problems.append(f"not a git repository, skipped: {repo} ([captains_log] repos)")
    return list(unique)


def gather(
    vault: Path,
    settings: CaptainsLogSettings,
    day: date,
    *,
    tz: tzinfo | None = None,
    skip: Sequence[str] = (),
) -> CaptainsLog:
    """Collect the log's content for ``day`` (local time unless ``tz`` is given).

    :param skip: vault-relative folders whose notes are other people's pages (the clipper
        folder): no decisions or open loops are taken from them.
    """
    zone = tz or datetime.now().astimezone().tzinfo
    assert zone is not None
    log = CaptainsLog(day=day, period=period_for(day, settings.covers, zone))
    repos = _repositories(settings, log.errors)
    log.repositories = len(repos)
    for repo in repos:
        try:
            commits = commits_between(repo, log.period.start, log.period.end)
            todos = added_todos(repo, commits)
        except GitError as exc:
            log.errors.append(str(exc))
            continue
        if commits:
            log.commits[repo.name] = commits
        log.todos.extend(todos)
        log.decisions.extend(
            f"{c.subject} ({repo.name} {c.sha[:7]})"
            for c in commits
            if _DECISION.search(f"{c.subject}\n{c.body}")
        )
    _gather_notes(vault, log, settings.top_signals, skip)
    return log


def _created_day(value: object, tz: tzinfo) -> str:
    """The day, in ``tz``, of a note's ``created`` (``""`` when it names none).

    A date is taken as it is; a time with an offset is converted; a time without one is
    this machine's local time (what signaldesk's note writer stamps), so a signal filed
    near midnight counts on the same day as in the triage report, which counts arrivals
    in the configured zone.
    """
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        return value.isoformat()
    else:
        text = str(value or "").strip()
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return text[:10]
        if len(text) <= 10:  # a bare date: no time, no zone to convert
            return moment.date().isoformat()
    if moment.tzinfo is None:
        moment = moment.astimezone()  # naive: this machine's local time
    return moment.astimezone(tz).date().isoformat()


def _is_clipped_page(rel: str, meta: dict[str, object], skip: Sequence[str]) -> bool:
    """A Web Clipper note: its ``clippings`` tag (wherever it was moved), or in a skipped
    folder. Its sentences and checkboxes are the page author's, not the person's."""
    if "clippings" in as_tags(meta.get("tags")):
        return True
    return any(rel.startswith(folder.strip("/") + "/") for folder in skip if folder.strip("/"))


def _gather_notes(vault: Path, log: CaptainsLog, top_signals: int, skip: Sequence[str]) -> None:
    start_ts, end_ts = log.period.start.timestamp(), log.period.end.timestamp()
    days = {d.isoformat() for d in log.period.days}
    zone = log.period.start.tzinfo
    assert zone is not None
    signals: list[SignalEntry] = []
    for rel, stat in iter_vault_notes(vault, VaultFilter(vault)):
        if rel.endswith(_GENERATED_SUFFIXES):
            continue
        parsed = parse_note((vault / rel).read_text(encoding="utf-8", errors="replace"))
        meta = parsed.frontmatter
        created = _created_day(meta.get("created"), zone)
        # A signal is a note of type signal wherever it lives (the signals folder is
        # configurable, and a person may move a note).
        if meta.get("type") == SIGNAL_TYPE:
            if created in days:
                signals.append(
                    SignalEntry(
                        path=rel,
                        title=note_title(meta, rel, heading=first_heading(parsed.body)),
                        domain=str(meta.get("domain") or "other"),
                        composite=signal_scores(meta).get(COMPOSITE_KEY, 0.0),
                    )
                )
            continue
        if not (start_ts <= stat.st_mtime < end_ts or created in days):
            continue
        if _is_clipped_page(rel, meta, skip):
            continue
        for line in parsed.body.splitlines():
            unchecked = _UNCHECKED.match(line)
            if unchecked:
                log.unchecked.append(NoteLine(rel, unchecked.group(1).strip()))
            elif (
                _DECISION.search(line) and len(line.strip()) > 12 and not _NUMBERED_STEP.match(line)
            ):
                log.decisions.append(f"{line.strip(' -*#>')} ({note_link(rel)})")
    signals.sort(key=lambda s: (-s.composite, s.path))
    log.signals = signals[:top_signals]


@dataclass(frozen=True, slots=True)
class OpenLoop:
    """One open loop and every place it was written (a code TODO, a note's checkbox)."""

    text: str
    sources: tuple[str, ...]


def _loop_key(text: str) -> str:
    # "TODO: shield the rollback from cancellation" in the code and "- [ ] Shield the
    # rollback from cancellation." in the session's notes are one loop.
    return " ".join(re.findall(r"\w+", text.lower()))


def open_loops(log: CaptainsLog) -> list[OpenLoop]:
    """The log's open loops, each said once: the same words in several places (the code's
    TODO and a note's checkbox) are one loop with all its sources, first seen first."""
    merged: dict[str, tuple[str, list[str]]] = {}
    written = [(f"{t.tag}: {t.text}", t.text, f"`{t.repo}/{t.path}`") for t in log.todos]
    written += [(u.text, u.text, note_link(u.path)) for u in log.unchecked]
    for shown, words, source in written:
        _, sources = merged.setdefault(_loop_key(words) or shown, (shown, []))
        if source not in sources:
            sources.append(source)
    return [OpenLoop(shown, tuple(sources)) for shown, sources in merged.values()]


def summary_line(log: CaptainsLog) -> str:
    """What the log holds, in one line (``signaldesk log`` prints it)."""
    commits = sum(len(c) for c in log.commits.values())
    return (
        f"{plural(commits, 'commit')} in "
        f"{plural(len(log.commits), 'repository', 'repositories')}, "
        f"{plural(len(log.decisions), 'decision')}, "
        f"{plural(len(open_loops(log)), 'open loop')}, "
        f"{plural(len(log.signals), 'signal')}"
    )


def render(log: CaptainsLog) -> str:
    """The log as markdown, H2 sections, readable in Obsidian."""
    total = [c for commits in log.commits.values() for c in commits]
    zone = log.period.start.tzinfo  # the log's day is counted there; its times are shown there
    first, last = log.period.days[0], log.period.days[-1]
    span = first.isoformat() if first == last else f"{first.isoformat()} to {last.isoformat()}"
    loops = open_loops(log)
    lines = [f"# Captain's log {log.day.isoformat()}", ""]
    lines.append(
        f"Covers {span}: {plural(len(total), 'commit')} in "
        f"{plural(len(log.commits), 'repository', 'repositories')} "
        f"(+{sum(c.insertions for c in total)} / -{sum(c.deletions for c in total)} lines), "
        f"{plural(len(log.signals), 'top signal')}, "
        f"{plural(len(loops), 'open loop')}."
    )
    lines += ["", "## Commits", ""]
    if not log.repositories and not log.errors:
        lines.append(
            "No commits: no repositories are configured (`[captains_log] repos`, or "
            "`repo_roots` to find them under a folder, in signaldesk.toml)."
        )
    elif not log.commits:
        lines.append("No commits in the configured repositories.")
    for repo, commits in sorted(log.commits.items()):
        ins, dels = sum(c.insertions for c in commits), sum(c.deletions for c in commits)
        lines += [f"### {repo} ({plural(len(commits), 'commit')}, +{ins} / -{dels})", ""]
        lines += ["| when | author | subject | files | +/- |", "| --- | --- | --- | --- | --- |"]
        for c in commits:
            subject = c.subject.replace("|", "\\|")
            lines.append(
                f"| {c.date.astimezone(zone):%a %H:%M} | {c.author} | {subject} `{c.sha[:7]}` "
                f"| {c.files} | +{c.insertions} / -{c.deletions} |"
            )
        lines.append("")
    if lines[-1] == "":
        lines.pop()  # the section break below is blank line enough
    lines += ["", "## Decisions and learnings", ""]
    lines += [f"- {d}" for d in log.decisions] or ["Nothing recorded."]
    lines += ["", "## Open loops", ""]
    lines += [f"- [ ] {loop.text} ({'; '.join(loop.sources)})" for loop in loops] or ["None."]
    lines += ["", "## Top signals", ""]
    lines += [
        f"- {note_link(s.path, s.title)} · {s.domain} · {s.composite:.2f}" for s in log.signals
    ] or ["No signals filed."]
    if log.errors:
        lines += ["", "## Problems", ""] + [f"- {e}" for e in log.errors]
    return "\n".join(lines) + "\n"


def log_path(vault: Path, settings: CaptainsLogSettings, day: date) -> Path:
    """Where the log dated ``day`` is written."""
    return vault / settings.path.format(date=day.isoformat())


def write_captains_log(
    vault: Path,
    settings: CaptainsLogSettings,
    day: date,
    *,
    tz: tzinfo | None = None,
    skip: Sequence[str] = (),
) -> tuple[CaptainsLog, GeneratedNote]:
    """Gather, render and write the log dated ``day`` (``skip``: as :func:`gather`)."""
    log = gather(vault, settings, day, tz=tz, skip=skip)
    path = log_path(vault, settings, day)
    frontmatter = {
        "title": f"Captain's log {day.isoformat()}",
        "type": "daily",
        "tags": ["captains-log"],
        "created": datetime.now().astimezone().isoformat(timespec="seconds"),
        "covers": [d.isoformat() for d in log.period.days],
        "status": "active",
    }
    return log, write_generated_note(path, frontmatter, render(log))
