"""Which vault files are notes to index: .indexignore, fixed exclusions, links, pruning."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from signaldesk.frontmatter import parse_note
from signaldesk.retrieval.ignore import (
    IndexIgnoreError,
    LiveVaultFilter,
    VaultFilter,
    excluded_by_frontmatter,
    iter_vault_notes,
)


def _write(root: Path, rel: str, text: str = "# note\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _listed(vault: Path) -> list[str]:
    return sorted(rel for rel, _ in iter_vault_notes(vault, VaultFilter(vault)))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A vault with the SPEC folders, odd names and things that must stay out."""
    vault = tmp_path / "vault"
    for rel in [
        "00-inbox/idea.md",
        "01-projects/signaldesk/plan.md",
        "03-resources/Rust/Ownership & Borrowing.md",
        "05-signals/security/2024-05-01 CVE.md",
        "06-daily/2024-05-01.md",
        "README.MD",
        "🗂️ hub.md",
        "07-templates/daily.md",
        "08-attachments/notes-about-images.md",
        ".obsidian/plugins/x/README.md",
        ".trash/deleted.md",
        ".git/notes.md",
        ".signaldesk/cache.md",
        ".hidden-folder/secret.md",
        "03-resources/.private/inner.md",
        "02-areas/drawing.excalidraw.md",
        "02-areas/Board.Excalidraw.MD",
    ]:
        _write(vault, rel)
    _write(vault, "08-attachments/image.png", "png")
    _write(vault, "00-inbox/notes.txt", "txt")
    (vault / "00-inbox/folder.md").mkdir()  # a folder named like a note
    return vault


def test_default_exclusions(tree: Path) -> None:
    # Files of a folder come before its subfolders; the listing is stable.
    assert [rel for rel, _ in iter_vault_notes(tree, VaultFilter(tree))][:2] == [
        "README.MD",
        "🗂️ hub.md",
    ]
    assert _listed(tree) == [
        "00-inbox/idea.md",
        "01-projects/signaldesk/plan.md",
        "03-resources/Rust/Ownership & Borrowing.md",
        "05-signals/security/2024-05-01 CVE.md",
        "06-daily/2024-05-01.md",
        "README.MD",
        "🗂️ hub.md",
    ]


def test_stat_is_the_files_own(tree: Path) -> None:
    os.utime(tree / "00-inbox/idea.md", ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    stats = dict(iter_vault_notes(tree, VaultFilter(tree)))
    assert stats["00-inbox/idea.md"].st_mtime_ns == 1_700_000_000_000_000_000
    assert stats["00-inbox/idea.md"].st_size == len("# note\n")


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        (".obsidian/", True),
        (".obsidian/workspace.md", True),
        ("07-templates/daily.md", True),
        ("08-attachments/", True),
        (".signaldesk/index.md", True),
        ("deep/.git/x.md", True),
        ("notes/.hidden/x.md", True),
        ("00-inbox/idea.md", False),
        ("./00-inbox/idea.md", False),
        ("/00-inbox/idea.md", False),
        ("a/drawing.excalidraw.md", True),
        ("a\\windows\\style.md", False),
        ("", False),
    ],
)
def test_excluded_defaults(tmp_path: Path, rel: str, expected: bool) -> None:
    assert VaultFilter(tmp_path).excluded(rel) is expected


def test_indexignore_patterns(tree: Path) -> None:
    (tree / ".indexignore").write_text(
        "\ufeff# private things\n"
        "\n"
        "01-projects/\n"  # a folder, anywhere it is
        "*.secret.md\n"  # a glob on names
        "/README.MD\n"  # anchored at the vault root
        "drafts/*\n"  # a folder's contents ...
        "!drafts/keep.md\n"  # ... with one file brought back
        "archive/\n"  # a whole folder: nothing inside can come back
        "!archive/keep.md\n"
        "05-signals/**/2024-*.md\n",
        encoding="utf-8",
    )
    for rel in [
        "drafts/wip.md",
        "drafts/keep.md",
        "archive/old.md",
        "archive/keep.md",
        "00-inbox/api.secret.md",
        "nested/README.MD",
        "05-signals/security/2025-01-01 other.md",
    ]:
        _write(tree, rel)
    vault_filter = VaultFilter(tree)
    listed = sorted(rel for rel, _ in iter_vault_notes(tree, vault_filter))
    assert listed == [
        "00-inbox/idea.md",
        "03-resources/Rust/Ownership & Borrowing.md",
        "05-signals/security/2025-01-01 other.md",
        "06-daily/2024-05-01.md",
        "drafts/keep.md",
        "nested/README.MD",
        "🗂️ hub.md",
    ]
    # `excluded` agrees with the walk on every markdown file in the tree.
    every = [
        p.relative_to(tree).as_posix()
        for p in tree.rglob("*")
        if p.is_file() and p.suffix.lower() == ".md"
    ]
    assert sorted(r for r in every if not vault_filter.excluded(r)) == sorted(listed)
    assert vault_filter.excluded("archive/keep.md")  # git's rule: the folder is gone
    assert not vault_filter.excluded("drafts/keep.md")


