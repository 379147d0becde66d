"""Files keep their permissions: new files follow the umask, rewritten and moved files
keep the mode they had."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from signaldesk.pipeline.config import Config, Workspace
from signaldesk.pipeline.triage.run import scan_and_triage, triage
from signaldesk.scoring.settings import ScoringSettings
from signaldesk.vault import atomic_write_text, new_file_mode, write_new_file
from tests.intake_data import article_text, clipping_note


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask() -> Iterator[object]:
    """Set the umask for the test; the previous one comes back after it."""
    previous = os.umask(0o022)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    yield set_mask
    os.umask(previous)


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_new_files_follow_the_umask(
    tmp_path: Path, umask: object, mask: int, expected: int
) -> None:
    umask(mask)  # type: ignore[operator]
    assert new_file_mode() == expected
    atomic_write_text(tmp_path / "a.md", "# a\n")
    assert _mode(tmp_path / "a.md") == expected
    written = write_new_file(tmp_path, "b", ".md", b"# b\n")
    assert _mode(written) == expected


def test_a_rewritten_file_keeps_its_mode(tmp_path: Path, umask: object) -> None:
    umask(0o022)  # type: ignore[operator]
    path = tmp_path / "report.md"
    path.write_text("old\n", encoding="utf-8")
    path.chmod(0o640)
    atomic_write_text(path, "new\n")
    assert path.read_text(encoding="utf-8") == "new\n" and _mode(path) == 0o640


@pytest.mark.anyio
async def test_filed_notes_follow_the_umask_and_a_moved_clipping_keeps_its_mode(
    vault: Path, umask: object
) -> None:
    clip = clipping_note(
        vault / "Clippings",
        "kept-mode.md",
        title="A clipped article about SQLite write-ahead logs",
        source="https://example.org/wal",
        body=article_text(5),
    )
    clip.chmod(0o644)
    umask(0o077)  # type: ignore[operator]
    workspace = Workspace(
        vault=vault, config=Config(scoring=ScoringSettings(threshold=0.0)), config_path=None
    )
    report = await triage(workspace, embedder=None)
    [moved] = [d for d in report.decisions if d.outcome == "moved"]
    assert moved.note_path is not None and not clip.exists()
    assert _mode(vault / moved.note_path) == 0o644  # as it was, not the umask's 0600
    umask(0o002)  # type: ignore[operator]
    drop = vault / "00-inbox" / "tool-output"
    drop.mkdir(parents=True, exist_ok=True)
    (drop / "note.md").write_text("# Tool output\n\n" + article_text(6), encoding="utf-8")
    _, filed = await scan_and_triage(workspace, sources=["tool_output"], embedder=None)
    assert filed is not None
    [created] = [d for d in filed.decisions if d.outcome == "created"]
    assert created.note_path is not None
    assert _mode(vault / created.note_path) == 0o664
