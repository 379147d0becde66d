"""Chunking notes: boundaries, sizes, merging, heading paths and note metadata."""

from __future__ import annotations

import re
import tarfile
import time
from pathlib import Path

import pytest

from signaldesk.retrieval.chunker import Chunk, ChunkedNote, chunk_note
from signaldesk.retrieval.cleaning import readable_text

HUB = "vaults/obsidian-hub.tar.gz"


def _para(words: int, seed: str = "alpha") -> str:
    """A paragraph of roughly ``words * 8`` characters on one line."""
    return " ".join(f"{seed}{i}" for i in range(words)) + "."


def _check_invariants(note: ChunkedNote, text: str, max_chars: int, min_chars: int) -> None:
    """What every chunked note must satisfy, whatever its shape."""
    file_lines = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for ordinal, chunk in enumerate(note.chunks):
        assert chunk.ordinal == ordinal
        assert chunk.section == (chunk.heading_path[-1] if chunk.heading_path else "")
        assert readable_text(chunk.text)
        assert len(chunk.text) <= 2 * max_chars
        assert len(readable_text(chunk.text)) <= max_chars + min_chars + 1
        first_line, _, rest = chunk.text.partition("\n")
        if (
            first_line.startswith(("```", "~~~"))
            and first_line not in file_lines[chunk.start_line - 1]
        ):
            first_line = rest.split("\n", 1)[0]  # a copied fence opens a split code block
        # `in`, not startswith: a piece of an over-long line starts mid-line.
        assert first_line[:40] in file_lines[chunk.start_line - 1], (
            note.path,
            chunk.start_line,
        )
    starts = [c.start_line for c in note.chunks]
    assert starts == sorted(starts)


def _body_lines_covered(note: ChunkedNote, body: str) -> None:
    """Every non-blank body line appears in some chunk, in order (nothing is lost)."""
    joined = "\n".join(c.text for c in note.chunks)
    pos = 0
    for line in body.split("\n"):
        if not line.strip():
            continue
        found = joined.find(line, pos)
        assert found >= 0, line
        pos = found


# --- boundaries -----------------------------------------------------------------------------


def test_splits_at_h2_with_heading_paths_and_lines() -> None:
    text = (
        "---\ntitle: Rust error handling\ntags: [rust]\n---\n"
        "# Rust error handling\n\n"
        f"{_para(30, 'intro')}\n\n"
        "## The ? operator\n\n"
        f"{_para(40, 'question')}\n\n"
        "### With Option\n\n"
        f"{_para(30, 'option')}\n\n"
        "## Custom error types\n\n"
        f"{_para(40, 'custom')}\n"
    )
    note = chunk_note("03-resources/rust/errors.md", text)
    _check_invariants(note, text, 1800, 200)
    assert [c.heading_path for c in note.chunks] == [
        ("Rust error handling",),
        ("Rust error handling", "The ? operator"),
        ("Rust error handling", "Custom error types"),
    ]
    assert [c.section for c in note.chunks] == [
        "Rust error handling",
        "The ? operator",
        "Custom error types",
    ]
    # H3 stays inside its H2 chunk.
    assert "### With Option" in note.chunks[1].text
    lines = text.split("\n")
    assert lines[note.chunks[1].start_line - 1] == "## The ? operator"
    assert lines[note.chunks[0].start_line - 1] == "# Rust error handling"


def test_text_before_any_heading_has_an_empty_section() -> None:
    text = f"{_para(40, 'lead')}\n\n## Details\n\n{_para(40, 'detail')}\n"
    note = chunk_note("n.md", text)
    assert note.chunks[0].section == ""
    assert note.chunks[0].heading_path == ()
    assert note.chunks[1].heading_path == ("Details",)
    assert note.title == "n"


