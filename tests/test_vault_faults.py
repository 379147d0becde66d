"""Faults in the vault itself: a folder that cannot be read is not a deletion, an
`.indexignore` that is not a regular file is refused (never waited on), a running MCP
server follows edits of `.indexignore`, and a refused link among the triage reports
does not hide the real ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp_types import CallToolResult
from mcp_vault import build_vault, index_vault
from unprivileged import can_drop_privileges, hand_over, run_signaldesk, user_folder

from signaldesk.mcp_server import McpSettings, build_server
from signaldesk.mcp_server.models import ReportOutput
from signaldesk.mcp_server.results import error_info
from signaldesk.pipeline.vault_setup import init_vault
from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.retrieval.ignore import IndexIgnoreError, VaultFilter
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from tests.index_helpers import section, write_note

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.anyio


# -- an unreadable folder ---------------------------------------------------------------------


@pytest.mark.skipif(not can_drop_privileges(), reason="needs setpriv to drop root")
def test_an_unreadable_folder_keeps_its_notes_in_the_index() -> None:
    with user_folder() as root:
        vault = root / "vault"
        init_vault(vault)
        for i in range(40):
            write_note(vault, f"03-resources/locked/n{i:02d}.md", section("Topic", f"lock{i} x"))
        for i in range(10):
            write_note(vault, f"02-areas/open{i}.md", section("Topic", f"open{i} words"))
        hand_over(vault)
        first = run_signaldesk(vault, "index", "--json")
        assert first.returncode == 0, first.stderr
        locked = vault / "03-resources" / "locked"
        locked.chmod(0)
        try:
            again = run_signaldesk(vault, "index", "--json")
            assert again.returncode == 0, again.stderr
            report = json.loads(again.stdout)
            assert report["deleted"] == 0
            problems = [e for e in report["errors"] if "locked" in e]
            assert len(problems) == 1 and "40 indexed note(s) are kept" in problems[0]
            status = json.loads(run_signaldesk(vault, "index", "--status", "--json").stdout)
            assert status["notes"] == 50
            found = run_signaldesk(vault, "search", "lock7", "--mode", "bm25", "--json")
            assert found.returncode == 0, found.stderr
            paths = {r["path"] for r in json.loads(found.stdout)["results"]}
            assert "03-resources/locked/n07.md" in paths
            # The human output says it once, as one line.
            human = run_signaldesk(vault, "index")
            assert human.stdout.count("cannot be read") == 1, human.stdout + human.stderr
        finally:
            locked.chmod(0o755)
        # Readable again: nothing to redo.
        back = json.loads(run_signaldesk(vault, "index", "--json").stdout)
        assert back["added"] == back["deleted"] == 0 and back["unchanged"] == 50


# -- a name that is not UTF-8 -----------------------------------------------------------------


def test_a_note_or_folder_whose_name_is_not_utf8_is_one_problem_line_not_a_crash(
    vault: Path,
) -> None:
    # Copied from an old Windows or Latin-1 disk: bytes Python cannot decode. The whole
    # index run died on them with a UnicodeEncodeError traceback.
    write_note(vault, "02-areas/fine.md", section("Fine", "ordinary words"))
    root = os.fsencode(vault)
    with open(os.path.join(root, b"02-areas", b"caf\xe9.md"), "wb") as note:
        note.write(b"# Cafe\n\nlatin words\n")
    os.mkdir(os.path.join(root, b"old-\xff"))
    with open(os.path.join(root, b"old-\xff", b"inside.md"), "wb") as note:
        note.write(b"# Inside\n\nhidden words\n")
    done = subprocess.run(
        [sys.executable, "-m", "signaldesk", "--vault", str(vault), "index", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    problems = sorted(e for e in report["errors"] if "not valid UTF-8" in e)
    assert problems == [
        "02-areas/caf\ufffd.md: file cannot be read (its name is not valid UTF-8: rename it)",
        "old-\ufffd/: folder cannot be read (its name is not valid UTF-8: rename it)",
    ]
    search = ["search", "ordinary", "--mode", "bm25", "--json"]
    found = subprocess.run(
        [sys.executable, "-m", "signaldesk", "--vault", str(vault), *search],
        capture_output=True,
        text=True,
        check=True,
    )
    assert [r["path"] for r in json.loads(found.stdout)["results"]] == ["02-areas/fine.md"]


# -- .indexignore that is not a file --------------------------------------------------------------


def test_an_indexignore_fifo_is_refused_not_waited_on(vault: Path) -> None:
    write_note(vault, "02-areas/a.md", section("A", "alpha words"))
    (vault / ".indexignore").unlink(missing_ok=True)  # init writes one
    os.mkfifo(vault / ".indexignore")
    with pytest.raises(IndexIgnoreError, match="named pipe"):
        VaultFilter(vault)
    done = subprocess.run(
        [sys.executable, "-m", "signaldesk", "--vault", str(vault), "index"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 1
    assert "not a regular file" in done.stderr and "Traceback" not in done.stderr


def test_an_indexignore_folder_is_refused(vault: Path) -> None:
    (vault / ".indexignore").unlink(missing_ok=True)
    (vault / ".indexignore").mkdir()
    with pytest.raises(IndexIgnoreError, match="folder"):
        VaultFilter(vault)


# -- the MCP server follows .indexignore ----------------------------------------------------------


async def _read(client: Client, path: str) -> CallToolResult:
    result = await client.call_tool("read_note", {"path": path})
    assert isinstance(result, CallToolResult)
    return result


async def test_a_running_server_stops_serving_a_note_once_it_is_ignored(tmp_path: Path) -> None:
    vault = build_vault(tmp_path)
    index_vault(vault)
    note = "03-resources/sqlite-wal.md"
    retriever = await Retriever.open(
        vault, IndexSettings(), SearchSettings(), LazyEmbedder(IndexSettings())
    )
    try:
        server = build_server(retriever, vault=vault, settings=McpSettings())
        async with Client(server) as client:
            assert not (await _read(client, note)).is_error
            ignore = vault / ".indexignore"
            ignore.write_text(ignore.read_text() + f"\n{note}\n")
            refused = await _read(client, note)
            info = error_info(refused)
            assert refused.is_error and info is not None and ".indexignore" in info.message
            found = await client.call_tool("search", {"query": "sqlite wal checkpoint"})
            assert note not in json.dumps(found.model_dump(mode="json"))
            # Unreadable rules: fail closed, every path refused.
            ignore.unlink()
            os.mkfifo(ignore)
            assert (await _read(client, "03-resources/rust-ownership.md")).is_error
            ignore.unlink()
            assert not (await _read(client, note)).is_error
    finally:
        await retriever.aclose()


async def test_a_refused_link_among_the_reports_does_not_hide_the_newest_real_one(
    tmp_path: Path,
) -> None:
    vault = build_vault(tmp_path)
    outside = tmp_path / "elsewhere.md"
    outside.write_text("OUTSIDE-THE-VAULT report\n")
    (vault / "06-daily" / "2099-12-31-triage.md").symlink_to(outside)
    server = build_server(None, vault=vault, settings=McpSettings())
    async with Client(server) as client:
        result = await client.call_tool("latest_report", {})
    assert isinstance(result, CallToolResult) and not result.is_error, result
    report = ReportOutput.model_validate(result.structured_content)
    assert report.path == "06-daily/2026-11-29-triage.md"
    assert "OUTSIDE-THE-VAULT" not in report.text
