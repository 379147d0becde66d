"""Shared by the triage tests: items that clearly pass or fail, score cards, vault snapshots."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from signaldesk.items import Item
from signaldesk.pipeline.config import Config, Workspace
from signaldesk.pipeline.ledger.store import item_identity, open_ledger
from signaldesk.scoring.records import DimensionScore, RouteDecision, ScoreCard
from signaldesk.scoring.settings import ScoringSettings

__all__ = [
    "ADVISORY",
    "CONFIG_TOML",
    "HOWTO",
    "THIN",
    "advisory_item",
    "card",
    "clipping",
    "config",
    "file_list",
    "pend",
    "snapshot",
    "thin_item",
    "workspace",
]

ADVISORY = """OpenSSH {n}.9p2 fixes CVE-2026-{n}234, a remote code execution vulnerability in sshd.
Upgrade now: the bug is reachable before authentication.

## What happened

The vulnerability lets an unauthenticated attacker run code on servers running sshd with the
default configuration. The flaw is in the key exchange code, which mishandles a length field
when the client sends an oversized packet. Exploits are already circulating.

## How to fix

1. Upgrade OpenSSH to {n}.9p2 with `apt install openssh-server`.
2. Restart the service with `systemctl restart ssh`.
3. Check the version with `ssh -V`.

```bash
sudo apt update && sudo apt install openssh-server
```

The patch was released on 2026-11-20 by the OpenSSH maintainers. See the advisory at
https://www.openssh.com/security.html for details. Packages for Debian, Ubuntu and Fedora
are available; the security teams of each distribution published their own advisories.
"""

HOWTO = """How to profile a slow Python service with py-spy 0.4 and flame graphs, step by step.

## Why a sampling profiler

A sampling profiler reads the interpreter's stack from outside the process a hundred times
a second, so it adds almost no overhead and is safe to run against production traffic.
Deterministic profilers such as cProfile instrument every call and can slow a service
down by a factor of two or more, which hides the very latency you are chasing.

## Steps

1. Install the profiler with `pip install py-spy==0.4.0`.
2. Find the process id with `pgrep -f gunicorn`.
3. Record for thirty seconds: `py-spy record -o profile.svg --pid 1234 --duration 30`.
4. Open `profile.svg` in a browser and look for the widest frames.
5. Dump the live stacks of a stuck worker with `py-spy dump --pid 1234`.

```python
import time

def handler(request):
    time.sleep(0.1)  # the slow call the flame graph points at
    return compute(request)
```

```bash
sudo py-spy record --native -o native.svg --pid 1234
```

## Reading the flame graph

Each box is a function; its width is the share of samples in which it was on the stack.
Start from the widest box near the top: that is where time goes. In the example above the
`time.sleep` call takes 80% of the samples, so caching `compute` does not help at all.
Use `--idle` to include threads waiting on locks or sockets, and `--gil` to see only
threads holding the GIL.

## References

- The py-spy documentation: https://github.com/benfred/py-spy
- Brendan Gregg, "The Flame Graph", Communications of the ACM 59(6), 2016.
- The Python 3.12 release notes on `sys.monitoring`: https://docs.python.org/3/whatsnew/3.12.html
"""

THIN = "Click here. You won't believe number seven!"


def advisory_item(n: int, *, source_id: str = "http://127.0.0.1/feed.xml") -> Item:
    """A security advisory with steps and code: scores well above the default threshold."""
    return Item(
        source_kind="rss",
        source_id=source_id,
        title=f"OpenSSH {n}.9p2 fixes CVE-2026-{n}234",
        text=ADVISORY.format(n=n),
        guid=f"urn:test:advisory:{n}",
        url=f"https://www.openssh.com/txt/release-{n}.9p2",
        author="Damien Miller",
        published=datetime(2026, 11, 20, tzinfo=UTC),
        tags=("security", "ssh"),
    )


def thin_item(n: int) -> Item:
    """Clickbait with no substance: scores far below the threshold."""
    return Item(
        source_kind="rss",
        source_id="http://127.0.0.1/feed.xml",
        title=f"You won't believe these {n} photos",
        text=THIN,
        guid=f"urn:test:thin:{n}",
        url=f"https://buzz.example.com/{n}",
    )


# The tests set the threshold well below the strong items and far above the weak ones,
# so that tuning the scorer's features does not flip them.
THRESHOLD = 0.4
CONFIG_TOML = f"[scoring]\nthreshold = {THRESHOLD}\n"


def config(**sections: Any) -> Config:
    """A config with the tests' threshold and the given sections."""
    sections.setdefault("scoring", ScoringSettings(threshold=THRESHOLD))
    return Config(**sections)