def test_unreadable_indexignore_is_an_error(tmp_path: Path) -> None:
    (tmp_path / ".indexignore").mkdir()
    with pytest.raises(IndexIgnoreError) as info:
        VaultFilter(tmp_path)
    assert info.value.hint


def test_excluded_folders_are_never_entered(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / ".indexignore").write_text("big-export/\n", encoding="utf-8")
    for i in range(50):
        _write(tree, f"big-export/sub{i}/n.md")
    entered: list[str] = []
    real_scandir = os.scandir

    def spy(path: str) -> Iterator[os.DirEntry[str]]:
        entered.append(Path(path).relative_to(tree.resolve()).as_posix())
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", spy)
    listed = _listed(tree)
    assert "00-inbox/idea.md" in listed
    pruned = ("big-export", ".obsidian", ".git", ".trash", ".hidden-folder", "07-templates")
    assert not [p for p in entered if p.startswith(pruned) or "/." in p], entered
    assert "." in entered and "03-resources/Rust" in entered


def test_links_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _write(outside, "leak.md", "# private diary\n")
    _write(outside, "dir/other.md")
    vault = tmp_path / "vault"
    _write(vault, "real/note.md")
    _write(vault, "07-templates/tpl.md")
    (vault / "to-outside-dir").symlink_to(outside, target_is_directory=True)
    (vault / "leak.md").symlink_to(outside / "leak.md")
    (vault / "loop").symlink_to(vault, target_is_directory=True)
    (vault / "real/self").symlink_to(vault / "real", target_is_directory=True)
    (vault / "alias.md").symlink_to(vault / "real/note.md")
    (vault / "templates-link").symlink_to(vault / "07-templates", target_is_directory=True)
    (vault / "broken.md").symlink_to(vault / "missing.md")
    assert _listed(vault) == ["real/note.md"]


def test_vault_given_through_a_link(tmp_path: Path) -> None:
    _write(tmp_path / "actual", "a.md")
    (tmp_path / "link").symlink_to(tmp_path / "actual", target_is_directory=True)
    assert _listed(tmp_path / "link") == ["a.md"]


def test_hidden_vault_root_is_walked(tmp_path: Path) -> None:
    vault = tmp_path / ".notes"
    _write(vault, "a.md")
    assert _listed(vault) == ["a.md"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a folder without permission")
def test_unreadable_folder_is_logged_and_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vault = tmp_path / "vault"
    _write(vault, "ok.md")
    _write(vault, "locked/n.md")
    (vault / "locked").chmod(0)
    try:
        with caplog.at_level(logging.WARNING, logger="signaldesk.retrieval.ignore"):
            assert _listed(vault) == ["ok.md"]
        assert "locked" in caplog.text
    finally:
        (vault / "locked").chmod(0o755)


def test_missing_vault_yields_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="signaldesk.retrieval.ignore"):
        assert _listed(tmp_path / "nope") == []
    assert "nope" in caplog.text


EXCALIDRAW = """---

excalidraw-plugin: parsed
tags: [excalidraw]

---
==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠==

# Text Elements
Auth flow ^aB3dE9fG

%%
# Drawing
```json
{"type":"excalidraw","version":2,"elements":[]}
```
%%
"""

KANBAN = """---

kanban-plugin: basic

---

## Todo

- [ ] Write the chunker

## Done

- [x] Read the spec

%% kanban:settings
```
{"kanban-plugin":"basic"}
```
%%
"""


def test_excluded_by_frontmatter() -> None:
    assert excluded_by_frontmatter(parse_note(EXCALIDRAW).frontmatter)
    assert excluded_by_frontmatter(parse_note(KANBAN).frontmatter)
    assert excluded_by_frontmatter({"Kanban-Plugin": "board"})
    assert not excluded_by_frontmatter({"title": "Kanban method", "tags": ["kanban-plugin"]})
    assert not excluded_by_frontmatter({})


