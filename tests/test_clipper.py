"""Web Clipper intake: real Web Clipper frontmatter, nesting, broken YAML, hostile files."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from signaldesk.sources.clipper import ClippingResult, clipping_to_item, scan_clippings
from signaldesk.sources.settings import ClipperSettings

# The shape the Obsidian Web Clipper's default template writes (quoted strings, wiki-link
# authors, a date-only `published`, `created` as the clip date, the `clippings` tag).
WEB_CLIPPER_NOTE = """---
title: "Rust 1.80: LazyCell, LazyLock and exclusive ranges"
source: "https://blog.example.org/2024/07/25/rust-1.80.html?utm_source=rss&utm_medium=feed&id=7"
author:
  - "[[Jane Doe]]"
  - "[[The Release Team|Release Team]]"
published: 2024-07-25
created: 2024-07-26
description: "LazyCell and LazyLock are stable, and ranges can exclude their start."
tags:
  - "clippings"
---
The Rust team is happy to announce a new version of Rust, 1.80.0.

## LazyCell and LazyLock

These "lazy" types delay the initialization of their data until first access.
"""


def _scan(vault: Path, folder: str = "Clippings") -> dict[str, ClippingResult]:
    return {r.path: r for r in scan_clippings(vault, ClipperSettings(folder=folder))}


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_web_clipper_frontmatter_becomes_item() -> None:
    item = clipping_to_item("Clippings/Rust 1.80.md", WEB_CLIPPER_NOTE)
    assert item.source_kind == "clipper"
    assert item.guid == "clipper:Clippings/Rust 1.80.md"
    assert item.origin_path == "Clippings/Rust 1.80.md"
    assert item.title == "Rust 1.80: LazyCell, LazyLock and exclusive ranges"
    # Tracking parameters stripped, the content-selecting one kept.
    assert item.url == "https://blog.example.org/2024/07/25/rust-1.80.html?id=7"
    assert item.author == "Jane Doe, The Release Team"
    assert item.published == dt.datetime(2024, 7, 25, tzinfo=dt.UTC)
    assert item.summary and item.summary.startswith("LazyCell and LazyLock are stable")
    assert item.tags == ("clippings",)
    assert item.text.startswith("The Rust team is happy")
    assert "## LazyCell and LazyLock" in item.text
    assert "---" not in item.text.splitlines()[0]
    assert item.extra["clipper_frontmatter"] is True
    assert item.extra["clipped_at"].startswith("2024-07-26")


def test_scan_finds_flat_and_site_nested_clippings(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    _write(vault / "Clippings" / "Rust 1.80.md", WEB_CLIPPER_NOTE)
    _write(
        vault / "Clippings" / "blog.example.org" / "Nested one.md",
        WEB_CLIPPER_NOTE.replace("Rust 1.80:", "Nested:"),
    )
    _write(vault / "00-inbox" / "elsewhere.md", WEB_CLIPPER_NOTE)  # outside the folder
    results = _scan(vault)
    assert set(results) == {"Clippings/Rust 1.80.md", "Clippings/blog.example.org/Nested one.md"}
    nested = results["Clippings/blog.example.org/Nested one.md"].item
    assert nested is not None
    assert nested.site_name == "blog.example.org"
    assert nested.title.startswith("Nested:")
    assert all(r.error is None and len(r.fingerprint) == 64 for r in results.values())


def test_scan_is_read_only_and_fingerprint_tracks_edits(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    note = _write(vault / "Clippings" / "a.md", WEB_CLIPPER_NOTE)
    before = (note.read_bytes(), note.stat().st_mtime_ns)
    first = _scan(vault)["Clippings/a.md"].fingerprint
    assert (note.read_bytes(), note.stat().st_mtime_ns) == before
    assert sorted(p.name for p in note.parent.iterdir()) == ["a.md"]  # nothing added
    assert _scan(vault)["Clippings/a.md"].fingerprint == first
    note.write_text(WEB_CLIPPER_NOTE + "\nMy own note on this.\n", encoding="utf-8")
    assert _scan(vault)["Clippings/a.md"].fingerprint != first


def test_broken_yaml_is_recovered_not_fatal() -> None:
    broken = """---
