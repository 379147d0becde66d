"""A small real vault for the MCP server tests, indexed with the real indexer, and
helpers that run `signaldesk mcp` as a subprocess (stdio and HTTP).

The vault has notes in several folders, filed signals with scores, a triage
report, excluded folders, an `.indexignore` rule, symlinks out of the vault and
into excluded folders, and a note with planted credentials that must never
come out of any tool.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

REPO_ROOT = Path(__file__).resolve().parent.parent

# Planted credentials: each must be redacted from every tool output.
SECRETS: dict[str, str] = {
    "aws_access_key": "AKIA" + "Q7RT2W4X6YZ3B5NL",
    "github_token": "ghp_" + "x7Kd9Lm2Pq4Rs6Tu8Vw0Xy1Za3Bc5De7Fg9H",
    "openai_key": "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7cD0eF",
    "slack_token": "xoxb-" + "2048172635-4096381726354-q8W7e6R5t4Y3u2I1o0PaSdFg",
    "private_key_body": "MIIEpAIBAAKCAQEA7Yx1Kd3vQ9mZr4sT6uW8yB0cE2gI4kM6oQ8sU0wY2a4c6e8",
    "db_password": "Tr0ub4dor-and-3-horses",
}

SECRET_NOTE = f"""---
title: Deploy credentials (do not share)
type: note
tags: [ops, deploy]
created: 2026-11-02
---
# Deploy credentials

## Cloud access

The deploy user for the blue-green pipeline uses key {SECRETS["aws_access_key"]} with the
usual policy. The GitHub bot token is {SECRETS["github_token"]} and the Slack bot posts
with {SECRETS["slack_token"]}.

## Model keys

OPENAI_API_KEY={SECRETS["openai_key"]}

## Database

postgres://deploy:{SECRETS["db_password"]}@db.internal:5432/app

## Signing key

-----BEGIN RSA PRIVATE KEY-----
{SECRETS["private_key_body"]}
q2l4n6p8r0t2v4x6z8B0D2F4H6J8L0N2P4R6T8V0X2Z4b6d8f0h2j4l6n8p0r2t4
-----END RSA PRIVATE KEY-----

After the key block the deployment checklist continues on this line.
"""

NOTES: dict[str, str] = {
    "03-resources/sqlite-wal.md": """---
title: SQLite WAL mode
type: note
tags: [databases, sqlite]
created: 2026-10-01
updated: 2026-11-20
status: active
---
# SQLite WAL mode

## Why WAL

Write-ahead logging lets readers keep reading while one writer appends to the log.
Checkpoints move pages from the WAL file back into the database file.

## Busy timeout

Set a busy timeout so that a reader waiting on a lock retries instead of failing with
SQLITE_BUSY. Readers never block the writer in WAL mode.
""",
    "03-resources/rust-ownership.md": """---
title: Rust ownership and borrowing
type: note
tags: [programming, rust]
created: 2026-09-12
---
# Rust ownership and borrowing

## Moves

A value has exactly one owner; assigning it moves ownership and the old binding is no
longer usable. The borrow checker enforces this at compile time.

## Borrowing

Shared references allow many readers; a mutable reference is exclusive. Lifetimes make
sure no reference outlives the data it points to.
""",
    "01-projects/signaldesk-launch.md": """---
title: signaldesk launch plan
type: project
tags: [launch, planning]
status: active
created: 2026-11-10
updated: 2026-11-28
---
# signaldesk launch plan

## Milestones

Ship the MCP server, the hybrid retriever and the triage report before the end of the
month. The demo vault must work offline.

## Risks

Model downloads are impossible on the build machines, so the bundled embedding model is
the fallback for every search.
""",
    "02-areas/health/running.md": """---
title: Running log
type: note
tags: [health]
created: 2026-08-01
---
# Running log

Easy runs three times a week, one long run on Sunday. Interval training on Thursdays
improves the lactate threshold.
""",
    "05-signals/security/2026-11-27-openssh-advisory.md": """---
title: OpenSSH advisory fixes pre-auth race
type: signal
domain: security
tags: [openssh, advisory]
source: https://example.org/openssh-advisory
created: 2026-11-27
composite: 0.81
relevance: 0.9
actionability: 0.85
depth: 0.7
authority: 0.75
---
# OpenSSH advisory fixes pre-auth race