def test_walking_one_folder(tmp_path: Path) -> None:
    for rel in ("a/one.md", "a/sub/two.md", "b/three.md", "private/four.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("# x\n")
    (tmp_path / ".indexignore").write_text("private/\n")
    os.symlink(tmp_path / "a", tmp_path / "linked")

    def listed(under: str, **kw: bool) -> list[str]:
        rules = VaultFilter(tmp_path, **kw)
        return [rel for rel, _ in iter_vault_notes(tmp_path, rules, under=under)]

    assert listed("a") == ["a/one.md", "a/sub/two.md"]
    assert listed("a/") == listed("a") and listed(".") == listed("")
    assert listed("private") == []  # excluded by .indexignore
    assert listed("private", with_indexignore=False) == ["private/four.md"]
    assert listed("linked") == [] and listed("a/../b") == [] and listed("missing") == []


def test_the_templates_folder_obsidian_is_set_to_is_not_indexed(tmp_path: Path) -> None:
    for rel in ("Templates/Meeting.md", "Notes/Meeting with Ana.md", "Meta/[T] tpl/Weekly.md"):
        _write(tmp_path, rel, "# {{title}}\n")
    _write(tmp_path, "Notes/Templates/kept.md")  # same name, another folder: a note
    assert len(_listed(tmp_path)) == 4
    # The core Templates plugin's setting, as Obsidian writes it.
    _write(tmp_path, ".obsidian/templates.json", '{\n  "folder": "Templates"\n}')
    # Templater's, with a leading slash and a name that would be a gitignore class.
    _write(
        tmp_path,
        ".obsidian/plugins/templater-obsidian/data.json",
        '{"command_timeout": 5, "templates_folder": "/Meta/[T] tpl/"}',
    )
    rules = VaultFilter(tmp_path)
    assert rules.template_folders == ("Templates", "Meta/[T] tpl")
    assert _listed(tmp_path) == ["Notes/Meeting with Ana.md", "Notes/Templates/kept.md"]
    assert rules.excluded("Templates/Meeting.md") and rules.excluded("templates/")
    assert not rules.excluded("Notes/Templates/kept.md")
    # The vault's own rule: also without .indexignore (the MCP server's listings).
    assert VaultFilter(tmp_path, with_indexignore=False).excluded("Meta/[T] tpl/Weekly.md")


@pytest.mark.parametrize(
    "setting", ['{"folder": "/"}', '{"folder": ""}', '{"folder": "../elsewhere"}', "not json", "[]"]
)
def test_a_templates_setting_never_hides_the_vault(tmp_path: Path, setting: str) -> None:
    _write(tmp_path, "Notes/a.md")
    _write(tmp_path, ".obsidian/templates.json", setting)
    assert VaultFilter(tmp_path).template_folders == ()
    assert _listed(tmp_path) == ["Notes/a.md"]


@pytest.mark.parametrize(
    ("setting", "value"),
    [("templates.json", '{"folder": "Templates"}'), ("app.json", '{"userIgnoreFilters": ["Tem"]}')],
)
def test_a_running_server_follows_a_new_obsidian_setting(
    tmp_path: Path, setting: str, value: str
) -> None:
    _write(tmp_path, "Templates/Daily.md")
    live = LiveVaultFilter(tmp_path)
    assert not live.excluded("Templates/Daily.md")
    _write(tmp_path, f".obsidian/{setting}", value)
    assert live.excluded("Templates/Daily.md")


def test_obsidians_excluded_files_stay_out_of_the_index(tmp_path: Path) -> None:
    for rel in (
        "Archive/2019.md",
        "Archive/old/deep.md",
        "Archives.md",
        "Inbox/old.md",
        "Inbox/older/c.md",
        "Inbox/new.md",
        "Notes/plan.draft.md",
        "Notes/plan.md",
    ):
        _write(tmp_path, rel)
    # As Obsidian writes it (Settings > Files and links > Excluded files), with entries
    # it would not honour either: not text, empty, leaving the vault, a broken expression.
    _write(
        tmp_path,
        ".obsidian/app.json",
        '{"alwaysUpdateLinks": true, "userIgnoreFilters": '
        '["Archive/", "Inbox/old", "/\\\\.draft\\\\.md$/", 42, "", "../Notes", "/[/"]}',
    )
    rules = VaultFilter(tmp_path)
    assert rules.obsidian_prefixes == ("Archive/", "Inbox/old")
    assert _listed(tmp_path) == ["Archives.md", "Inbox/new.md", "Notes/plan.md"]
    assert rules.excluded("Archive/") and rules.excluded("Inbox/older/c.md")
    assert not rules.excluded("Notes/")
    # A person's choice of what search shows: the listings of signaldesk's own notes
    # (without .indexignore) still see everything.
    assert not VaultFilter(tmp_path, with_indexignore=False).excluded("Archive/2019.md")


@pytest.mark.parametrize("settings", ["not json", "[]", '{"userIgnoreFilters": "Archive/"}'])
def test_a_malformed_app_json_excludes_nothing(tmp_path: Path, settings: str) -> None:
    _write(tmp_path, "Archive/2019.md")
    _write(tmp_path, ".obsidian/app.json", settings)
    assert _listed(tmp_path) == ["Archive/2019.md"]
