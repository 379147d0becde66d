"""The search settings snapshot (pipeline/config_snapshot.py): what a one-shot search
reads instead of validating the config, and that it never stands in for a config that
changed, cannot be read or is invalid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from signaldesk.pipeline.cli import _is_one_shot, main
from signaldesk.pipeline.config import ConfigError, resolve_workspace
from signaldesk.pipeline.config_snapshot import (
    SNAPSHOT_NAME,
    SettingsView,
    read_snapshot,
    write_snapshot,
)
from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.vault import STATE_DIR

NOTES = {
    f"03-resources/lighthouse-{i}.md": f"# Lighthouse {i}\n\nThe lighthouse keeper {i} "
    "trims the lamp wick at dusk.\n"
    for i in range(6)
}

CONFIG = """[search]
limit = 4
note_weight = 2
column_weights = [1.0, 0.25, 0.5]
recency_weight = 0.1

[index]
chunk_max_chars = 900
"""


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def configured(vault: Path) -> Path:
    """An indexed vault with a config of non-default values; the config file's path."""
    for rel, text in NOTES.items():
        (vault / rel).write_text(text, encoding="utf-8")
    config = vault / "signaldesk.toml"
    config.write_text(CONFIG, encoding="utf-8")
    workspace = resolve_workspace(vault, None)
    Indexer(vault, workspace.config.index, LazyEmbedder(workspace.config.index)).run_sync()
    return config


def _snapshot(vault: Path) -> Path:
    return vault / STATE_DIR / SNAPSHOT_NAME


def test_the_snapshot_reads_back_every_validated_value(vault: Path, configured: Path) -> None:
    workspace = resolve_workspace(vault, None)
    assert read_snapshot(vault, None) is None
    write_snapshot(workspace)
    saved = read_snapshot(vault, None)
    assert saved is not None and saved.vault == workspace.vault
    for model, view in (
        (workspace.config.index, saved.index),
        (workspace.config.search, saved.search),
    ):
        assert isinstance(view, SettingsView)
        for name in type(model).model_fields:
            assert getattr(view, name) == getattr(model, name), name
            assert type(getattr(view, name)) is type(getattr(model, name)), name
    # The validated values, not the file's: the integer 2 became the float 2.0.
    assert saved.search.note_weight == 2.0 and isinstance(saved.search.note_weight, float)
    assert saved.search.limit == 4 and saved.index.chunk_max_chars == 900
    with pytest.raises(AttributeError):
        saved.search.limit = 5  # type: ignore[misc]


def test_a_changed_config_or_another_config_is_never_answered_from_it(
    vault: Path, configured: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_snapshot(resolve_workspace(vault, None))
    assert read_snapshot(vault, None) is not None
    other = tmp_path / "other.toml"
    other.write_text(CONFIG, encoding="utf-8")
    assert read_snapshot(vault, other) is None  # the same text in another file
    monkeypatch.setenv("SIGNALDESK_CONFIG", str(other))
    assert read_snapshot(vault, None) is None
    monkeypatch.delenv("SIGNALDESK_CONFIG")
    configured.write_text(CONFIG.replace("limit = 4", "limit = 3"), encoding="utf-8")
    assert read_snapshot(vault, None) is None
    configured.unlink()
    assert read_snapshot(vault, None) is None  # now the defaults apply: not these


def test_a_search_uses_the_config_as_it_is_now(
    vault: Path, configured: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def count() -> int:
        code, out, err = _run(capsys, "--vault", str(vault), "search", "lighthouse", "--json")
        assert code == 0, err
        return len(json.loads(out)["results"])

    assert count() == 4  # the full load, which writes the snapshot
    assert _snapshot(vault).is_file()
    assert count() == 4  # from the snapshot
    configured.write_text(CONFIG.replace("limit = 4", "limit = 2"), encoding="utf-8")
    assert count() == 2
    assert read_snapshot(vault, None) is not None  # written again for the new file


def test_an_invalid_config_is_reported_as_without_a_snapshot(
    vault: Path, configured: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--vault", str(vault), "search", "lighthouse", "--json")
    assert _run(capsys, *args)[0] == 0
    assert _snapshot(vault).is_file()
    # Same size as before, so only the modification time tells the files apart.
    configured.write_text(CONFIG.replace("limit = 4", "limit = 0"), encoding="utf-8")
    with_snapshot = _run(capsys, *args)
    _snapshot(vault).unlink()
    without = _run(capsys, *args)
    assert with_snapshot == without
    code, out, err = with_snapshot
    assert code == 1 and out == ""
    assert "invalid setting(s)" in err and "search.limit" in err
    with pytest.raises(ConfigError):
        resolve_workspace(vault, None)


@pytest.mark.parametrize(
    "content", [b"", b"not json", b"[]", b'{"key": {}, "index": {}, "search": {}}']
)
def test_a_damaged_or_foreign_snapshot_is_ignored(
    vault: Path, configured: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    _snapshot(vault).write_bytes(content)
    assert read_snapshot(vault, None) is None
    code, out, err = _run(capsys, "--vault", str(vault), "search", "lighthouse", "--json")
    assert code == 0 and len(json.loads(out)["results"]) == 4, err
    assert read_snapshot(vault, None) is not None  # replaced by a good one


def test_a_snapshot_that_cannot_be_written_never_stops_a_search(
    vault: Path, configured: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _snapshot(vault).mkdir()  # neither readable nor replaceable as a file
    for _ in range(2):
        code, out, err = _run(capsys, "--vault", str(vault), "search", "lighthouse", "--json")
        assert code == 0 and len(json.loads(out)["results"]) == 4, err
    assert _snapshot(vault).is_dir()


def test_no_snapshot_for_the_team_backend_or_a_vault_never_indexed(
    vault: Path, tmp_path: Path
) -> None:
    (vault / "signaldesk.toml").write_text('[index]\nbackend = "postgres"\n', encoding="utf-8")
    write_snapshot(resolve_workspace(vault, None))
    assert not _snapshot(vault).exists()
    bare = tmp_path / "bare"
    bare.mkdir()
    write_snapshot(resolve_workspace(bare, None))
    assert not (bare / STATE_DIR).exists()  # the vault is not ours to fill


def test_index_writes_the_snapshot(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (vault / "03-resources/a.md").write_text("# A\n\nlighthouse\n", encoding="utf-8")
    code, _, err = _run(capsys, "--vault", str(vault), "index", "--json")
    assert code == 0, err
    saved = read_snapshot(vault, None)
    assert saved is not None
    assert saved.search == SettingsView(SearchSettings().model_dump(mode="json"))
    assert saved.index == SettingsView(IndexSettings().model_dump(mode="json"))


@pytest.mark.parametrize(
    ("args", "one_shot"),
    [
        (["search", "x", "--json"], True),
        (["--vault", "v", "-v", "context", "x"], True),
        (["--vault", "search", "index"], False),  # a vault folder named "search"
        (["--config", "c.toml", "search", "x"], True),
        (["search", "--batch", "q.jsonl"], False),
        (["search", "--batch=q.jsonl"], False),
        (["index"], False),
        (["serve"], False),
        (["--help"], False),
    ],
)
def test_which_command_lines_are_one_shot_searches(args: list[str], one_shot: bool) -> None:
    assert _is_one_shot(args) is one_shot