def test_headings_inside_code_and_comments_are_not_boundaries() -> None:
    text = (
        "## Shell history\n\n"
        f"{_para(30, 'shell')}\n\n"
        "```bash\n"
        "## not a heading, a comment in bash\n"
        "echo hi\n"
        "```\n\n"
        "<!--\n## Sponsor this author\n-->\n\n"
        "%%\n## Hidden in an Obsidian comment\n%%\n\n"
        f"{_para(30, 'after')}\n"
    )
    note = chunk_note("n.md", text)
    assert len(note.chunks) == 1
    assert note.chunks[0].heading_path == ("Shell history",)


def test_a_second_h1_starts_a_new_chunk() -> None:
    text = f"# First\n\n{_para(40, 'one')}\n\n# Second\n\n{_para(40, 'two')}\n"
    note = chunk_note("n.md", text)
    assert [c.heading_path for c in note.chunks] == [("First",), ("Second",)]
    assert note.title == "First"


# --- long sections --------------------------------------------------------------------------


def test_long_section_splits_between_paragraphs_and_keeps_code_whole() -> None:
    code = "```python\ndef handler(event):\n\n    return event\n\n\nprint(handler(1))\n```"
    paragraphs = [_para(25, f"p{i}x") for i in range(12)]
    paragraphs.insert(6, code)
    body = "## Long section\n\n" + "\n\n".join(paragraphs) + "\n"
    note = chunk_note("n.md", body, max_chars=800, min_chars=100)
    _check_invariants(note, body, 800, 100)
    assert len(note.chunks) >= 3
    for chunk in note.chunks:
        assert len(chunk.text) <= 800 + 100
        assert chunk.text.count("```") % 2 == 0  # a fence never straddles two chunks
        assert not chunk.text.startswith("\n") and not chunk.text.endswith("\n")
    assert sum("def handler(event):" in c.text for c in note.chunks) == 1
    _body_lines_covered(note, body)


def test_split_pieces_get_h3_in_heading_path() -> None:
    body = (
        "# Guide\n\n## Install\n\n"
        + "\n\n".join(_para(20, f"a{i}x") for i in range(4))
        + "\n\n### On Linux\n\n"
        + "\n\n".join(_para(20, f"b{i}x") for i in range(4))
        + "\n\n### On macOS\n\n"
        + "\n\n".join(_para(20, f"c{i}x") for i in range(4))
        + "\n"
    )
    note = chunk_note("guide.md", body, max_chars=700, min_chars=100)
    _check_invariants(note, body, 700, 100)
    paths = [c.heading_path for c in note.chunks]
    # The bare "# Guide" line merged forward; the chunk still starts there.
    assert paths[0] == ("Guide", "Install")
    assert note.chunks[0].text.startswith("# Guide\n\n## Install")
    assert ("Guide", "Install", "On Linux") in paths
    assert ("Guide", "Install", "On macOS") in paths
    # A heading is never left dangling at the end of a chunk.
    for chunk in note.chunks:
        assert not chunk.text.rstrip().split("\n")[-1].startswith("#")
    linux = next(c for c in note.chunks if c.heading_path[-1] == "On Linux")
    assert linux.text.startswith("### On Linux")
    assert linux.section == "On Linux"


def test_single_code_block_longer_than_max_is_split_by_lines_with_fences() -> None:
    code_lines = [f"    value_{i} = compute({i})  # step {i}" for i in range(120)]
    body = "## Script\n\n```python\n" + "\n".join(code_lines) + "\n```\n"
    note = chunk_note("n.md", body, max_chars=1000, min_chars=100)
    assert len(note.chunks) >= 4
    for chunk in note.chunks:
        code_part = chunk.text[chunk.text.index("```python") :]
        assert code_part.startswith("```python\n")
        assert code_part.endswith("\n```")
        assert len(chunk.text) <= 1000 + 100
    joined = "\n".join(c.text for c in note.chunks)
    for line in code_lines:
        assert joined.count(line) == 1


def test_one_huge_line_is_cut_at_spaces() -> None:
    body = "## Dump\n\n" + _para(800, "token") + "\n"
    note = chunk_note("n.md", body, max_chars=1000, min_chars=100)
    assert len(note.chunks) >= 6
    words = set(" ".join(c.text for c in note.chunks).split())
    assert {f"token{i}" for i in range(799)} <= words