Upgrade to the patched release; the advisory lists the affected versions and a
configuration workaround for hosts that cannot be upgraded yet.
""",
    "05-signals/ai-tooling/2026-11-25-mcp-spec-update.md": """---
title: MCP specification adds structured tool output
type: signal
domain: ai-tooling
tags: [mcp, llm]
source: https://example.org/mcp-spec
created: 2026-11-25
scores:
  composite: 0.64
  relevance: {score: 0.8, why: matches the interest profile}
  actionability: 0.5
  depth: 0.6
  authority: 0.55
---
# MCP specification adds structured tool output

Tools can now declare an output schema and return structured content beside text.
""",
    "05-signals/data/2026-11-20-duckdb-release.md": """---
title: DuckDB release notes
type: signal
domain: data
tags: [duckdb]
source: https://example.org/duckdb
created: 2026-11-20
score: 0.58
relevance: 0.6
actionability: 0.6
depth: 0.5
authority: 0.6
---
# DuckDB release notes

Faster joins and a new storage format version.
""",
    "06-daily/2026-11-28-triage.md": """---
title: Triage report 2026-11-28
type: daily
created: 2026-11-28
---
# Triage report 2026-11-28

Older report.
""",
    "06-daily/2026-11-29-triage.md": """---
title: Triage report 2026-11-29
type: daily
created: 2026-11-29
---
# Triage report 2026-11-29

## Arrived

12 items from 4 feeds; 3 filed (security 1, ai-tooling 1, data 1).

```mermaid
pie title Filed by domain
  "security" : 1
  "ai-tooling" : 1
  "data" : 1
```
""",
    "00-inbox/deploy-credentials.md": SECRET_NOTE,
    "00-inbox/100% done.md": "# Done\n\nA note whose name has a percent sign.\n",
    "04-archive/long-note.md": "# Long note\n\n"
    + "\n".join(f"Line {i}: archived measurement {i * 7}." for i in range(3, 4003))
    + "\n",
    # Excluded: never indexed, never readable.
    "07-templates/daily-template.md": "# Template\n\nTEMPLATE-ONLY-TEXT\n",
    "08-attachments/readme.md": "# Attachment readme\n\nATTACHMENT-ONLY-TEXT\n",
    ".obsidian/snippets.md": "# Obsidian\n\nOBSIDIAN-ONLY-TEXT\n",
    ".trash/old.md": "# Trash\n\nTRASH-ONLY-TEXT\n",
    "private/diary.md": "# Diary\n\nPRIVATE-DIARY-TEXT about sqlite wal mode\n",
}

INDEXIGNORE = "# test rules\nprivate/\n"


def build_vault(root: Path) -> Path:
    """Create the test vault under ``root/vault`` (symlinks included) and return it."""
    vault = root / "vault"
    for rel, text in NOTES.items():
        path = vault / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (vault / ".indexignore").write_text(INDEXIGNORE, encoding="utf-8")
    (vault / ".signaldesk").mkdir(exist_ok=True)
    (vault / "08-attachments" / "diagram.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (vault / "03-resources" / "notes.txt").write_text("plain text, not a note\n")
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Outside\n\nOUTSIDE-THE-VAULT\n")
    (vault / "03-resources" / "escape.md").symlink_to(outside / "secret.md")
    (vault / "03-resources" / "escape-dir").symlink_to(outside, target_is_directory=True)
    (vault / "03-resources" / "to-obsidian.md").symlink_to(vault / ".obsidian" / "snippets.md")
    (vault / "03-resources" / "alias-of-sqlite.md").symlink_to(
        vault / "03-resources" / "sqlite-wal.md"
    )
    return vault


def index_vault(vault: Path, *, full: bool = False) -> None:
    """Index ``vault`` with the real indexer and the default (offline) model."""
    from signaldesk.retrieval.embedder import LazyEmbedder
    from signaldesk.retrieval.indexer import Indexer
    from signaldesk.retrieval.settings import IndexSettings

    settings = IndexSettings()
    Indexer(vault, settings, LazyEmbedder(settings)).run_sync(full=full)


# A raw MCP `initialize` request and the headers a streamable-HTTP POST needs, for tests
# that speak HTTP without a client.
INIT_REQUEST = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    },
}
POST_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def server_env() -> dict[str, str]:
    """The environment for a server subprocess: offline, the repo importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["HF_HUB_OFFLINE"] = "1"
    env.pop("SIGNALDESK_CONFIG", None)
    env.pop("SIGNALDESK_VAULT", None)
    return env


