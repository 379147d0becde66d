"""`signaldesk triage` and `signaldesk score` through the real CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner, Result

from signaldesk.pipeline.cli import cli
from signaldesk.pipeline.triage.score_input import ScoreInputError
from tests.feedserver import FeedServer, Reply
from tests.intake_data import article_html, newsletter_eml
from tests.triage_data import (
    ADVISORY,
    CONFIG_TOML,
    HOWTO,
    advisory_item,
    clipping,
    pend,
    snapshot,
    thin_item,
    workspace,
)

_WIDE = {"COLUMNS": "250"}  # rich folds long paths in a narrow terminal


@pytest.fixture
def vault(vault: Path) -> Path:
    (vault / "signaldesk.toml").write_text(CONFIG_TOML, encoding="utf-8")
    return vault


@pytest.fixture
def server() -> Iterator[FeedServer]:
    with FeedServer() as s:
        yield s


def _run(vault: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args], env=_WIDE)


def _ok(vault: Path, *args: str) -> Result:
    result = _run(vault, *args)
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def _pending(vault: Path) -> list[str]:
    return anyio.run(pend, workspace(vault), [advisory_item(1), thin_item(1)])


def test_dry_run_says_what_would_happen_and_writes_nothing(vault: Path) -> None:
    _pending(vault)
    clipping(vault, "clip.md", title="OpenSSH 2.9p2", body=ADVISORY.format(n=2))
    before = snapshot(vault)
    table = _ok(vault, "triage", "--dry-run").stdout
    assert "Dry run (nothing written)" in table
    assert "would file" in table and "would move" in table and "would not file" in table
    assert "05-signals/security/clip.md" in table
    report = json.loads(_ok(vault, "triage", "--dry-run", "--json").stdout)
    assert report["dry_run"] and report["filed"] == 2 and report["rejected"] == 1
    assert snapshot(vault) == before


def test_triage_files_then_has_nothing_left(vault: Path) -> None:
    good, _ = _pending(vault)
    report = json.loads(_ok(vault, "triage", "--json").stdout)
    assert report["filed"] == 1 and report["rejected"] == 1
    (note,) = report["written"]
    assert (vault / note).is_file() and report["indexed"]["added"] == 1
    assert "nothing to triage" in _ok(vault, "triage").stdout

    table = _ok(vault, "triage", "--rescore", "--item", good[:12]).stdout
    assert "unchanged" in table and note in table
    items = json.loads(_ok(vault, "items", "--json", "--status", "filed").stdout)
    assert [(i["id"], i["note_path"]) for i in items] == [(good, note)]


def test_score_names_only_candidates_with_evidence(vault: Path, tmp_path: Path) -> None:
    path = tmp_path / "logging.md"
    text = "Python asyncio tasks, exceptions and the standard library's logging module.\n"
    path.write_text("---\ntitle: Python logging\n---\n\n" + text, encoding="utf-8")
    out = _ok(vault, "score", str(path)).stdout
    (candidates,) = [line for line in out.splitlines() if line.startswith("candidates:")]
    assert candidates.startswith("candidates: programming ")
    assert " 0.00" not in candidates  # a domain the rules found nothing for is no candidate


def test_score_a_markdown_file_explains_every_dimension(vault: Path, tmp_path: Path) -> None:
    path = tmp_path / "howto.md"
    path.write_text("---\ntitle: Profiling with py-spy\n---\n\n" + HOWTO, encoding="utf-8")
    out = _ok(vault, "score", str(path), "--explain").stdout
    for word in ("relevance", "actionability", "depth", "authority", "composite", "threshold"):
        assert word in out
    assert "route: " in out
    assert "candidates:" in out and "words=" in out  # --explain shows the features

    data = json.loads(_ok(vault, "score", str(path), "--json").stdout)
    assert data["item"]["title"] == "Profiling with py-spy"
    assert set(data) >= {"relevance", "actionability", "depth", "authority", "composite", "route"}
    assert data["threshold"] == 0.4 and data["passed"] == (data["composite"] > 0.4)
    assert data["depth"]["features"]["words"] > 100
    assert data["route"]["candidates"][0][0] == data["route"]["domain"]


def test_score_writes_nothing(vault: Path, tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_text(ADVISORY.format(n=1), encoding="utf-8")
    before = snapshot(vault)
    _ok(vault, "score", str(path))
    assert snapshot(vault) == before


def test_score_an_eml_and_a_url(vault: Path, tmp_path: Path, server: FeedServer) -> None:
    mail = newsletter_eml(
        tmp_path,
        "n.eml",
        subject="Weekly: OpenSSH fix",
        view_online="https://x.test/v",
        body=ADVISORY.format(n=3),
    )
    data = json.loads(_ok(vault, "score", str(mail), "--json").stdout)
    assert (
        data["item"]["source_kind"] == "newsletter"
        and data["item"]["title"] == "Weekly: OpenSSH fix"
    )

    page = article_html("OpenSSH 4.9p2 fixes CVE-2026-4234", ADVISORY.format(n=4))
    server.route("/advisory", Reply(body=page, content_type="text/html; charset=utf-8"))
    data = json.loads(_ok(vault, "score", server.url("/advisory"), "--json").stdout)
    assert data["item"]["title"] == "OpenSSH 4.9p2 fixes CVE-2026-4234"
    assert data["route"]["domain"] == "security" and data["passed"]
    assert server.requests_for("/advisory")


def test_score_of_a_url_that_cannot_be_fetched_names_it(vault: Path, server: FeedServer) -> None:
    import socket

    server.route("/gone", Reply(status=404, body=b"no", content_type="text/html"))
    with socket.socket() as sock:  # a port nothing listens on once this closes
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/page"
    for url in (server.url("/gone"), closed):
        result = _run(vault, "score", url)
        assert result.exit_code != 0 and isinstance(result.exception, ScoreInputError)
        # The fetch's own message ("connection refused: All connection attempts
        # failed") named no address; the person is told which one, and what to try.
        assert result.exception.message.count(url) == 1
        assert result.exception.hint


def test_score_of_a_missing_file_is_a_clear_error(vault: Path, tmp_path: Path) -> None:
    result = _run(vault, "score", str(tmp_path / "nope.md"))
    assert result.exit_code != 0 and isinstance(result.exception, ScoreInputError)
    assert result.exception.hint and "URL" in result.exception.hint
