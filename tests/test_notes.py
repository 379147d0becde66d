"""The signal note writer: names, frontmatter, bodies, collisions, re-scoring, clippings."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from signaldesk.frontmatter import parse_note
from signaldesk.frontmatter_patch import (
    FrontmatterPatchError,
    patch_frontmatter,
    split_raw,
    yaml_scalar,
)
from signaldesk.items import Item
from signaldesk.pipeline.settings import TriageSettings
from signaldesk.pipeline.triage.filing import NoteWriter, read_note_id
from signaldesk.pipeline.triage.note_render import (
    GENERATED_KEYS,
    OPTIONAL_GENERATED_KEYS,
    key_points,
    render_body,
    slugify,
)
from tests.triage_data import advisory_item, card, clipping

NOW = datetime(2026, 11, 30, 8, 15, tzinfo=UTC)
ID = "ab" * 32
ID2 = "cd" * 32

HOSTILE_TITLES = [
    "../../etc/passwd",
    "/absolute/path",
    "..\\..\\windows\\system32",
    "nul\x00byte",
    "x" * 5000,
    "🔥🚀💯",
    "",
    "   ",
    "...",
    "CON",
    "北京大学的研究\uff1a新しい論文と한국어",
    "Émile Zola\u2019s Straße — déjà vu",
    "line\nbreak\rcarriage\ttab",
    "zero\u200bwidth\u202eright-to-left",
    "---\ntitle: injected\n---",
    "quotes \"double\" and 'single' and: colon #hash",
    "Привет, мир",
    "a" + "\u0301" * 50,
]


def _valid_slug(slug: str) -> bool:
    return (
        bool(slug)
        and not slug.startswith(("-", "."))
        and len(slug.encode("utf-8")) <= 150
        and all(c == "-" or c.isalnum() for c in slug)
    )


@pytest.mark.parametrize("title", HOSTILE_TITLES)
def test_slug_of_a_hostile_title_is_safe(title: str) -> None:
    slug = slugify(title)
    assert _valid_slug(slug), slug
    assert slug == slugify(title)  # deterministic


def test_slug_folds_to_ascii_and_keeps_cjk() -> None:
    assert slugify("Émile Zola\u2019s Straße — déjà vu") == "emile-zola-s-strasse-deja-vu"
    assert slugify("北京 研究") == "北京-研究"
    assert slugify("🔥🔥") == "untitled"
    assert slugify("🔥", fallback="signal") == "signal"
    long = slugify("word " * 100, max_chars=30)
    assert len(long) <= 30 and not long.endswith("-") and long.startswith("word-word")


@pytest.mark.parametrize("title", HOSTILE_TITLES)
def test_a_note_with_a_hostile_title_lands_in_its_folder(vault: Path, title: str) -> None:
    writer = NoteWriter(vault, TriageSettings(), 0.55)
    item = Item(source_kind="rss", source_id="feed", title=title, text="Some text here.")
    result = writer.create(item, card(domain="security"), ID, NOW)
    assert result.outcome == "created" and result.path is not None
    path = vault / result.path
    assert path.parent == vault / "05-signals" / "security"
    assert path.name.startswith("2026-11-30-") and path.suffix == ".md"
    meta = parse_note(path.read_text(encoding="utf-8")).frontmatter
    assert meta["signaldesk_id"] == ID and meta["type"] == "signal"
    assert "\n" not in meta["title"] and "\x00" not in meta["title"]
    assert meta["title"] == (" ".join(title.replace("\x00", " ").split()) or "Untitled") or (
        "\u200b" in title or "\u202e" in title
    )
    assert not [p.name for p in path.parent.iterdir() if p.name.startswith(".")]  # no temp left


def test_frontmatter_has_the_documented_fields(vault: Path) -> None:
    writer = NoteWriter(vault, TriageSettings(), 0.55)
    result = writer.create(advisory_item(1), card(0.7123), ID, NOW)
    assert result.path is not None
    text = (vault / result.path).read_text(encoding="utf-8")
    parsed = parse_note(text)
    assert parsed.error is None
    meta = parsed.frontmatter
    for key in (
        "title",
        "type",
        "domain",
        "tags",
        "created",
        "updated",
        "source",
        "source_kind",
        "author",
        "published",
        "status",
        "composite",
        "signaldesk_id",
        *(k for k in GENERATED_KEYS if k not in OPTIONAL_GENERATED_KEYS),
    ):
        assert key in meta, key
    assert not set(OPTIONAL_GENERATED_KEYS) & set(meta)  # no corrections: no learned shift
    assert meta["status"] == "active" and meta["domain"] == "security"
    assert meta["source"] == "https://www.openssh.com/txt/release-1.9p2"
    assert meta["composite"] == 0.712 and meta["relevance"] == 0.8
    assert meta["relevance_reason"] == "topic security"
    assert meta["tags"][:2] == ["signal", "security"]
    assert meta["created"].startswith("2026-11-30T")
    # Flat keys only (Obsidian's Properties view shows nested maps as raw JSON).
    assert not [k for k, v in meta.items() if isinstance(v, dict)]
    headings = re.findall(r"^## (.+)$", parsed.body, re.M)
    assert headings == ["Summary", "Key points", "Content", "Source"]
    assert "<https://www.openssh.com/txt/release-1.9p2>" in parsed.body


def test_a_taken_name_gets_a_suffix_and_a_persons_note_is_never_overwritten(
    vault: Path,
) -> None:
    folder = vault / "05-signals" / "security"
    theirs = folder / "2026-11-30-openssh-1-9p2-fixes-cve-2026-1234.md"
    theirs.write_text("my own note\n", encoding="utf-8")
    writer = NoteWriter(vault, TriageSettings(), 0.55)
    first = writer.create(advisory_item(1), card(), ID, NOW)
    second = writer.create(advisory_item(1), card(), ID2, NOW)
    assert theirs.read_text(encoding="utf-8") == "my own note\n"
    assert first.path == "05-signals/security/2026-11-30-openssh-1-9p2-fixes-cve-2026-1234-2.md"
    assert second.path == "05-signals/security/2026-11-30-openssh-1-9p2-fixes-cve-2026-1234-3.md"


def test_concurrent_writers_never_share_a_name(vault: Path) -> None:
    writer = NoteWriter(vault, TriageSettings(), 0.55)
    start = threading.Barrier(8)

    def write(n: int) -> str | None:
        start.wait()
        return writer.create(advisory_item(1), card(), f"{n:064x}", NOW).path

    with ThreadPoolExecutor(8) as pool:
        paths = list(pool.map(write, range(8)))
    assert len(set(paths)) == 8
    ids = {read_note_id(vault / p) for p in paths if p}
    assert ids == {f"{n:064x}" for n in range(8)}


def test_refresh_updates_scores_and_keeps_a_persons_edits(vault: Path) -> None:
    writer = NoteWriter(vault, TriageSettings(), 0.55)
    rel = writer.create(advisory_item(1), card(0.7), ID, NOW).path
    assert rel is not None
    path = vault / rel
    original = path.read_text(encoding="utf-8")
    edited = (
        original.replace("title: OpenSSH", "title: My title for OpenSSH")
        .replace("- ssh\n", "- ssh\n- my-own-tag\n")
        .replace("## Summary", "My own paragraph.\n\n## Summary")
    )
    path.write_text(edited, encoding="utf-8")
    before_body = split_raw(path.read_bytes()).body

    later = datetime(2026, 12, 1, tzinfo=UTC)
    result = writer.refresh(rel, card(0.81, relevance=0.95, reason="rescored"), ID, later)
    assert result.outcome == "updated"
    data = path.read_bytes()
    assert split_raw(data).body == before_body  # body byte-identical
    meta = parse_note(data.decode()).frontmatter
    assert meta["title"] == "My title for OpenSSH 1.9p2 fixes CVE-2026-1234"
    assert "my-own-tag" in meta["tags"]
    assert meta["composite"] == 0.81 and meta["relevance"] == 0.95
    assert meta["relevance_reason"] == "rescored"
    assert meta["scored_at"].startswith("2026-12-01")
    # Only generated lines changed.
    changed = set(edited.splitlines()) ^ set(data.decode().splitlines())
    assert all(line.split(":")[0] in {*GENERATED_KEYS, "signaldesk_hash"} for line in changed)

    again = writer.refresh(rel, card(0.81, relevance=0.95, reason="rescored"), ID, later)
    assert again.outcome == "unchanged" and path.read_bytes() == data


def test_refresh_leaves_hand_edited_scores_alone(vault: Path) -> None:
    writer = NoteWriter(vault, TriageSettings(), 0.55)
    rel = writer.create(advisory_item(1), card(0.7), ID, NOW).path
    assert rel is not None
    path = vault / rel
    path.write_text(
        path.read_text(encoding="utf-8").replace("relevance: 0.8\n", "relevance: 1.0\n"),
        encoding="utf-8",
    )
    before = path.read_bytes()
    result = writer.refresh(rel, card(0.2), ID, NOW)
    assert result.outcome == "kept_edited" and path.read_bytes() == before


def test_find_follows_a_moved_note_and_reports_a_deleted_one(vault: Path) -> None:
    writer = NoteWriter(vault, TriageSettings(), 0.55)
    rel = writer.create(advisory_item(1), card(), ID, NOW).path
    assert rel is not None
    moved = vault / "01-projects" / "deep" / "kept.md"
    moved.parent.mkdir(parents=True)
    (vault / rel).rename(moved)
    fresh = NoteWriter(vault, TriageSettings(), 0.55)
    assert fresh.find(ID, rel, deep=False) is None  # only the signals folder
    assert fresh.find(ID, rel) == "01-projects/deep/kept.md"
    moved.unlink()
    assert NoteWriter(vault, TriageSettings(), 0.55).find(ID, rel) is None


def test_find_rejects_a_hint_outside_the_vault(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text(f"---\nsignaldesk_id: {ID}\n---\n", encoding="utf-8")
    writer = NoteWriter(vault, TriageSettings(), 0.55)
    assert writer.find(ID, "../outside.md") is None


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_move_a_clipping_keeps_its_body_byte_for_byte(vault: Path, newline: str) -> None:
    body = "# Heading\n\nSome *clipped* text.\n\n```\ncode  with   spaces\n```\n\n---\n\nEnd.  \n"
    source = clipping(vault, "My clip.md", title="My clip", body=body, newline=newline)
    original = source.read_bytes()
    item = Item(
        source_kind="clipper",
        source_id="Clippings",
        title="My clip",
        text=body,
        origin_path="Clippings/My clip.md",
    )
    writer = NoteWriter(vault, TriageSettings(), 0.55)
    result = writer.file_clipping(item, card(domain="web"), ID, NOW)
    assert result is not None and result.outcome == "moved"
    assert result.path == "05-signals/web/My clip.md"
    assert result.previous_path == "Clippings/My clip.md"
    assert not source.exists()
    moved = (vault / result.path).read_bytes()
    assert split_raw(moved).body == split_raw(original).body
    meta = parse_note(moved.decode()).frontmatter
    assert meta["title"] == "My clip" and meta["tags"] == ["clippings"]  # the person's keys
    assert meta["author"] == ["[[Ada Writer]]"]
    assert meta["type"] == "signal" and meta["domain"] == "web" and meta["composite"] == 0.7
    assert read_note_id(vault / result.path) == ID
    # The clipper's own lines are all still there, in order.
    kept = split_raw(original).block
    assert [line for line in split_raw(moved).block if line in kept] == list(kept)


def test_copy_and_leave_keep_the_clipping(vault: Path) -> None:
    source = clipping(vault, "c.md", title="C", body="Body.\n")
    original = source.read_bytes()
    item = Item(
        source_kind="clipper",
        source_id="Clippings",
        title="C",
        text="Body.",
        origin_path="Clippings/c.md",
    )
    copier = NoteWriter(vault, TriageSettings(clipping_action="copy"), 0.55)
    copied = copier.file_clipping(item, card(), ID, NOW)
    assert copied is not None and copied.outcome == "copied"
    assert source.read_bytes() == original and (vault / str(copied.path)).is_file()
    leaver = NoteWriter(vault, TriageSettings(clipping_action="leave"), 0.55)
    left = leaver.file_clipping(item, card(), ID2, NOW)
    assert left is not None and left.outcome == "left" and left.path == "Clippings/c.md"
    assert source.read_bytes() == original


def test_a_clipping_that_is_gone_is_not_filed_from_here(vault: Path) -> None:
    item = Item(
        source_kind="clipper",
        source_id="Clippings",
        title="x",
        text="y",
        origin_path="Clippings/no.md",
    )
    assert NoteWriter(vault, TriageSettings(), 0.55).file_clipping(item, card(), ID, NOW) is None


def test_dry_run_writer_names_but_writes_nothing(vault: Path) -> None:
    writer = NoteWriter(vault, TriageSettings(), 0.55, dry_run=True)
    result = writer.create(advisory_item(1), card(), ID, NOW)
    assert result.path == "05-signals/security/2026-11-30-openssh-1-9p2-fixes-cve-2026-1234.md"
    assert not (vault / result.path).exists()


# -- the frontmatter patcher ------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        "",
        "yes",
        "a: b # c",
        'q"uote\\',
        "line\nbreak",
        "\x00\x07\x7f\x85\u2028\ufeff",
        "😀",
    ],
)
def test_yaml_scalar_reads_back_exactly(value: str) -> None:
    assert yaml.safe_load(f"k: {yaml_scalar(value)}")["k"] == value


def test_patch_without_frontmatter_prepends_a_block() -> None:
    data = "\ufeffJust text\r\n".encode()
    patched = patch_frontmatter(data, {"a": 1.5})
    assert patched == "\ufeff---\r\na: 1.5\r\n---\r\nJust text\r\n".encode()  # its line ends


def test_patch_replaces_multi_line_values_and_keeps_others() -> None:
    data = b"---\ntitle: x\nrelevance:\n  - 1\n  - 2\ntags: [a]\n---\nbody"
    patched = patch_frontmatter(data, {"relevance": 0.5, "title": "new"}, only_if_missing={"title"})
    assert patched == b"---\ntitle: x\nrelevance: 0.5\ntags: [a]\n---\nbody"


def test_patch_writes_a_list_one_item_a_line() -> None:
    data = b"---\ntags:\n- signal\n- other\nstatus: active\n---\nbody"
    patched = patch_frontmatter(data, {"tags": ["signal", "security", 'a "quoted" tag']})
    assert patched == (
        b'---\ntags:\n- "signal"\n- "security"\n- "a \\"quoted\\" tag"\nstatus: active\n---\nbody'
    )
    assert yaml.safe_load(patched.split(b"---")[1])["tags"][2] == 'a "quoted" tag'
    assert patch_frontmatter(data, {"tags": []}) == b"---\ntags: []\nstatus: active\n---\nbody"


def test_patch_refuses_an_unclosed_block() -> None:
    with pytest.raises(FrontmatterPatchError):
        patch_frontmatter(b"---\ntitle: x\nno end\n", {"a": 1.0})


# -- the body -------------------------------------------------------------------------


def test_key_points_are_extractive_deterministic_and_skip_code() -> None:
    text = advisory_item(1).text
    points = key_points(text, limit=3)
    assert len(points) == 3 and points == key_points(text, limit=3)
    flat = " ".join(text.split())
    for point in points:
        assert point.rstrip("…").replace("`", "")[:40] in flat.replace("`", "")
    assert not any("sudo apt update" in p for p in points)
    assert key_points("", limit=3) == [] and key_points(text, limit=0) == []


def test_key_points_do_not_repeat_the_summary_or_stop_at_a_colon() -> None:
    text = (
        "Write-ahead logging is the mode most SQLite applications should run in, with "
        "checkpoints and busy timeouts set, yet its defaults leave traps: a WAL file that "
        "keeps growing, writers failing with SQLITE_BUSY and readers blocking checkpoints.\n\n"
        "WAL is a property of the database file, so it is set once and sticks:\n\n"
        "```\nPRAGMA journal_mode = WAL;\n```\n\n"
        "A checkpoint copies committed pages from the WAL file back into the database. "
        "A long reader holds the checkpoint back, so the WAL file keeps growing. "
        "Set busy_timeout on every SQLite connection, or writers fail with SQLITE_BUSY."
    )
    lead = text.split("\n\n")[0]
    assert lead in key_points(text, limit=5)  # without a summary the lead is a point
    points = key_points(text, limit=5, summary=lead)
    assert points and lead not in points
    assert not any(p.endswith(":") for p in points)
    body = render_body(Item(source_kind="rss", source_id="f", title="T", text=text))
    summary = body.split("## Summary")[1].split("## Key points")[0].strip()
    assert summary == lead and f"- {lead}" not in body


def test_an_italic_caption_is_not_a_key_point_but_an_italic_sentence_is() -> None:
    text = (
        "Deeply nested code hurts readability, and nested checks hide their bugs well.\n\n"
        "*Code with too much nesting*\n\n```\nif ok:\n  if user:\n    run()\n```\n\n"
        "*This post about nested code first appeared in our office bathrooms.*\n\n"
        "Guard clauses check nested conditions first, so the nested code reads flat."
    )
    points = key_points(text, limit=5)
    assert "Code with too much nesting" not in points
    assert "This post about nested code first appeared in our office bathrooms." in points


def test_key_points_and_summary_keep_inline_code_as_written() -> None:
    text = (
        "tarsafe wraps the standard `tarfile` module and its `__init__.py` exports "
        "`extract_all()`, which is **not** safe on archives you did not make.\n\n"
        'Pass `follow_links=False` or use `tarfile` with `filter="data"` on Python 3.12, '
        "which refuses *links* that leave the folder.\n\n"
        + "Upgrade every service that extracts uploaded archives with the library, "
        + "then audit the folders it wrote to, starting with `"
        + "a_very_long_identifier_" * 12
        + "` and the rest."
    )
    body = render_body(Item(source_kind="rss", source_id="f", title="T", text=text))
    summary = body.split("## Summary")[1].split("## Key points")[0].strip()
    assert summary.startswith("tarsafe wraps the standard `tarfile` module and its `__init__.py`")
    assert "**" not in summary and "`extract_all()`" in summary
    points = key_points(text, limit=5)
    assert any("`follow_links=False`" in p and '`filter="data"`' in p for p in points)
    assert any("refuses links" in p for p in points)  # emphasis outside code still goes
    clipped = [p for p in points if p.endswith("…")]
    assert clipped and all(p.count("`") % 2 == 0 for p in clipped)  # a cut span is closed


def test_key_points_handle_cjk() -> None:
    text = (
        "向量检索的召回率取决于索引参数。索引参数需要根据数据规模调整。"
        "今天天气很好\uff0c适合散步和读书。"
    )
    points = key_points(text, limit=2)
    assert points and all(p in text for p in points)


def test_body_caps_content_and_never_leaves_a_code_fence_open() -> None:
    text = "Intro paragraph that is long enough to count.\n\n```\n" + "code line\n" * 3000 + "```\n"
    item = Item(source_kind="rss", source_id="f", title="T", text=text)
    body = render_body(item, content_chars=1000)
    content = body.split("## Content")[1].split("## Source")[0]
    assert len(content) < 1300 and content.count("```") % 2 == 0
    assert "more characters: see the source" in content


def test_body_demotes_the_contents_headings() -> None:
    item = Item(source_kind="rss", source_id="f", title="T", text="# Big\n\ntext\n\n## Mid\n")
    body = render_body(item)
    assert re.findall(r"^#+ .*$", body, re.M) == [
        "# T",
        "## Summary",
        "## Key points",
        "## Content",
        "### Big",
        "#### Mid",
        "## Source",
    ]


def test_content_whose_sections_are_h2_nests_them_one_level_down() -> None:
    # Trigger: a page's sections are "##" under its "#" title (stripped as the note's
    # title); moved two levels they became "####" right under "## Content", skipping "###".
    text = "## Setup\n\ntext\n\n### Details\n\n```sh\n# a comment, not a heading\n```\n"
    body = render_body(Item(source_kind="rss", source_id="f", title="T", text=text))
    content = body.split("## Content")[1].split("## Source")[0]
    assert re.findall(r"^#+ .*$", content, re.M) == [
        "### Setup",
        "#### Details",
        "# a comment, not a heading",  # in the code block: left as it is
    ]
    deep = render_body(Item(source_kind="rss", source_id="f", title="T", text="#### Deep\n\nx"))
    assert "#### Deep" in deep  # a deeper outline is never moved up


def test_summary_takes_prose_not_a_flattened_code_block() -> None:
    from signaldesk.items import Item
    from signaldesk.pipeline.triage.note_render import render_body

    summary = (
        "Turn on write-ahead logging so readers never wait for the writer.\n\n"
        "```sql\nPRAGMA journal_mode = WAL;\n```\n"
    )
    item = Item(source_kind="rss", source_id="f", title="WAL", text=summary, summary=summary)
    body = render_body(item)
    section = body.split("## Summary", 1)[1].split("## Key points", 1)[0]
    assert "readers never wait for the writer" in section
    assert "PRAGMA" not in section and "```" not in section


def test_summary_skips_the_pictures_a_post_opens_with(shared_data: Path) -> None:
    # Trigger: rss-parser's content-encoded.rss (a Medium feed): "THE CREATIVE FORAGER"
    # opens with a heading, a picture, a heading and a picture, and its Summary was the
    # whole post's markdown on one line ("#### Using Wild ... ![](...) #### HEY, ...").
    from signaldesk.sources.feed_parse import parse_feed

    data = (shared_data / "feeds/rss-parser_tests/input/content-encoded.rss").read_bytes()
    items = parse_feed(data, url="https://medium.com/feed/invironment").items
    [item] = [i for i in items if i.title == "THE CREATIVE FORAGER"]
    section = render_body(item).split("## Summary", 1)[1].split("## Key points", 1)[0]
    assert section.strip().startswith("Food is all around us, if you learn where to look")
    assert "#" not in section and "![" not in section
    linked = "[![SourceForge](https://e.org/a.jpeg)](https://e.org/post)\n\nThe new owner."
    teaser = Item(source_kind="rss", source_id="f", title="T", text=linked, summary=linked)
    assert "\n\nThe new owner.\n\n" in render_body(teaser)


def test_a_link_whose_text_holds_two_sentences_is_not_cut_into_broken_markdown() -> None:
    text = (
        "The release is out and brings the new planner to every installation we ship. "
        "[Read the notes. They list every change in the planner](https://e.org/notes) "
        "before you upgrade the servers that run the nightly jobs."
    )
    points = key_points(text, limit=5)
    assert points
    assert not any("[" in p or "](" in p for p in points), points
    assert "They list every change in the planner before you upgrade the servers" in " ".join(
        points
    )


def test_the_content_does_not_open_with_the_title_again() -> None:
    title = "Path traversal in tarsafe 3.2; upgrade to 3.2.4"
    page = (
        "# Path traversal in tarsafe 3.2\n\ntarsafe wraps `tarfile`.\n\n## Am I affected?\n\nYes."
    )
    body = render_body(Item(source_kind="rss", source_id="f", title=title, text=page))
    content = body.split("## Content")[1].split("## Source")[0]
    assert content.strip().startswith("tarsafe wraps `tarfile`.")
    assert "### Am I affected?" in content  # the other headings stay, under "## Content"
    # A text drop's first line became its title: not said twice.
    drop = render_body(
        Item(
            source_kind="tool_output",
            source_id="t",
            title="Why it flakes",
            text="Why it flakes\nThe thread.",
        )
    )
    assert drop.split("## Content")[1].split("## Source")[0].strip() == "The thread."
    # A heading that is only the start of a longer title is a section: kept.
    kept = render_body(
        Item(
            source_kind="rss",
            source_id="f",
            title="SQLite WAL mode in practice: checkpoints and long readers",
            text="# SQLite\n\nwords",
        )
    )
    assert "### SQLite" in kept


def test_a_sentence_is_not_cut_inside_a_code_span() -> None:
    text = (
        "Three stages wrote to the ledger from their own tasks and failed under load. "
        "All writes now go through one `Ledger.transaction()` context manager that holds "
        "an `anyio.Lock` across `BEGIN IMMEDIATE ... COMMIT`. Readers keep their own "
        "connections and read during a write."
    )
    points = key_points(text, limit=5)
    assert any(p.endswith("across `BEGIN IMMEDIATE ... COMMIT`.") for p in points), points