def workspace(vault: Path, cfg: Config | None = None) -> Workspace:
    return Workspace(vault=vault, config=cfg or config(), config_path=None)


async def pend(ws: Workspace, items: list[Item]) -> list[str]:
    """Put ``items`` into the ledger as intake would leave them: ``pending``."""
    async with open_ledger(ws) as ledger:
        await ledger.record(items, status="fetched")
        ids = []
        for item in items:
            item_id = item_identity(item)
            verdict = await ledger.settle(item_id, item)
            assert verdict.status == "pending", verdict
            ids.append(item_id)
    return ids


def card(
    composite: float = 0.7,
    *,
    domain: str = "security",
    threshold: float = 0.55,
    relevance: float = 0.8,
    reason: str = "topic security",
) -> ScoreCard:
    """A hand-made score card (scoring itself is tested elsewhere)."""

    def dim(value: float, why: str) -> DimensionScore:
        return DimensionScore(value, why, {"x": value})

    return ScoreCard(
        relevance=dim(relevance, reason),
        actionability=dim(0.6, "3 numbered steps"),
        depth=dim(0.5, "400 words"),
        authority=dim(0.4, "unknown site"),
        composite=composite,
        passed=composite > threshold,
        route=RouteDecision(domain, 0.9, f"{domain}: keywords", ((domain, 0.9), ("web", 0.2))),
    )


def clipping(
    vault: Path,
    name: str,
    *,
    title: str,
    body: str,
    source: str = "https://example.com/article",
    newline: str = "\n",
    folder: str = "Clippings",
) -> Path:
    """A Web Clipper note as the clipper writes it (``newline`` lets a test use CRLF)."""
    lines = [
        "---",
        f'title: "{title}"',
        f'source: "{source}"',
        "author:",
        '  - "[[Ada Writer]]"',
        "published: 2026-11-20",
        "created: 2026-11-21",
        'description: "A clipped article."',
        "tags:",
        "  - clippings",
        "---",
        "",
    ]
    path = vault / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((newline.join(lines) + body.replace("\n", newline)).encode("utf-8"))
    return path


def file_list(vault: Path) -> set[str]:
    """Every file under the vault except signaldesk's own state."""
    found = set()
    for folder, dirs, files in os.walk(vault):
        dirs[:] = [d for d in dirs if d != ".signaldesk"]
        for name in files:
            found.add((Path(folder) / name).relative_to(vault).as_posix())
    return found


def snapshot(vault: Path) -> dict[str, str]:
    """sha256 of every file under the vault, state folder included."""
    result = {}
    for folder, _dirs, files in os.walk(vault):
        for name in files:
            path = Path(folder) / name
            rel = path.relative_to(vault).as_posix()
            result[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return result


def on_postgres(ws_factory: Any, settings: Any) -> Any:
    """``ws_factory`` (as :func:`workspace`) with the ledger in PostgreSQL ``settings``."""

    def factory(vault: Path, cfg: Config | None = None) -> Workspace:
        ws = ws_factory(vault, cfg)
        shared = ws.config.model_copy(
            update={
                "pipeline": ws.config.pipeline.model_copy(update={"ledger_backend": "postgres"}),
                "postgres": settings,
            }
        )
        return Workspace(vault=ws.vault, config=shared, config_path=ws.config_path)

    return factory


def ledger_toml(ws: Workspace) -> str:
    """The TOML that puts a command's ledger where ``ws`` has it."""
    if ws.config.pipeline.ledger_backend != "postgres":
        return ""
    return (
        f'[pipeline]\nledger_backend = "postgres"\n[postgres]\ndsn = "{ws.config.postgres.dsn}"\n'
    )
