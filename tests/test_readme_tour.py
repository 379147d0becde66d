"""The README's five-minute tour runs as written.

The commands are read from the README itself (every line of every ``bash`` block of
"A five-minute tour", in order), so the tour cannot drift from what works. They run
in a fresh home folder, in a fresh working folder where ``signaldesk demo`` runs
first (as the README's opening commands do), with the network closed: every request
to anything but 127.0.0.1 goes to a closed port. ``export`` lines change the
environment of the commands after them, as in a shell; a command that runs "until
Ctrl-C" is started, waited for until it says it is ready, and stopped with SIGINT.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"
_CLOSED = "http://127.0.0.1:9"
# Lines a long-running command prints once it serves (they go to stderr).
_READY = ("signaldesk serve:", "MCP server ready on")
_WAIT_S = 120  # bound on any one command; a hung command fails the test, never hangs it


def tour_commands(readme: str) -> list[str]:
    """Every command line of the tour's ``bash`` blocks, in order."""
    match = re.search(r"^## A five-minute tour\n(.*?)(?=^## )", readme, re.M | re.S)
    assert match, "README.md has no '## A five-minute tour' section"
    commands: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", match.group(1), re.M | re.S):
        commands += [
            ln.strip() for ln in block.splitlines() if ln.strip() and not ln.startswith("#")
        ]
    return commands


@dataclass
class Ran:
    command: str
    code: int
    out: str
    err: str


