"""Tool-output intake: .md/.txt/.json drops and the `capture` write path."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from pathlib import Path

import pytest

from signaldesk.sources.errors import SourceError
from signaldesk.sources.tool_output import DropResult, parse_drop, scan_drop_folder, write_capture

NOW = dt.datetime(2026, 11, 30, 7, 30, 5, tzinfo=dt.UTC)


def _scan(folder: Path, **kwargs: int) -> dict[str, DropResult]:
    return {r.path: r for r in scan_drop_folder(folder, **kwargs)}


def test_markdown_drop_with_frontmatter() -> None:
    data = (
        b"---\ntitle: Claude review of PR 42\nsource: https://github.com/o/r/pull/42?utm_source=x\n"
        b"tags: [review, '#ai-tooling']\ntool: claude-code\n---\n# Review\n\nLooks good.\n"
    )
    item = parse_drop("review.md", data)
    assert item.source_kind == "tool_output"
    assert item.title == "Claude review of PR 42"
    assert item.url == "https://github.com/o/r/pull/42"
    assert item.tags == ("review", "ai-tooling")
    assert item.extra["tool"] == "claude-code"
    assert item.text == "# Review\n\nLooks good."
    assert item.guid is not None and item.guid.startswith("tool:") and len(item.guid) == 5 + 64


def test_markdown_without_frontmatter_and_non_url_source() -> None:
    item = parse_drop("notes/run.md", b"# Benchmark run\n\n12 ms p50")
    assert item.title == "Benchmark run"
    assert item.url is None
    fallback = parse_drop("plain-name.md", b"no heading")
    assert fallback.title == "plain-name"
    local = parse_drop("x.md", b"---\nsource: ./local/file.txt\n---\nbody")
    assert local.url is None


def test_text_drop_title_is_first_line() -> None:
    item = parse_drop("out.txt", b"\n\n  pytest summary: 3 failed\nline two\n")
    assert item.title == "pytest summary: 3 failed"
    assert item.text.startswith("pytest summary")


def test_json_drop_with_metadata() -> None:
    doc = {
        "title": "Codex plan",
        "output": "1. read\n2. write",
        "source": "https://example.com/spec",
        "tags": ["plan"],
        "tool": "codex",
    }
    item = parse_drop("plan.json", json.dumps(doc).encode())
    assert (item.title, item.text, item.url, item.tags) == (
        "Codex plan",
        "1. read\n2. write",
        "https://example.com/spec",
        ("plan",),
    )
    assert item.extra["tool"] == "codex"


def test_any_json_is_pretty_printed_in_a_fence() -> None:
    item = parse_drop("metrics.json", b'[{"p50": 12, "name": "caf\\u00e9"}]')
    assert item.title == "metrics"
    assert item.text.startswith("```json\n[\n  {")
    assert '"name": "café"' in item.text
    assert item.text.endswith("\n```")
    nested = parse_drop("obj.json", b'{"title": "Obj", "text": {"not": "a string"}}')
    assert nested.title == "Obj"
    assert nested.text.startswith("```json")


def test_invalid_and_binary_drops_raise_source_error() -> None:
    with pytest.raises(SourceError, match="invalid JSON"):
        parse_drop("bad.json", b"{not json")
    with pytest.raises(SourceError, match="binary"):
        parse_drop("bin.txt", b"\x00\x01\x02" * 100)


def test_same_content_is_one_identity_whatever_the_file() -> None:
    a = parse_drop("a.md", b"---\ntitle: A\ncaptured: 2026-01-01\n---\nSame output\n")
    b = parse_drop("b.md", b"---\ntitle: B\ncaptured: 2026-02-01\n---\nSame output")
    c = parse_drop("c.txt", b"Same output\r\n")
    assert a.guid == b.guid == c.guid
    assert parse_drop("d.txt", b"Other output").guid != a.guid


def test_utf16_and_legacy_encodings_decode() -> None:
    assert parse_drop("u16.txt", "Ünïcode ✓".encode("utf-16")).title == "Ünïcode ✓"
    assert parse_drop("cp.txt", "Résumé de la sortie".encode("cp1252")).title == (
        "Résumé de la sortie"
    )


def test_scan_drop_folder_mixed_and_hostile(tmp_path: Path) -> None:
    folder = tmp_path / "drop"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nalpha", encoding="utf-8")
    (folder / "b.txt").write_text("B line\nbeta", encoding="utf-8")
    (folder / "c.json").write_text('{"title": "C", "text": "gamma"}', encoding="utf-8")
    (folder / "bad.json").write_text("{", encoding="utf-8")
    (folder / "image.png").write_bytes(b"\x89PNG\r\n")
    (folder / ".a.md.tmp").write_text("partial", encoding="utf-8")
    (folder / ".hidden.md").write_text("hidden", encoding="utf-8")
    (folder / "big.txt").write_bytes(b"y" * 5000)
    (folder / "sub dir").mkdir()
    (folder / "sub dir" / "näme with spaces.md").write_text("# Deep\n\nx", encoding="utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text("# secret", encoding="utf-8")
    (folder / "escape.md").symlink_to(outside)
    results = _scan(folder, max_bytes=4096)
    assert set(results) == {
        "a.md",
        "b.txt",
        "c.json",
        "bad.json",
        "big.txt",
        "sub dir/näme with spaces.md",
    }
    assert [results[k].item.title for k in ("a.md", "b.txt", "c.json")] == ["A", "B line", "C"]  # type: ignore[union-attr]
    assert results["bad.json"].item is None and "invalid JSON" in (results["bad.json"].error or "")
    assert results["big.txt"].item is None and "larger than" in (results["big.txt"].error or "")
    assert results["a.md"].fingerprint != results["b.txt"].fingerprint


def test_write_capture_then_scan_round_trip(tmp_path: Path) -> None:
    folder = tmp_path / "00-inbox" / "tool-output"
    path = write_capture(
        folder,
        "Some *model* output\n\nwith two paragraphs",
        title="Ünïcode: title / with slashes?",
        tags=["ai", "#llm"],
        source="https://example.com/x",
        now=NOW,
    )
    assert path.parent == folder
    assert path.name == "20261130-073005-unicode-title-with-slashes.md"
    assert sorted(p.name for p in folder.iterdir()) == [path.name]  # no temp file left
    (result,) = scan_drop_folder(folder)
    assert result.item is not None
    assert result.item.title == "Ünïcode: title / with slashes?"
    assert result.item.tags == ("ai", "llm")
    assert result.item.url == "https://example.com/x"
    assert result.item.text == "Some *model* output\n\nwith two paragraphs"
    assert result.item.extra["captured"].startswith("2026-11-30T07:30:05")


def test_write_capture_never_overwrites(tmp_path: Path) -> None:
    folder = tmp_path / "drop"
    first = write_capture(folder, "one", title="Same", now=NOW)
    second = write_capture(folder, "two", title="Same", now=NOW)
    third = write_capture(folder, "three", title="Same", now=NOW)
    assert [p.name for p in (first, second, third)] == [
        "20261130-073005-same.md",
        "20261130-073005-same-2.md",
        "20261130-073005-same-3.md",
    ]
    assert first.read_text(encoding="utf-8").rstrip().endswith("one")
    assert second.read_text(encoding="utf-8").rstrip().endswith("two")
    # A file a person made under the would-be name is left alone too.
    person = folder / "20261130-073005-mine.md"
    person.write_text("hand-written", encoding="utf-8")
    taken = write_capture(folder, "captured", title="Mine", now=NOW)
    assert taken.name == "20261130-073005-mine-2.md"
    assert person.read_text(encoding="utf-8") == "hand-written"


def test_concurrent_captures_get_distinct_files(tmp_path: Path) -> None:
    folder = tmp_path / "drop"
    paths: list[Path] = []
    lock = threading.Lock()

    def capture(n: int) -> None:
        path = write_capture(folder, f"output {n}", title="race", now=NOW)
        with lock:
            paths.append(path)

    threads = [threading.Thread(target=capture, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(set(paths)) == 8
    bodies = sorted(p.read_text(encoding="utf-8").rstrip().rsplit("\n", 1)[-1] for p in paths)
    assert bodies == sorted(f"output {n}" for n in range(8))
    assert not [n for n in os.listdir(folder) if n.endswith(".tmp")]


def test_write_capture_rejects_empty_text(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="empty"):
        write_capture(tmp_path, "   \n")
    assert list(tmp_path.iterdir()) == []


def test_default_title_from_first_line(tmp_path: Path) -> None:
    path = write_capture(tmp_path, "\n# Build log for main\nok", now=NOW)
    assert path.name == "20261130-073005-build-log-for-main.md"
