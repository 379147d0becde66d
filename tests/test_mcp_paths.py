"""Path confinement: every client path stays inside the vault and out of excluded places."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_vault import build_vault, traversal_variants

from signaldesk.mcp_server.errors import NoteNotFoundError, PathRefusedError
from signaldesk.mcp_server.paths import check_relative_path, normalise_folder, resolve_note_path
from signaldesk.retrieval.ignore import VaultFilter


@pytest.fixture(scope="module")
def test_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_vault(tmp_path_factory.mktemp("paths"))


def _variants() -> list[str]:
    # The absolute-path variant needs the vault; a placeholder stands in for the id.
    return traversal_variants(Path("/placeholder-vault"))


def test_there_are_at_least_25_variants() -> None:
    assert len(_variants()) >= 25


@pytest.mark.parametrize("raw", _variants(), ids=repr)
def test_traversal_and_exclusion_variants_are_refused(test_vault: Path, raw: str) -> None:
    raw = raw.replace("/placeholder-vault", str(test_vault))
    with pytest.raises(PathRefusedError) as info:
        resolve_note_path(test_vault, raw, excluded=VaultFilter(test_vault).excluded)
    assert info.value.hint and "vault-relative" in info.value.hint


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("03-resources/sqlite-wal.md", "03-resources/sqlite-wal.md"),
        ("./03-resources/sqlite-wal.md", "03-resources/sqlite-wal.md"),
        ("03-resources//sqlite-wal.md", "03-resources/sqlite-wal.md"),
        ("00-inbox/100% done.md", "00-inbox/100% done.md"),
    ],
)
def test_plain_paths_resolve(test_vault: Path, raw: str, expected: str) -> None:
    note = resolve_note_path(test_vault, raw, excluded=VaultFilter(test_vault).excluded)
    assert note.relative == expected
    assert note.absolute.is_file()
    assert note.absolute.is_relative_to(test_vault.resolve())


def test_symlink_inside_the_vault_to_a_note_is_allowed(test_vault: Path) -> None:
    note = resolve_note_path(test_vault, "03-resources/alias-of-sqlite.md")
    assert note.relative == "03-resources/alias-of-sqlite.md"
    assert note.absolute == (test_vault / "03-resources" / "sqlite-wal.md").resolve()


def test_missing_note_is_not_found_not_refused(test_vault: Path) -> None:
    with pytest.raises(NoteNotFoundError) as info:
        resolve_note_path(test_vault, "03-resources/no-such-note.md")
    assert "search" in (info.value.hint or "")


def test_oversized_note_is_refused(test_vault: Path) -> None:
    with pytest.raises(PathRefusedError, match="larger than"):
        resolve_note_path(test_vault, "04-archive/long-note.md", max_bytes=1024)


def test_indexignore_predicate_is_applied(test_vault: Path) -> None:
    # Without the predicate, private/ is an ordinary folder ...
    assert resolve_note_path(test_vault, "private/diary.md").relative == "private/diary.md"
    # ... with it, the .indexignore rule refuses it.
    with pytest.raises(PathRefusedError, match="excluded"):
        resolve_note_path(test_vault, "private/diary.md", excluded=lambda rel: True)


def test_folder_filters_are_checked_too() -> None:
    assert normalise_folder("05-signals/security/") == "05-signals/security"
    assert normalise_folder("") is None
    assert normalise_folder("/") is None
    for bad in ("../x", "/etc", "%2e%2e", ".obsidian", "a\\b"):
        with pytest.raises(PathRefusedError):
            normalise_folder(bad)


def test_shape_check_keeps_unicode_names() -> None:
    assert check_relative_path("03-resources/café notes.md") == "03-resources/café notes.md"
    assert check_relative_path("03-resources/中文笔记.md") == "03-resources/中文笔记.md"