def _program(command: str) -> list[str]:
    """The programs a command line runs (each stage of a pipe)."""
    names: list[str] = []
    for stage in re.split(r"\|(?!\|)", command.split(" #", 1)[0]):
        words = shlex.split(stage)
        if words:
            names.append(words[0])
    return names


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Tour:
    """Runs tour commands one after the other, like a person at a shell."""

    def __init__(self, home: Path, work: Path) -> None:
        bin_dir = Path(sys.executable).parent
        self.cwd = work
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("SIGNALDESK_") and not k.startswith("PYTEST")
        }
        self.env.update(
            {
                "HOME": str(home),
                "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                "COLUMNS": "120",
                "HF_HUB_OFFLINE": "1",
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
                **{k: _CLOSED for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")},
            }
        )

    def run(self, command: str) -> Ran:
        export = re.fullmatch(r"export (\w+)=(\S+)(?:\s+#.*)?", command)
        if export:
            value = self._shell(f"printf %s {export.group(2)}").out
            self.env[export.group(1)] = value
            return Ran(command, 0, value, "")
        if "until Ctrl-C" in command:
            return self._until_ready(command)
        return self._shell(command)

    def _shell(self, command: str) -> Ran:
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_WAIT_S,
        )
        return Ran(command, done.returncode, done.stdout, done.stderr)

    def _until_ready(self, command: str) -> Ran:
        proc = subprocess.Popen(
            ["bash", "-c", f"exec {command.split(' #', 1)[0]}"],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: list[str] = []
        ready = threading.Event()

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.append(line)
                if any(mark in line for mark in _READY):
                    ready.set()
            ready.set()  # it ended without saying so: let the test see why

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        ready.wait(_WAIT_S)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # the Ctrl-C the README speaks of
        # communicate() reads stderr too, beside the thread: what it gets is the end of
        # what the command said (the "stopped cleanly" line, say), so it is kept.
        try:
            out, rest = proc.communicate(timeout=_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, rest = proc.communicate()
        reader.join(timeout=5)
        return Ran(command, proc.returncode, out, "".join(lines) + (rest or ""))


# What each command must show besides exiting 0, by the start of its line.
_EXPECT: list[tuple[str, Callable[[Ran, Tour], bool]]] = [
    ("signaldesk items", lambda r, t: "item(s)" in r.out and "filed" in r.out),
    ("signaldesk index --status", lambda r, t: "notes" in r.out),
    ('signaldesk search "sqlite busy timeout" --limit', lambda r, t: "Results for" in r.out),
    (
        'signaldesk search "sqlite busy timeout" --json',
        lambda r, t: bool(r.out.split()) and all(p.endswith(".md") for p in r.out.split()),
    ),
    ('signaldesk search "sqlite busy timeout" --explain', lambda r, t: "explain" in r.out),
    ("signaldesk context", lambda r, t: "sqlite" in r.out.lower()),
    ("signaldesk score", lambda r, t: "composite" in r.out and "threshold" in r.out),
    ("echo", lambda r, t: "captured to 00-inbox/tool-output/" in r.out),
    ("signaldesk capture", lambda r, t: "captured to 00-inbox/tool-output/" in r.out),
    ("signaldesk report --date", lambda r, t: "2026-11-29-triage.md" in r.out),
    ("signaldesk report", lambda r, t: "-triage.md" in r.out and "arrived" in r.out),
    ("signaldesk log", lambda r, t: "-captains-log.md" in r.out and "commit" in r.out),
    ("signaldesk feeds list", lambda r, t: "feed(s)" in r.out),
    (
        "signaldesk feeds export",
        lambda r, t: "<opml" in (t.cwd / "subscriptions.opml").read_text(encoding="utf-8"),
    ),
    ("signaldesk scan", lambda r, t: "Scan finished" in r.out),
    (
        "signaldesk mcp --print-config",
        lambda r, t: "mcpServers" in json.loads((t.cwd / ".mcp.json").read_text("utf-8")),
    ),
    # Stopped as soon as it said it started: "stopped cleanly", or Ctrl-C's 130 when the
    # signal came before the scheduler took over the signals.
    ("signaldesk serve", lambda r, t: "stopped cleanly" in r.err or r.code == 130),
    ("signaldesk status", lambda r, t: "serve is not running" in r.out and "index:" in r.out),
    ("signaldesk doctor", lambda r, t: "doctor" in r.out and "✗" not in r.out),
    ("signaldesk init", lambda r, t: (Path(t.env["HOME"]) / "vault" / "signaldesk.toml").is_file()),
    ("signaldesk feeds import", lambda r, t: "4 feed(s) added" in r.out),
    ("signaldesk index", lambda r, t: "added" in r.out),
]


def _check(ran: Ran, tour: Tour) -> None:
    detail = (
        f"$ {ran.command}\nexit {ran.code}\n--- stdout\n{ran.out[-3000:]}\n"
        f"--- stderr\n{ran.err[-3000:]}"
    )
    # Stopped with Ctrl-C, 130 (128 + SIGINT) is a clean exit too.
    clean = {0, 130} if "until Ctrl-C" in ran.command else {0}
    assert ran.code in clean, detail
    assert "Traceback" not in ran.out + ran.err, detail
    for prefix, expected in _EXPECT:
        if ran.command.startswith(prefix):
            assert expected(ran, tour), detail
            return


@pytest.mark.slow
@pytest.mark.timeout(1200)  # some 30 commands, each a new process that loads the model
def test_the_readme_tour_runs_as_written(tmp_path: Path) -> None:
    commands = tour_commands(README.read_text(encoding="utf-8"))
    assert len(commands) >= 25
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    tour = Tour(home, work)
    demo = tour.run("signaldesk demo")
    assert demo.code == 0 and "Done in" in demo.out, demo.out + demo.err
    skipped: list[str] = []
    for command in commands:
        if command.startswith("pip install"):
            continue  # an optional extra from the package index: not for an offline run
        missing = [
            p
            for p in _program(command)
            if p not in {"signaldesk", "export"} and not shutil.which(p)
        ]
        busy = "--http" in command and not _port_free(8765)
        if missing or busy:
            skipped.append(command)  # a tool this machine lacks, or the port in use
            continue
        _check(tour.run(command), tour)
    assert len(skipped) <= 1, skipped
    # The tour's own vault is where the last commands said it would be.
    assert tour.env["SIGNALDESK_VAULT"] == str(home / "vault")


def test_the_tour_covers_what_a_new_user_does() -> None:
    commands = tour_commands(README.read_text(encoding="utf-8"))
    verbs = {shlex.split(c.split(" #", 1)[0])[1] for c in commands if c.startswith("signaldesk ")}
    assert {"search", "context", "triage", "score", "capture", "report", "log"} <= verbs
    assert {"feeds", "scan", "mcp", "serve", "status", "doctor", "init", "index"} <= verbs
    # Every file the tour reads, an earlier command of the tour writes.
    joined = "\n".join(commands)
    assert joined.index("feeds export subscriptions.opml") < joined.index(
        "feeds import subscriptions.opml"
    )


def test_shell_completion_works_as_the_readme_says() -> None:
    readme = README.read_text(encoding="utf-8")
    assert "_SIGNALDESK_COMPLETE=bash_source" in readme
    script = subprocess.run(
        [sys.executable, "-m", "signaldesk"],
        env={**os.environ, "_SIGNALDESK_COMPLETE": "bash_source"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    # python -m signaldesk names itself "signaldesk", so the installed script's
    # completion is what this prints.
    assert script.returncode == 0 and "complete" in script.stdout, script.stderr
    words = subprocess.run(
        [sys.executable, "-m", "signaldesk"],
        env={
            **os.environ,
            "_SIGNALDESK_COMPLETE": "bash_complete",
            "COMP_WORDS": "signaldesk fe",
            "COMP_CWORD": "1",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "feeds" in words.stdout