def cli_args(vault: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "signaldesk", "--vault", str(vault), *args]


class ServerProcess:
    """A `signaldesk mcp --http` subprocess whose stderr is drained by a thread.

    :attr:`url` is set from the server's readiness line; :attr:`stderr_lines` keeps
    everything it logged (for assertions and for failure messages).
    """

    MARKER = "signaldesk MCP server ready on "

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=REPO_ROOT,
        )
        self.url: str | None = None
        self.stderr_lines: list[str] = []
        self._ready = threading.Event()
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for raw in iter(self.process.stderr.readline, b""):
            line = raw.decode("utf-8", errors="replace")
            self.stderr_lines.append(line)
            if self.url is None and self.MARKER in line:
                self.url = line.split(self.MARKER, 1)[1].strip()
                self._ready.set()
        self._ready.set()  # exited: wake the waiter, which sees url is None

    async def wait_ready(self, timeout: float) -> str:
        """The server's URL once it accepts requests (bounded by ``timeout``)."""
        with anyio.fail_after(timeout):
            await anyio.to_thread.run_sync(self._ready.wait, abandon_on_cancel=True)
        if self.url is None:
            raise RuntimeError("server exited before it was ready:\n" + self.stderr)
        return self.url

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    @property
    def base(self) -> str:
        assert self.url is not None
        return self.url.rsplit("/", 1)[0]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self._drain.join(timeout=5)
        if self.process.stderr is not None:
            self.process.stderr.close()


@asynccontextmanager
async def http_server(
    vault: Path, *extra: str, env: dict[str, str] | None = None, timeout: float = 60
) -> AsyncIterator[ServerProcess]:
    """`signaldesk mcp --http --port 0 ...` running until the block ends."""
    server = ServerProcess(
        cli_args(vault, "mcp", "--http", "--port", "0", *extra), env or server_env()
    )
    try:
        await server.wait_ready(timeout)
        yield server
    finally:
        server.stop()


def traversal_variants(vault: Path) -> list[str]:
    """Paths that must all be refused by `read_note` (and never return any text)."""
    return [
        "../outside/secret.md",
        "../../../../etc/passwd",
        "03-resources/../../outside/secret.md",
        "03-resources/./../../outside/secret.md",
        "03-resources/sqlite-wal.md/../../../outside/secret.md",
        "/etc/passwd",
        str(vault / "03-resources" / "sqlite-wal.md"),
        "~/.ssh/id_rsa",
        "~root/.bashrc",
        "%2e%2e%2foutside%2fsecret.md",
        "%252e%252e%252foutside%252fsecret.md",
        "%25252e%25252e%25252foutside%25252fsecret.md",
        "..%2foutside/secret.md",
        "%2e%2e/outside/secret.md",
        "..%c0%afoutside/secret.md",
        "%2e%2e%5coutside%5csecret.md",
        "..\\outside\\secret.md",
        "03-resources\\..\\..\\outside\\secret.md",
        "03-resources/sqlite-wal.md\x00.txt",
        "03-resources/sqlite-wal.md\n",
        "C:\\Windows\\win.ini",
        "C:/Windows/win.ini",
        "\\\\server\\share\\note.md",
        "//server/share/note.md",
        "file:///etc/passwd",
        "\uff0e\uff0e/outside/secret.md",
        "...",
        "03-resources/escape.md",
        "03-resources/escape-dir/secret.md",
        "03-resources/to-obsidian.md",
        ".obsidian/snippets.md",
        ".OBSIDIAN/snippets.md",
        "07-templates/daily-template.md",
        "08-attachments/readme.md",
        "08-attachments/diagram.png",
        ".git/config",
        ".trash/old.md",
        ".signaldesk/index.db",
        "private/diary.md",
        "03-resources/notes.txt",
        "03-resources",
        "",
    ]


# Text that appears only in files that must never be returned.
FORBIDDEN_TEXT = (
    "OUTSIDE-THE-VAULT",
    "OBSIDIAN-ONLY-TEXT",
    "TEMPLATE-ONLY-TEXT",
    "ATTACHMENT-ONLY-TEXT",
    "TRASH-ONLY-TEXT",
    "PRIVATE-DIARY-TEXT",
    "root:x:0:0",
)
