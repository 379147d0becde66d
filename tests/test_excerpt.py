"""What a result and a context block show of a chunk: comments and badges left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from signaldesk.pipeline.cli import main
from signaldesk.pipeline.config import resolve_workspace
from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.retrieval.excerpt import shown_excerpt
from signaldesk.retrieval.indexer import Indexer

# The shape of every plugin note of the Obsidian Hub vault (shortened URLs).
HUB_PLUGIN_NOTE = """---
plugin-id: task-list-kanban
aliases:
- Task List Kanban
publish: true
---

%% ----- Badges ----- %%

![GitHub all releases](https://img.shields.io/github/downloads/chrskerr/tlk/total?style=for-the-badge)   
![GitHub Repo stars](https://img.shields.io/github/stars/chrskerr/tlk?style=for-the-badge)
[![Sponsor](https://img.shields.io/badge/sponsor-chrskerr-red)](https://github.com/sponsors/chrskerr)

%% ----- Badges ----- %%

%% ----- Do not edit this section ----- %%

# Task List Kanban

Plugin ID: `task-list-kanban`
Developed by: [[chrskerr]]

Organizes all of the tasks within your files into a kanban view.
![board screenshot](https://example.org/board.png)

%% Does the repository have sponsoring links? #placeholder/author %%
%% ![[chrskerr#Sponsor this author]] %%
<!-- template footer -->
"""


def test_comments_and_badges_are_left_out_and_code_is_kept() -> None:
    text = (
        "%% hidden %%\n\n"
        "Write `%%comment%%` to hide text; inline %%a note%% too.\n\n"
        "```\n%% in a fence %%\n```\n"
        "![build](https://github.com/o/r/workflows/ci/badge.svg) ![cat](cat.png)\n"
        "<!-- left\nby a template -->\n\n\n\nend %% unclosed comment\nruns to the end"
    )
    shown, skipped = shown_excerpt(text)
    assert skipped == 2  # the comment line and the blank line after it
    assert shown == (
        "Write `%%comment%%` to hide text; inline  too.\n\n"
        "```\n%% in a fence %%\n```\n"
        " ![cat](cat.png)\n\n"
        "end"
    )


def test_plain_text_is_unchanged() -> None:
    text = "# Heading\n\nA [link](https://example.org) and ![a chart](chart.png).\n\n- item"
    assert shown_excerpt("\n\n" + text + "\n") == (text, 2)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    try:
        main(list(args))
    except SystemExit as exc:
        assert not exc.code
    return capsys.readouterr().out


def test_search_and_context_show_the_note_not_its_comments_or_badges(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    note = vault / "Plugins" / "task-list-kanban.md"
    note.parent.mkdir(parents=True)
    note.write_text(HUB_PLUGIN_NOTE, encoding="utf-8")
    workspace = resolve_workspace(vault, None)
    Indexer(vault, workspace.config.index, LazyEmbedder(workspace.config.index)).run_sync()

    payload = json.loads(
        _run(capsys, "--vault", str(vault), "search", "kanban view of my tasks", "--json")
    )
    (result,) = payload["results"]
    text = result["text"]
    assert text.startswith("# Task List Kanban\n\nPlugin ID: `task-list-kanban`")
    assert "Organizes all of the tasks" in text and "![board screenshot]" in text
    assert "%%" not in text and "shields.io" not in text and "<!--" not in text
    # The line number points at what is shown: the heading, line 18 of the file.
    lines = HUB_PLUGIN_NOTE.splitlines()
    assert lines[result["start_line"] - 1] == "# Task List Kanban"

    block = _run(capsys, "--vault", str(vault), "context", "kanban view of my tasks")
    assert "Organizes all of the tasks within your files into a kanban view." in block
    assert "%%" not in block and "shields.io" not in block
    # A wiki-link inside a comment is not followed: it is not in the note as it reads.
    assert "linked from" not in block
