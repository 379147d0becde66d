"""Planted secrets never leave what a person wrote (issue 12, items 1-4).

Secrets from many rule families (vendor tokens drawn from gitleaks' rules, the shapes of
issue 12, real private keys) are planted in a vault note, a Web Clipper note, a tool
output, a newsletter and a feed. Then ``scan``, ``triage``, ``index`` and ``report`` run
with ``-vv`` as a person runs them, and the MCP tools are called. No planted value may
appear in ``index.db`` or its WAL, ``ledger.db`` or its WAL, a note signaldesk generated,
the ``-vv`` logs, or any MCP answer. (The notes people wrote keep their text.)
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import string
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from mcp import Client

from bench.secret_samples import HAND_CASES, key_lines, leaked, real_private_keys, rule_samples
from signaldesk.frontmatter import parse_note
from signaldesk.mcp_server import McpSettings, build_server
from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.scrub_rules import load_rules
from signaldesk.retrieval.scrubber import PATTERN_NAMES
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from tests.conftest import REPO_ROOT
from tests.feedserver import FeedServer, Reply
from tests.intake_data import Entry, article_html, newsletter_eml, rss_document
from tests.triage_data import ADVISORY, CONFIG_TOML, HOWTO, clipping

pytestmark = [pytest.mark.slow, pytest.mark.anyio, pytest.mark.timeout(600)]

_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_\-.+/=:]+")


def _vendor_tokens(count: int) -> list[tuple[str, str, str]]:
    """(rule, token line, secret) for ``count`` gitleaks vendor rules spread over the set."""
    rules = load_rules()
    vendor = [
        r
        for r in rules.rules
        if r.origin == "gitleaks" and not r.name.startswith(("generic", "curl", "kubernetes"))
    ]
    picked: list[tuple[str, str, str]] = []
    step = max(1, len(vendor) // count)
    for index, rule in enumerate(vendor[::step]):
        samples, _ = rule_samples(rules, rule, 7 * 100_003 + index, count=6)
        for sample in samples:
            token = sample.token.strip()
            if (
                len(sample.secret) >= 16
                and _TOKEN_CHARS.fullmatch(sample.secret)
                and _TOKEN_CHARS.fullmatch(token.replace(" ", ""))
            ):
                picked.append((rule.name, token, sample.secret))
                break
    return picked


def _hand_secrets() -> list[tuple[str, str, str]]:
    rng = random.Random("e2e")
    wanted = (
        "lowercase password (yaml)",
        "yaml value on next line",
        "yaml block scalar",
        "mysql -p",
        "curl -u",
        "aws secret key in prose",
        "hex to *_KEY",
        "url user:password (https)",
        "pul- in prose",
        "EZAK in prose",
    )
    out = []
    for case in HAND_CASES:
        if case.name in wanted:
            document, secret = case.make(rng)
            out.append((case.name, document, secret))
    assert len(out) == len(wanted)
    return out


@pytest.fixture(scope="module")
def planted() -> dict[str, object]:
    vendor = _vendor_tokens(30)
    assert len(vendor) >= 20
    keys = dict(real_private_keys(("openssh-rsa-4096", "gcp-service-account-json")))
    return {"vendor": vendor, "hand": _hand_secrets(), "keys": keys}


def _secret_block(planted: dict[str, object], part: int, parts: int) -> str:
    """A markdown section holding every ``parts``-th planted secret, starting at ``part``."""
    vendor = planted["vendor"]
    hand = planted["hand"]
    assert isinstance(vendor, list) and isinstance(hand, list)
    lines = ["## Credentials pasted by mistake", ""]
    lines += [f"- {token} (from the vendor's docs)" for _, token, _ in vendor[part::parts]]
    lines += [""] + [document for _, document, _ in hand[part::parts]]
    return "\n".join(lines) + "\n"


def _values(planted: dict[str, object]) -> list[str]:
    vendor = planted["vendor"]
    hand = planted["hand"]
    keys = planted["keys"]
    assert isinstance(vendor, list) and isinstance(hand, list) and isinstance(keys, dict)
    values = [secret for _, _, secret in vendor] + [secret for _, _, secret in hand]
    for key in keys.values():
        values += key_lines(key)
    return values


def _run(vault: Path, *args: str) -> str:
    """``signaldesk --vault V -vv <args>`` in a subprocess, as a person runs it: its logs."""
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "signaldesk", "--vault", str(vault), "-vv", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, (args, proc.stderr[-3000:])
    return proc.stdout + proc.stderr


@pytest.fixture
def server() -> Iterator[FeedServer]:
    with FeedServer() as s:
        yield s


def _generated_notes(vault: Path, clipped: str) -> list[Path]:
    """Notes signaldesk wrote itself: signal notes (not the clipping it moved), daily notes."""
    signals = [p for p in sorted((vault / "05-signals").rglob("*.md")) if p.name != clipped]
    return signals + sorted((vault / "06-daily").glob("*.md"))


async def _mcp_answers(vault: Path, probes: list[str], paths: list[str], refused: str) -> str:
    """Every answer of every tool, for topic queries, secret fragments and the notes."""
    embedder = LazyEmbedder(IndexSettings())
    retriever = await Retriever.open(vault, IndexSettings(), SearchSettings(), embedder)
    answers: list[str] = []
    try:
        server = build_server(retriever, vault=vault, settings=McpSettings())
        async with Client(server) as client:
            calls: list[tuple[str, dict[str, object]]] = [
                ("list_notes", {"limit": 100}),
                ("recent_signals", {}),
                ("latest_report", {}),
                ("index_status", {}),
            ]
            for probe in probes:
                calls += [
                    ("search", {"query": probe, "limit": 10, "max_tokens": 8000}),
                    ("get_context", {"topic": probe, "max_tokens": 8000}),
                ]
            calls += [("read_note", {"path": path}) for path in paths]
            # A refused path that carries a secret: the answer and the log line.
            calls.append(("read_note", {"path": refused}))
            for name, args in calls:
                result = await client.call_tool(name, args)
                answers.append(json.dumps(result.model_dump(mode="json"), ensure_ascii=False))
    finally:
        await retriever.aclose()
    return "\n".join(answers)


def _leaks(values: list[str], text: str, sent: tuple[str, ...] = ()) -> list[str]:
    """The planted values found in ``text`` (first characters only, for the message).

    Rule names are taken out first: a log line says "redacted aws-amazon-bedrock-api-key-
    short-lived=1", and that rule's tokens start with "bedrock-api-key-". So is what the
    client itself sent (a query made of a secret's first characters, echoed back).
    """
    for name in sorted(PATTERN_NAMES, key=len, reverse=True):
        text = text.replace(name, " ")
    for piece in sent:
        text = text.replace(piece, " ")
    return [value[:12] + "..." for value in values if leaked(value, text)]


async def test_no_planted_secret_leaves_what_a_person_wrote(
    vault: Path,
    server: FeedServer,
    planted: dict[str, object],
    caplog: pytest.LogCaptureFixture,
) -> None:
    (vault / "signaldesk.toml").write_text(CONFIG_TOML, encoding="utf-8")
    keys = planted["keys"]
    assert isinstance(keys, dict)
    parts = 5
    # 1. A note a person wrote, with a private key longer than a chunk.
    note = vault / "03-resources" / "ops-runbook.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(
        "---\ntitle: Ops runbook\ntags: [ops]\n---\n\n# Ops runbook\n\n"
        + HOWTO
        + "\n"
        + _secret_block(planted, 0, parts)
        + "\n## Deploy key\n\n```\n"
        + keys["openssh-rsa-4096"]
        + "```\n",
        encoding="utf-8",
    )
    # 2. A Web Clipper note.
    clipping(
        vault,
        "Leaky article.md",
        title="Profiling services in production",
        body=HOWTO.replace("py-spy", "austin") + "\n" + _secret_block(planted, 1, parts),
    )
    # 3. Tool output (a drop file), with the service-account JSON.
    drop = vault / "00-inbox" / "tool-output"
    drop.mkdir(parents=True, exist_ok=True)
    (drop / "agent-run.md").write_text(
        "# Debugging the profiler rollout\n\n"
        + HOWTO.replace("py-spy", "pyinstrument")
        + "\n"
        + _secret_block(planted, 2, parts)
        + "\n```json\n"
        + keys["gcp-service-account-json"]
        + "\n```\n",
        encoding="utf-8",
    )
    # 4. A newsletter.
    newsletter_eml(
        vault / "00-inbox" / "newsletters",
        "digest.eml",
        subject="Weekly: profiling Python services",
        view_online="https://news.example.org/view/42",
        body=HOWTO.replace("py-spy", "scalene") + "\n\n" + _secret_block(planted, 3, parts),
    )
    # 5. A feed entry whose article carries secrets.
    article = ADVISORY.format(n=8) + "\n\n" + _secret_block(planted, 4, parts)
    link = server.url("/advisory")
    server.route("/advisory", Reply(body=article_html("OpenSSH 8.9p2", article)))
    published = datetime(2026, 11, 20, tzinfo=UTC)
    title = "OpenSSH 8.9p2 fixes CVE-2026-8234"
    entries = [Entry("urn:e2e:leaky", title, link, article, published)]
    server.route(
        "/feed.xml",
        Reply(
            body=rss_document("Leaky feed", server.url("/"), entries),
            content_type="application/rss+xml",
        ),
    )

    logs = _run(vault, "feeds", "add", server.url("/feed.xml"))
    logs += _run(vault, "scan")
    logs += _run(vault, "triage")
    logs += _run(vault, "index")
    logs += _run(vault, "report")
    state = vault / ".signaldesk"
    values = _values(planted)
    assert len(values) > 80

    # The pipeline did file notes from each source kind (else the checks prove little).
    generated = _generated_notes(vault, "Leaky article.md")
    kinds = {
        parse_note(p.read_text(encoding="utf-8")).frontmatter.get("source_kind") for p in generated
    }
    assert {"rss", "newsletter", "tool_output"} <= kinds, [p.name for p in generated]

    findings: dict[str, list[str]] = {}
    for path in sorted(state.glob("index.db*")) + sorted(state.glob("ledger.db*")):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", errors="replace")
            findings[path.name] = _leaks(values, text)
    for path in generated:
        findings[str(path.relative_to(vault))] = _leaks(values, path.read_text(encoding="utf-8"))
    findings["-vv logs"] = _leaks(values, logs)

    vendor = planted["vendor"]
    assert isinstance(vendor, list)
    probes = ["profiling flame graph", "credentials pasted by mistake", "deploy key"]
    fragments = tuple(secret[:24] for _, _, secret in vendor[:6])
    rng = random.Random(3)
    token = "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    refused = f"../../home/me/.config/{token}.md"
    values.append(token)
    with caplog.at_level(logging.DEBUG):
        answers = await _mcp_answers(
            vault, [*probes, *fragments], ["03-resources/ops-runbook.md"], refused
        )
    findings["MCP answers"] = _leaks(values, answers, fragments)
    server_log = "\n".join(r.getMessage() for r in caplog.records)
    findings["MCP server log"] = _leaks(values, server_log, fragments)
    assert "path refused" in server_log

    leaks = {where: found for where, found in findings.items() if found}
    assert leaks == {}, json.dumps(leaks, indent=1)
    # A person's own notes are left as they wrote them.
    assert keys["openssh-rsa-4096"] in note.read_text(encoding="utf-8")
