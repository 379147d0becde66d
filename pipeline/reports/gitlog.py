"""Reading a day's work out of local git repositories (no network, plain `git`)."""

from __future__ import annotations

import logging
import re
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from signaldesk.pipeline.errors import PipelineError

logger = logging.getLogger(__name__)

_RECORD = "\x1e"
_FIELD = "\x1f"
_FORMAT = f"{_RECORD}%H{_FIELD}%an{_FIELD}%ae{_FIELD}%aI{_FIELD}%s{_FIELD}%b{_FIELD}"
_OPEN_LOOP = re.compile(r"\b(TODO|FIXME|XXX|HACK)\b[:\s]*(.*)")
_GIT_TIMEOUT_S = 30


class GitError(PipelineError):
    """A git command failed or git is not installed."""


@dataclass(frozen=True, slots=True)
class Commit:
    """One non-merge commit with its line statistics."""

    repo: str
    sha: str
    author: str
    email: str
    date: datetime
    subject: str
    body: str
    files: int
    insertions: int
    deletions: int


@dataclass(frozen=True, slots=True)
class AddedTodo:
    """A TODO/FIXME line that a commit added."""

    repo: str
    sha: str
    path: str
    tag: str
    text: str


def _git(repo: Path, *args: str) -> str:
    try:
        completed = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            check=False,
            timeout=_GIT_TIMEOUT_S,
        )
    except FileNotFoundError as exc:
        raise GitError(
            "git is not installed", hint="install git to get commits in the log"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git took longer than {_GIT_TIMEOUT_S}s in {repo}") from exc
    if completed.returncode != 0:
        message = completed.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {' '.join(args[:1])} failed in {repo}: {message}")
    return completed.stdout.decode("utf-8", "replace")


def is_repository(path: Path) -> bool:
    return (path / ".git").exists()


def find_repositories(roots: Iterable[Path], *, max_depth: int = 3) -> list[Path]:
    """Every git repository at or below ``roots`` (not descending into repositories)."""
    found: list[Path] = []

    def walk(folder: Path, depth: int) -> None:
        if is_repository(folder):
            found.append(folder)
            return
        if depth >= max_depth:
            return
        try:
            children = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError as exc:
            logger.warning("cannot list %s: %s", folder, exc)
            return
        for child in children:
            if not child.name.startswith("."):
                walk(child, depth + 1)

    for root in roots:
        walk(root.expanduser(), 0)
    return found


def commits_between(repo: Path, start: datetime, end: datetime) -> list[Commit]:
    """Non-merge commits on any branch whose author date is in ``[start, end)``, oldest first."""
    output = _git(
        repo,
        "log",
        "--all",
        "--no-merges",
        "--numstat",
        f"--since={start.isoformat()}",
        f"--until={end.isoformat()}",
        f"--format={_FORMAT}",
    )
    commits = []
    for record in output.split(_RECORD)[1:]:
        sha, author, email, date, subject, body, stats = record.split(_FIELD, 6)
        when = datetime.fromisoformat(date)
        # --since/--until use committer dates; the log is about when work was authored.
        if not start <= when < end:
            continue
        files = insertions = deletions = 0
        for line in stats.strip().splitlines():
            added, removed, _path = line.split("\t", 2)
            files += 1
            # Binary files show "-" for both counts.
            insertions += int(added) if added.isdigit() else 0
            deletions += int(removed) if removed.isdigit() else 0
        commits.append(
            Commit(
                repo=repo.name,
                sha=sha,
                author=author,
                email=email,
                date=when,
                subject=subject.strip(),
                body=body.strip(),
                files=files,
                insertions=insertions,
                deletions=deletions,
            )
        )
    commits.sort(key=lambda c: c.date)
    return commits


def added_todos(repo: Path, commits: Iterable[Commit]) -> list[AddedTodo]:
    """TODO/FIXME/XXX/HACK lines added by the given commits."""
    todos: list[AddedTodo] = []
    for commit in commits:
        diff = _git(repo, "show", "--format=", "--unified=0", "--no-color", commit.sha)
        todos.extend(_todos_in_diff(repo.name, commit.sha, diff))
    return todos


def _todos_in_diff(repo: str, sha: str, diff: str) -> Iterator[AddedTodo]:
    path = ""
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else line[4:]
        elif line.startswith("+") and not line.startswith("+++"):
            match = _OPEN_LOOP.search(line[1:])
            if match:
                text = match.group(2).strip().rstrip("*/-# ").strip()
                yield AddedTodo(repo=repo, sha=sha, path=path, tag=match.group(1), text=text)