title: Broken: a title with a colon
source: https://example.com/post?fbclid=abc
author: [[Someone]]
tags: [clippings, unclosed
\tbad: indentation
---
Body survives.
"""
    item = clipping_to_item("Clippings/broken.md", broken)
    assert "frontmatter_error" in item.extra
    assert item.title == "Broken: a title with a colon"
    assert item.url == "https://example.com/post"
    assert item.author == "Someone"
    assert item.text == "Body survives."


def test_note_without_clipper_frontmatter_still_becomes_item() -> None:
    item = clipping_to_item("Clippings/Some page.md", "# Hand-made heading\n\nPasted text.\n")
    assert item.title == "Hand-made heading"
    assert item.url is None
    assert item.extra["clipper_frontmatter"] is False
    untitled = clipping_to_item("Clippings/Just a name.md", "no heading at all")
    assert untitled.title == "Just a name"
    other = clipping_to_item("Clippings/x.md", "---\ntitle: Mine\ntags: [reading]\n---\nText")
    assert other.extra["clipper_frontmatter"] is False
    assert other.title == "Mine"


@pytest.mark.parametrize(
    ("author", "expected"),
    [
        ('"[[A. Person]], [[B. Person]]"', "A. Person, B. Person"),
        ("Plain Name", "Plain Name"),
        ('\n  - "[[Ana|Ana M.]]"\n  - "Bob"', "Ana, Bob"),
        ("", None),
    ],
)
def test_author_forms(author: str, expected: str | None) -> None:
    item = clipping_to_item("Clippings/a.md", f"---\nauthor: {author}\ntags: [clippings]\n---\nx")
    assert item.author == expected


def test_published_with_time_and_zone() -> None:
    text = '---\npublished: "2024-05-30T12:00:00.000Z"\nsource: "https://e.com/a"\n---\nx'
    assert clipping_to_item("Clippings/a.md", text).published == dt.datetime(
        2024, 5, 30, 12, tzinfo=dt.UTC
    )


def test_hostile_files_give_errors_not_exceptions(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    folder = vault / "Clippings"
    _write(folder / "good.md", WEB_CLIPPER_NOTE)
    _write(folder / "junk.md", os.urandom(2048) + b"\x00" * 64)
    _write(folder / "huge.md", b"x" * 2_000)
    _write(folder / ".hidden.md", WEB_CLIPPER_NOTE)
    _write(folder / "partial.md.tmp", WEB_CLIPPER_NOTE)
    _write(folder / "latin1 café ✓.md", "# Café crème\n\nnaïve".encode("cp1252"))
    _write(folder / "bom.md", "\ufeff# With BOM\n\ntext".encode())
    outside = _write(tmp_path / "secret.md", "# secret outside the vault")
    (folder / "link.md").symlink_to(outside)
    results = {
        r.path: r
        for r in scan_clippings(vault, ClipperSettings(folder="Clippings", max_bytes=1_000))
    }
    assert set(results) == {
        "Clippings/good.md",
        "Clippings/junk.md",
        "Clippings/huge.md",
        "Clippings/latin1 café ✓.md",
        "Clippings/bom.md",
    }
    assert results["Clippings/junk.md"].error is not None
    assert results["Clippings/huge.md"].error is not None
    assert "larger than" in (results["Clippings/huge.md"].error or "")
    latin = results["Clippings/latin1 café ✓.md"].item
    assert latin is not None and latin.title == "Café crème" and latin.text.endswith("naïve")
    bom = results["Clippings/bom.md"].item
    assert bom is not None and bom.title == "With BOM"


def test_missing_folder_yields_nothing(tmp_path: Path) -> None:
    assert list(scan_clippings(tmp_path, ClipperSettings())) == []


def test_real_article_clipping_keeps_text_and_canonical_url(shared_data: Path) -> None:
    """A clipping of a real article (benchmark ground truth) keeps its text and canonical URL."""
    truth = json.loads((shared_data / "articles" / "ground-truth.json").read_text("utf-8"))
    entry = next(v for v in truth.values() if len(v["articleBody"]) > 2000)
    body = entry["articleBody"].replace("\n", "\n\n")
    sep = "&" if "?" in entry["url"] else "?"
    tracked = f"{entry['url']}{sep}utm_source=newsletter&utm_campaign=x"
    note = (
        f'---\ntitle: "A real article"\nsource: "{tracked}"\ncreated: 2024-01-01\n'
        f'tags:\n  - "clippings"\n---\n{body}\n'
    )
    item = clipping_to_item("Clippings/real.md", note)
    assert item.url == entry["url"]
    assert item.text == body.strip()
