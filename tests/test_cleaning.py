"""The readable text that gets embedded, and the embedding input built from it."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest

from signaldesk.retrieval.cleaning import embedding_input, readable_text

HUB = "vaults/obsidian-hub.tar.gz"


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("See [the docs](https://example.com/a_(b) 'title') now.", "See the docs now."),
        ("Ref [link][1] here.\n\n[1]: https://example.com", "Ref link here."),
        ("Visit <https://example.com/x> or https://bare.example.org/p?q=1.", "Visit or ."),
        ("Also www.example.com/page today", "Also today"),
        ("![diagram of the flow](img/flow.png)", "diagram of the flow"),
        ("![Pasted image 20240101.png](x.png)", ""),
        (
            "[![Build](https://github.com/o/r/workflows/ci/badge.svg)](https://github.com/o/r)"
            " [![npm](https://img.shields.io/npm/v/x.svg)](https://npm.im/x) Library",
            "Library",
        ),
        ('<div align="center"><b>Bold</b> text</div>', "Bold text"),
        ("Keep <!-- a hidden\nmulti-line comment --> this", "Keep this"),
        ("Keep %% obsidian\ncomment %% this", "Keep this"),
        ("[[Note|the alias]] and [[Folder/Other Note]]", "the alias and Other Note"),
        ("[[Note#Heading]] [[#Local heading]] [[Note#^abc123]]", "Note Heading Local heading Note"),
        ("Before ![[embedded note]] ![[image.png|300]] after", "Before after"),
        ("A claim. ^abc-123\n\nNext", "A claim. Next"),
        (
            "Text[^1] more ^[inline note].\n\n[^1]: Footnote body.",
            "Text more inline note . Footnote body.",
        ),
        ("## Heading ##\n### Sub", "Heading Sub"),
        ("**bold** *it* _em_ __strong__ ~~gone~~ ==mark==", "bold it em strong gone mark"),
        ("| a | b |\n|:--|--:|\n| 1 | 2 |", "a b 1 2"),
        ("- [ ] open task\n- [x] done\n1. first\n* star", "open task done first star"),
        ("> [!warning] Careful\n> quoted text", "Careful quoted text"),
        ("Tagged #project/alpha and C# and issue #42", "Tagged project/alpha and C# and issue #42"),
        ("snake_case_name and 2*3*4 stay", "snake_case_name and 2*3*4 stay"),
        ("&amp; &lt;tag&gt; &nbsp;x", "& <tag> x"),
        ("---\n\n***\n\nAfter rules", "After rules"),
        ("", ""),
    ],
)
def test_readable_text(markdown: str, expected: str) -> None:
    assert readable_text(markdown) == expected


def test_code_keeps_its_words_but_not_its_fences() -> None:
    markdown = (
        "Call `parse_note()` first.\n\n"
        "```python\n"
        "def __init__(self, *args, **kwargs):  # see https://docs.python.org\n"
        "    self._cache = {}\n"
        "```\n\n"
        "~~~\nplain <b>fence</b> [[not a link]]\n~~~\n"
    )
    text = readable_text(markdown)
    assert "```" not in text and "~~~" not in text and "`" not in text
    assert "parse_note()" in text
    assert "def __init__(self, *args, **kwargs): # see https://docs.python.org" in text
    assert "self._cache = {}" in text
    assert "plain <b>fence</b> [[not a link]]" in text  # code is left exactly as written


def test_inline_code_sits_in_its_sentence_as_written() -> None:
    # Trigger: search's snippet read "a reader ( BEGIN , then a SELECT )": restored code
    # was padded with spaces on both sides, also next to punctuation.
    text = readable_text("A reader (`BEGIN`, then a `SELECT`) cannot upgrade; `a`/`b`.")
    assert text == "A reader (BEGIN, then a SELECT) cannot upgrade; a/b."
    assert readable_text("use`x`now") == "use x now"  # beside a word it stays a word apart


def test_unclosed_fence_and_stray_backtick_do_not_lose_text() -> None:
    assert readable_text("a ` stray backtick and more words") == "a ` stray backtick and more words"
    assert readable_text("```\ncode to the end\nstill code") == "code to the end still code"


def test_cjk_and_crlf() -> None:
    text = readable_text("## 向量检索\r\n\r\n**混合检索**把 [BM25](https://x.org) 和向量结合。\r\n")
    assert text == "向量检索 混合检索把 BM25 和向量结合。"


def test_whitespace_is_collapsed() -> None:
    assert readable_text("  many\n\n\n   spaces\tand\ttabs  ") == "many spaces and tabs"


def test_embedding_input_prefix() -> None:
    out = embedding_input(
        "Rust errors", ["Rust errors", "The ? operator"], "Use `?` to **propagate**."
    )
    assert out == "Rust errors > The ? operator\n\nUse ? to propagate."
    assert embedding_input("Rust errors", ["Setup"], "x", prefix=False) == "x"
    assert embedding_input("T", [], "") == "T"
    assert embedding_input("", [], "body") == "body"
    assert embedding_input("[[Linked]] title", ["**Bold** heading"], "b") == (
        "Linked title > Bold heading\n\nb"
    )


def _hub_person_notes(shared_data: Path, count: int) -> list[str]:
    out: list[str] = []
    with tarfile.open(shared_data / HUB) as archive:
        for member in archive:
            if member.name.startswith("vault/01 - Community/People/") and member.isfile():
                handle = archive.extractfile(member)
                assert handle is not None
                out.append(handle.read().decode("utf-8"))
                if len(out) == count:
                    break
    return out


def _jaccard(a: str, b: str) -> float:
    sa, sb = set(re.findall(r"\w+", a.lower())), set(re.findall(r"\w+", b.lower()))
    return len(sa & sb) / max(len(sa | sb), 1)


def test_template_notes_stop_looking_alike(shared_data: Path) -> None:
    # The reason this module exists: raw template notes share most of their tokens.
    notes = _hub_person_notes(shared_data, 12)
    pairs = [(a, b) for i, a in enumerate(notes) for b in notes[i + 1 :]]
    raw = sum(_jaccard(a, b) for a, b in pairs) / len(pairs)
    clean = sum(_jaccard(readable_text(a), readable_text(b)) for a, b in pairs) / len(pairs)
    assert clean < raw * 0.8, (raw, clean)
    for note in notes:
        text = readable_text(note)
        assert "https" not in text and "git-footer" not in text and "%%" not in text
        assert "<!--" not in text and "[[" not in text


def test_cleaning_never_lengthens_text() -> None:
    # The chunker relies on this to skip measuring merges that are short in raw text.
    samples = [
        "`a`",
        "x`y`z",
        "^[inline]",
        "a[^1]b",
        "```\ncode\n```",
        "[[a|b]] [[c#d]] ![[e]]",
        "| a |\n|---|\n| b |",
        "&amp;&lt;&gt;",
        "<b>x</b> <!-- y --> %% z %%",
        "# h\n> q\n- [ ] t\n1. n",
    ]
    for sample in samples:
        assert len(readable_text(sample)) <= len(sample), sample


def test_private_use_characters_in_a_note_are_harmless() -> None:
    assert readable_text("odd \ue0007\ue001 text `code`") == "odd 7 text code"


def test_embedding_input_is_cut_at_a_word_within_max_chars() -> None:
    text = "Lemurs live on Madagascar. " * 100
    full = embedding_input("Lemurs", ["Habitat"], text)
    cut = embedding_input("Lemurs", ["Habitat"], text, max_chars=200)
    assert len(cut) <= 200 < len(full)
    assert full.startswith(cut)
    assert cut.startswith("Lemurs > Habitat") and not cut.endswith(" ")
    assert embedding_input("Lemurs", [], "short", max_chars=200) == embedding_input(
        "Lemurs", [], "short"
    )