def test_cjk_without_spaces_is_split_and_kept_whole() -> None:
    sentence = "向量检索把文本变成向量\uff0c然后按余弦相似度排序。"  # fullwidth comma
    paragraph = sentence * 120  # one line, no spaces, ~2,900 characters
    japanese = "日本語のテキストです。" * 30
    body = f"# 检索笔记\n\n## 混合检索\n\n{paragraph}\n\n## 日本語\n\n{japanese}\n"
    note = chunk_note("中文/检索.md", body)
    _check_invariants(note, body, 1800, 200)
    assert note.title == "检索笔记"
    assert note.chunks[0].heading_path == ("检索笔记", "混合检索")
    joined = "".join(c.text for c in note.chunks)
    assert joined.count(sentence) >= 119  # at most one sentence straddles a cut
    assert "".join(joined.split()).count("余弦相似度") >= 119
    assert any(c.heading_path == ("检索笔记", "日本語") for c in note.chunks)


# --- merging --------------------------------------------------------------------------------


def test_tiny_trailing_section_merges_into_previous() -> None:
    text = (
        "# Zettelkasten\n\n## Method\n\n"
        f"{_para(40, 'method')}\n\n"
        "## See also\n\n- [[PARA]]\n- [[Evergreen notes]]\n"
    )
    note = chunk_note("z.md", text)
    assert len(note.chunks) == 1  # intro H1 merges forward, See also merges back
    assert note.chunks[0].heading_path == ("Zettelkasten", "Method")
    assert "## See also" in note.chunks[0].text
    assert note.chunks[0].start_line == 1


def test_tiny_intro_merges_forward_and_keeps_the_title_heading() -> None:
    text = (
        "# Kubernetes\n\nShort intro.\n\n## Pods\n\n"
        f"{_para(60, 'pod')}\n\n## Services\n\n{_para(60, 'svc')}\n"
    )
    note = chunk_note("k8s.md", text)
    assert len(note.chunks) == 2
    assert note.chunks[0].text.startswith("# Kubernetes")
    assert "## Pods" in note.chunks[0].text
    assert note.chunks[0].heading_path == ("Kubernetes", "Pods")
    assert note.chunks[0].start_line == 1
    assert note.chunks[1].heading_path == ("Kubernetes", "Services")


def test_small_pieces_of_a_split_section_stay_in_their_section() -> None:
    body = (
        "## First\n\n" + "\n\n".join(_para(22, f"f{i}x") for i in range(5)) + "\n\nTail.\n\n"
        "## Second\n\n" + "\n\n".join(_para(22, f"s{i}x") for i in range(5)) + "\n"
    )
    note = chunk_note("n.md", body, max_chars=500, min_chars=120)
    _check_invariants(note, body, 500, 120)
    tail = next(c for c in note.chunks if "Tail." in c.text)
    assert tail.heading_path == ("First",)
    for chunk in note.chunks[:-1]:
        assert len(readable_text(chunk.text)) >= 120


def test_markup_heavy_footer_merges_despite_its_raw_length() -> None:
    footer_links = " | ".join(
        f"[Link {i}](https://github.dev/org/repo/blob/main/{'%20'.join(['segment'] * 12)}/n.md)"
        for i in range(3)
    )
    text = (
        f"# Note\n\n{_para(150, 'content')}\n\n"
        f'# This note in GitHub\n\n<span class="git-footer">{footer_links}</span>\n'
    )
    note = chunk_note("n.md", text)
    assert len(note.chunks) == 1
    assert note.chunks[0].heading_path == ("Note",)


# --- empty notes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n   \n",
        "---\ntitle: Only frontmatter\ntags: [x]\n---\n",
        "%%\nTODOs:\n- [ ] \n%%",
        "<!-- nothing to read -->\n",
        "![[diagram.png]]\n",
    ],
)
def test_notes_without_readable_text_give_zero_chunks(text: str) -> None:
    note = chunk_note("folder/Empty note.md", text)
    assert note.chunks == ()
    assert note.title in {"Only frontmatter", "Empty note"}


