"""Frontmatter parsing: the normal case, and every broken shape real vaults contain."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from signaldesk.frontmatter import ParsedNote, parse_note

HUB = "vaults/obsidian-hub.tar.gz"


def _hub_notes(shared_data: Path, names: list[str]) -> dict[str, str]:
    with tarfile.open(shared_data / HUB) as archive:
        out = {}
        for name in names:
            member = archive.extractfile(f"vault/{name}")
            assert member is not None
            out[name] = member.read().decode("utf-8")
        return out


def test_clipper_note_parses_with_dates_as_iso_strings() -> None:
    text = (
        "---\n"
        'title: "Rust 2024: what changes"\n'
        "source: https://blog.rust-lang.org/2024/edition\n"
        "author:\n"
        '  - "[[Jane Doe]]"\n'
        "published: 2024-11-02\n"
        "created: 2024-11-03T09:15:00\n"
        "tags: [clippings, rust]\n"
        "---\n"
        "# Rust 2024\n"
        "Body text.\n"
    )
    note = parse_note(text)
    assert note.error is None
    assert note.frontmatter == {
        "title": "Rust 2024: what changes",
        "source": "https://blog.rust-lang.org/2024/edition",
        "author": ["[[Jane Doe]]"],
        "published": "2024-11-02",
        "created": "2024-11-03T09:15:00",
        "tags": ["clippings", "rust"],
    }
    assert note.body == "# Rust 2024\nBody text.\n"
    assert note.body_line == 10
    assert text.split("\n")[note.body_line - 1] == "# Rust 2024"
    json.dumps(note.frontmatter)  # JSON-safe all the way down


def test_no_frontmatter_keeps_the_whole_text() -> None:
    note = parse_note("# Title\n\n---\n\nA rule above, not frontmatter.\n")
    assert note == ParsedNote({}, "# Title\n\n---\n\nA rule above, not frontmatter.\n", 1, None)


def test_empty_block_and_dot_terminator() -> None:
    assert parse_note("---\n---\nbody") == ParsedNote({}, "body", 3, None)
    note = parse_note("---\ntitle: x\n...\nbody")
    assert note.frontmatter == {"title": "x"}
    assert note.body == "body"


def test_bom_and_crlf() -> None:
    text = (
        "\ufeff---\r\ntitle: Windows note\r\ntags:\r\n  - a\r\n---\r\n\r\nLine one\r\nLine two\r\n"
    )
    note = parse_note(text)
    assert note.frontmatter == {"title": "Windows note", "tags": ["a"]}
    assert note.body == "\nLine one\nLine two\n"
    assert note.body_line == 6
    assert note.error is None


def test_tab_indentation_falls_back_to_line_reading() -> None:
    note = parse_note("---\ntitle: Tabs\ntags:\n\t- alpha\n\t- beta\nstatus: draft\n---\nbody\n")
    assert note.error is not None and "line" in note.error
    assert note.frontmatter == {"title": "Tabs", "tags": ["alpha", "beta"], "status": "draft"}
    assert note.body == "body\n"


def test_unquoted_colon_in_value() -> None:
    note = parse_note("---\ntitle: Rust: the book: notes\ntype: note\n---\nbody")
    assert note.error is not None
    assert note.frontmatter == {"title": "Rust: the book: notes", "type": "note"}


def test_bad_indentation_keeps_keys() -> None:
    note = parse_note("---\ntitle: Misaligned\n  domain: security\ncreated: 2024-05-01\n---\nx")
    assert note.error is not None
    assert note.frontmatter["title"] == "Misaligned"
    assert note.frontmatter["created"] == "2024-05-01"
    assert note.frontmatter["domain"] == "security"


def test_duplicate_keys_last_one_wins() -> None:
    note = parse_note("---\ntitle: first\ntitle: second\n---\n")
    assert note.frontmatter == {"title": "second"}


def test_unclosed_block_reads_keys_until_the_body_begins() -> None:
    text = "---\ntitle: Never closed\ntags: [a, b]\n\n# Heading\n\nBody text.\n"
    note = parse_note(text)
    assert note.frontmatter == {"title": "Never closed", "tags": ["a", "b"]}
    assert note.error is not None and "never closed" in note.error
    assert "# Heading" in note.body
    assert text.split("\n")[note.body_line - 1 :] == note.body.split("\n")


def test_unclosed_rule_followed_by_prose_is_body() -> None:
    text = "---\nJust a horizontal rule at the top of a note.\n"
    note = parse_note(text)
    assert note == ParsedNote({}, text, 1, None)


def test_non_mapping_yaml_between_rules_is_not_frontmatter() -> None:
    text = "---\nSome prose between two rules\n---\nMore prose.\n"
    note = parse_note(text)
    assert note.frontmatter == {}
    assert note.body == text  # nothing lost
    assert note.error is not None and "str" in note.error


def test_templater_placeholders_survive() -> None:
    text = (
        "---\n"
        'date: <% tp.file.creation_date("YYYY-MM-DD")%>\n'
        'week: "[[ <% tp.date.now("YYYY") %>-W<% tp.date.now("WW") %>]]"\n'
        "tags: Daily, bujo\n"
        "---\n"
    )
    note = parse_note(text)
    assert note.error is not None
    assert note.frontmatter["date"] == '<% tp.file.creation_date("YYYY-MM-DD")%>'
    assert note.frontmatter["week"].startswith("[[ <% tp.date.now")
    assert note.frontmatter["tags"] == "Daily, bujo"


def test_impossible_date_does_not_raise() -> None:
    note = parse_note("---\ncreated: 2023-02-30\ntitle: Leap\n---\n")
    assert note.frontmatter["title"] == "Leap"
    assert note.frontmatter["created"] == "2023-02-30"
    assert note.error is not None


def test_odd_values_become_json_safe() -> None:
    text = (
        "---\n"
        "2024: year key\n"
        "null: nothing\n"
        "ratio: .nan\n"
        "when: 2024-01-02 03:04:05\n"
        "nested: {day: 2024-02-03}\n"
        "set: !!set {a, b}\n"
        "---\n"
    )
    note = parse_note(text)
    assert note.error is None
    assert note.frontmatter["2024"] == "year key"
    assert note.frontmatter["null"] == "nothing"
    assert note.frontmatter["ratio"] == "nan"
    assert note.frontmatter["when"] == "2024-01-02T03:04:05"
    assert note.frontmatter["nested"]["day"] == "2024-02-03"
    assert note.frontmatter["set"] == ["a", "b"]
    json.dumps(note.frontmatter, allow_nan=False)


def test_alias_bomb_is_refused_quickly() -> None:
    lines = ["---", "a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 12)]
    lines += ["title: boom", "---", "body"]
    note = parse_note("\n".join(lines))
    assert note.error is not None
    assert note.frontmatter.get("title") == "boom"  # the forgiving reader still finds it
    assert note.body == "body"


def test_unknown_tags_and_garbage_never_raise() -> None:
    samples = [
        "---\n!!python/object:os.system ls\n---\n",
        "---\nkey: !custom tag\n---\n",
        "---\n: no key\n- orphan item\n---\n",
        "---\n[unclosed\n---\n",
        "---\n\x00\x01 binary\n---\n",
        "---",
        "---\n",
        "",
        "\ufeff",
    ]
    for text in samples:
        note = parse_note(text)
        assert isinstance(note.frontmatter, dict)
        json.dumps(note.frontmatter)


def test_real_hub_notes(shared_data: Path) -> None:
    notes = _hub_notes(
        shared_data,
        [
            "01 - Community/People/kepano.md",  # `- @kepano`: '@' cannot start a YAML token
            "03 - Showcases & Templates/Vaults/Periodic PARA.md",  # list under a scalar
            "05 - Concepts/PARA.md",  # clean
        ],
    )
    kepano = parse_note(notes["01 - Community/People/kepano.md"])
    assert kepano.error is not None
    assert kepano.frontmatter["aliases"] == ["@kepano"]
    assert kepano.frontmatter["publish"] is True
    assert kepano.body.lstrip().startswith("# ")

    para = parse_note(notes["03 - Showcases & Templates/Vaults/Periodic PARA.md"])
    assert "PARA Notes" in para.frontmatter["tags"]

    clean = parse_note(notes["05 - Concepts/PARA.md"])
    assert clean.error is None
    assert clean.frontmatter["tags"] == ["seedling"]


def test_every_prefix_of_real_notes_parses(shared_data: Path) -> None:
    # Truncated files are what an editor's autosave leaves mid-write.
    notes = _hub_notes(
        shared_data,
        ["01 - Community/People/kepano.md", "05 - Concepts/YAML frontmatter.md"],
    )
    for text in notes.values():
        for end in range(0, min(len(text), 600)):
            note = parse_note(text[:end])
            assert note.body_line >= 1


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_body_line_counts_every_newline_style(newline: str) -> None:
    text = newline.join(["---", "title: t", "---", "first body line"])
    assert parse_note(text).body_line == 4