def test_a_short_note_is_one_chunk() -> None:
    note = chunk_note("inbox/idea.md", "Try BM25 with k1=0.9.\n")
    assert note.chunks == (Chunk(0, "", (), "Try BM25 with k1=0.9.", 1),)


# --- metadata -------------------------------------------------------------------------------


def test_title_fallbacks() -> None:
    assert chunk_note("a/b.md", "---\ntitle: From YAML\n---\n# From H1\n").title == "From YAML"
    assert chunk_note("a/b.md", "---\ntitle: 2024\n---\n").title == "2024"
    assert chunk_note("a/b.md", "text\n\n# From **H1**\n").title == "From H1"
    assert chunk_note("a/🗂️ hub.MD", "no heading\n").title == "🗂️ hub"
    assert chunk_note("x/Notes & Ideas.md", "```\n# not a title\n```\n").title == "Notes & Ideas"


def test_tags_from_every_place() -> None:
    text = (
        "---\n"
        "tags: ['#Rust', lang/systems, '', null, [nested, '#deep/er']]\n"
        "tag: single\n"
        "---\n"
        "# Heading is not a tag\n\n"
        "Inline #inline-tag and #area/work, also #Rust again and #2024 (a number).\n"
        "Not tags: https://example.com/page#fragment, [[Note#Heading]], C#, `#in-code`.\n\n"
        "```\n#not-in-fence\n```\n\n"
        "<!-- #not-in-comment --> %% #not-in-obsidian-comment %%\n"
        "#at-line-start and a trailing slash #folder/.\n"
    )
    note = chunk_note("n.md", text)
    assert note.tags == (
        "Rust",
        "lang/systems",
        "nested",
        "deep/er",
        "single",
        "inline-tag",
        "area/work",
        "at-line-start",
        "folder",
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("'clippings, research'", ("clippings", "research")),
        ("'#one #two'", ("one", "two")),
        ("project/alpha", ("project/alpha",)),
    ],
)
def test_tag_strings(value: str, expected: tuple[str, ...]) -> None:
    assert chunk_note("n.md", f"---\ntags: {value}\n---\nbody\n").tags == expected


def test_typed_fields_dates_and_aliases() -> None:
    text = (
        "---\n"
        "type: signal\ndomain: security\nstatus: active\n"
        "created: 2024-03-01\nupdated: 2024-03-05T10:20:00Z\n"
        "aliases: [CVE notes, cve]\n"
        "---\nBody.\n"
    )
    note = chunk_note("05-signals/security/cve.md", text)
    assert (note.note_type, note.domain, note.status) == ("signal", "security", "active")
    assert note.created == "2024-03-01"
    assert note.updated == "2024-03-05T10:20:00+00:00"
    assert note.aliases == ("CVE notes", "cve")
    assert note.frontmatter["domain"] == "security"


def test_unreadable_dates_are_none_and_alternative_keys_count() -> None:
    text = "---\ncreated: sometime last spring\nmodified: 2024/06/07\nalias: One, Two\n---\n"
    note = chunk_note("n.md", text)
    assert note.created is None
    assert note.updated == "2024-06-07"
    assert note.aliases == ("One", "Two")


def test_broken_frontmatter_still_gives_metadata_and_chunks() -> None:
    text = "---\ntitle: Broken: yes\ntags:\n\t- a\n---\n\n## Section\n\nSome body text.\n"
    note = chunk_note("n.md", text)
    assert note.frontmatter_error is not None
    assert note.title == "Broken: yes"
    assert note.tags == ("a",)
    assert note.chunks[0].start_line == 7
    assert note.chunks[0].heading_path == ("Section",)


def test_crlf_and_bom_line_numbers() -> None:
    text = "\ufeff---\r\ntitle: Win\r\n---\r\n\r\n## One\r\n\r\n" + _para(40) + "\r\n"
    note = chunk_note("n.md", text)
    assert note.chunks[0].start_line == 5
    assert "\r" not in note.chunks[0].text


# --- real notes -----------------------------------------------------------------------------


def _hub_members(shared_data: Path, every: int) -> list[tuple[str, str]]:
    out = []
    with tarfile.open(shared_data / HUB) as archive:
        for index, member in enumerate(archive):
            if not member.isfile() or not member.name.endswith(".md") or index % every:
                continue
            handle = archive.extractfile(member)
            assert handle is not None
            out.append((member.name.removeprefix("vault/"), handle.read().decode("utf-8")))
    return out


def test_real_hub_sample_keeps_invariants(shared_data: Path) -> None:
    from signaldesk.frontmatter import parse_note

    notes = _hub_members(shared_data, every=97)
    assert len(notes) > 50
    for path, text in notes:
        note = chunk_note(path, text)
        _check_invariants(note, text, 1800, 200)
        assert note.title
        if note.chunks:
            # Every line that has something to read is in some chunk.
            body = parse_note(text).body
            readable_lines = [line for line in body.split("\n") if readable_text(line)]
            joined = "\n".join(c.text for c in note.chunks)
            for line in readable_lines:
                assert line.rstrip() in joined, (path, line)


def test_real_hub_person_note(shared_data: Path) -> None:
    with tarfile.open(shared_data / HUB) as archive:
        handle = archive.extractfile("vault/01 - Community/People/dnotes.md")
        assert handle is not None
        text = handle.read().decode("utf-8")
    note = chunk_note("01 - Community/People/dnotes.md", text)
    assert note.title == "David Hunt"
    assert note.aliases == ("David Hunt",)
    assert note.tags == ()  # `tags: [- ]` is an empty item
    assert [c.heading_path for c in note.chunks] == [("David Hunt",)]
    # "## Sponsor this author" sits inside an HTML comment: not a heading.
    assert all("Sponsor this author" not in c.heading_path for c in note.chunks)


@pytest.mark.slow
def test_whole_hub_vault_chunks_without_error(shared_data: Path) -> None:
    notes = _hub_members(shared_data, every=1)
    assert len(notes) == 6571
    started = time.perf_counter()
    chunked = [chunk_note(path, text) for path, text in notes]
    elapsed = time.perf_counter() - started
    chunks = [c for n in chunked for c in n.chunks]
    assert len(chunks) > len(notes)
    assert sum(1 for n in chunked if not n.chunks) < 10
    assert max(len(c.text) for c in chunks) <= 3600
    assert elapsed < 60
    assert not any(re.search(r"\n\s*\n\s*$", c.text) for c in chunks)


def test_fence_edge_cases() -> None:
    text = (
        "## One\n\nInline ```js``` is not a fence.\n\n"
        "## Two\n\n~~~\n## inside a tilde fence\n~~~\n\n"
        "## Three\n\n```\n## unclosed fence runs to the end\n\n## Four\n"
    )
    note = chunk_note("n.md", text, max_chars=1800, min_chars=0)
    assert [c.section for c in note.chunks] == ["One", "Two", "Three"]


def test_random_markdown_never_breaks_the_rules() -> None:
    import random

    pieces = [
        "# Title",
        "## Section",
        "### Sub",
        "```python",
        "```",
        "~~~",
        "<!--",
        "-->",
        "%%",
        "",
        "",
        "- [ ] task [[Link|alias]] #tag",
        "| a | b |",
        "> [!note] quote",
        "---",
        "plain words " * 12,
        "长句子没有空格" * 40,
        "https://example.com/" + "x" * 300,
        "^block-id",
        "\t\tindented",
    ]
    rng = random.Random(20240501)
    for _ in range(150):
        lines = [rng.choice(pieces) for _ in range(rng.randint(0, 80))]
        text = "\n".join(lines)
        for max_chars, min_chars in [(1800, 200), (300, 50), (200, 0)]:
            note = chunk_note("fuzz.md", text, max_chars=max_chars, min_chars=min_chars)
            _check_invariants(note, text, max_chars, min_chars)
