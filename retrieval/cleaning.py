"""The text a person reads in a note, which is what gets embedded.

Why not embed the raw markdown: in a template-heavy vault most of the bytes of
a short note are the same on every note — an "Edit in GitHub" footer of long
URLs, badge images, HTML comments left by the template, wiki-link brackets and
block ids. A static embedding model averages token vectors, so those shared
tokens outweigh the few words that make a note itself, and whole notes end up as
nearly identical vectors that rank at random. Stripping the markup back to the
words a reader sees (link text but not the URL, an alias but not the target's
brackets, code identifiers but not the fences) gives each chunk a vector that
is about its own content. The stored chunk text keeps its markdown; only the
embedding input is cleaned.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

__all__ = [
    "CODE_CLOSE",
    "CODE_OPEN",
    "CODE_PLACEHOLDER",
    "HTML_COMMENT",
    "embedding_input",
    "readable_text",
    "without_badges",
]

# Placeholders for code while the rest of the text is cleaned (private-use chars
# cannot occur in a note by accident in any meaningful way); excerpt.py uses them too.
CODE_OPEN, CODE_CLOSE = "\ue000", "\ue001"
CODE_PLACEHOLDER = re.compile(f"{CODE_OPEN}(\\d+){CODE_CLOSE}")

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}(?=[^`]*$)|~{3,})")
# [^`] rather than .+? so a lone backtick costs one scan to the next one, not to the end.
_INLINE_CODE = re.compile(r"(`+)([^`]+)\1")
HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_OBSIDIAN_COMMENT = re.compile(r"%%.*?%%", re.DOTALL)
_EMBED = re.compile(r"!\[\[[^\]\n]*\]\]")
_WIKILINK = re.compile(r"\[\[([^\]\n]*)\]\]")
# One level of nested parentheses inside a URL (Wikipedia-style links).
_URL_PART = r"(?:[^()\s]++|\([^()\s]*+\))*+"
_LINK_TARGET = rf"\(\s*<?{_URL_PART}>?(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
_IMAGE = re.compile(rf"!\[([^\]\n]*)\]{_LINK_TARGET}")
_LINKED_IMAGE = re.compile(rf"\[\s*!\[([^\]\n]*)\]{_LINK_TARGET}\s*\]{_LINK_TARGET}")
_LINK = re.compile(rf"\[([^\]\n]*)\]{_LINK_TARGET}")
_REF_LINK = re.compile(r"\[([^\]\n]+)\]\[[^\]\n]*\]")
_REF_DEFINITION = re.compile(r"^ {0,3}\[(?!\^)[^\]\n]+\]:\s*\S+.*$", re.MULTILINE)
_BADGE_URL = re.compile(
    r"shields\.io|badgen\.net|badge\.fury|/badges?[/.?]|badge\.svg|travis-ci|codecov\.io"
    r"|circleci\.com|buymeacoffee|ko-fi\.com/img|github\.com/[^)\s]+/workflows/",
    re.IGNORECASE,
)
_IMAGE_FILE_NAME = re.compile(r"\.(?:png|jpe?g|gif|svg|webp|bmp|avif)$", re.IGNORECASE)
# Known schemes rather than "any word before ://": a pattern that starts with a
# short set of letters lets the regex engine skip ahead instead of trying every position.
_SCHEMES = r"(?:https?|ftp|file|obsidian|zotero|mailto|ssh|git|ws|wss|s3|gs)"
_AUTOLINK = re.compile(rf"<{_SCHEMES}:[^\s<>]*>")
_URL = re.compile(rf"{_SCHEMES}://[^\s<>\]\"')]*[^\s<>\]\"').,;:!?]")
_WWW = re.compile(r"www\.[^\s<>]+[^\s<>.,;:!?)]")
_HTML_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>]*)?/?>")
_FOOTNOTE_REF = re.compile(r"\[\^[^\]\s]+\](?::)?")
_INLINE_FOOTNOTE = re.compile(r"\^\[([^\]]*)\]")
# A literal first keeps these fast: the nested look-behind checks the character before.
_BLOCK_ID = re.compile(r"\^(?<=(?<!\S)\^)[A-Za-z0-9-]+[ \t]*$", re.MULTILINE)
_HASHES = re.compile(r"#+")
_CALLOUT = re.compile(r"\[![\w-]+\][+-]?")
_BLOCKQUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.MULTILINE)
_TASK = re.compile(r"^([ \t]*)(?:[-*+]|\d+[.)])[ \t]+\[[ xX\-/<>!?*]\](?=\s)", re.MULTILINE)
_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+", re.MULTILINE)
_RULE = re.compile(r"^[ \t]*([-*_])(?:[ \t]*\1){2,}[ \t]*$", re.MULTILINE)
_TABLE_SEPARATOR = re.compile(
    r"^[ \t]*(?=[^\n]*\|)\|?(?:[ \t]*:?-+:?[ \t]*\|)*[ \t]*:?-+:?[ \t]*\|?[ \t]*$", re.MULTILINE
)
_EMPHASIS = re.compile(r"[*_]+")
_STRIKE_HIGHLIGHT = re.compile(r"~~|==")


def readable_text(markdown: str) -> str:
    """Return the words a person reads in ``markdown``, on one line.

    Removed: link and image URLs (link text and meaningful alt text stay), badge
    images, raw HTML tags, ``<!-- -->`` and ``%% %%`` comments, embeds, wiki-link
    brackets (``[[Note|alias]]`` reads ``alias``, ``[[Note#Heading]]`` reads
    ``Note Heading``), block ids, footnote markers, heading hashes, list and quote
    markers, emphasis, table pipes and bare URLs. Code keeps its words; only the
    fences and backticks go. Whitespace runs become one space.
    """
    if not markdown:
        return ""
    code: list[str] = []
    text = markdown.replace("\r\n", "\n").replace("\r", "\n")
    if CODE_OPEN in text or CODE_CLOSE in text:
        # A note holding our placeholder characters must not confuse the restore step.
        text = text.replace(CODE_OPEN, " ").replace(CODE_CLOSE, " ")
    # Each pass runs only when its trigger character occurs: most chunks need few.
    if "`" in text or "~~~" in text:
        text = _extract_code(text, code)
    if "<!--" in text:
        text = HTML_COMMENT.sub(" ", text)
    if "%%" in text:
        text = _OBSIDIAN_COMMENT.sub(" ", text).replace("%%", " ")
    if "[" in text:
        text = _EMBED.sub(" ", text)
        text = _WIKILINK.sub(_wikilink_text, text)
        if "](" in text:
            text = _LINKED_IMAGE.sub(lambda m: _image_text(m.group(0), m.group(1)), text)
            text = _IMAGE.sub(lambda m: _image_text(m.group(0), m.group(1)), text)
            text = _LINK.sub(r"\1", text)
        if "]:" in text:
            text = _REF_DEFINITION.sub(" ", text)
        if "][" in text:
            text = _REF_LINK.sub(r"\1", text)
        if "^" in text:
            text = _INLINE_FOOTNOTE.sub(r" \1 ", text)
            text = _FOOTNOTE_REF.sub("", text)
        text = _TASK.sub(r"\1", text)
        text = _CALLOUT.sub(" ", text)
    if ":" in text:
        if "<" in text:
            text = _AUTOLINK.sub(" ", text)
        if "://" in text:
            text = _URL.sub(" ", text)
    if "www." in text:
        text = _WWW.sub(" ", text)
    if "<" in text:
        text = _HTML_TAG.sub(" ", text)
    if "^" in text:
        text = _BLOCK_ID.sub(" ", text)
    if "---" in text or "***" in text or "___" in text:
        text = _RULE.sub(" ", text)
    if "|" in text:
        text = _TABLE_SEPARATOR.sub(" ", text).replace("|", " ")
    if "#" in text:
        text = _HASHES.sub(_hashes, text)
    if ">" in text:
        text = _BLOCKQUOTE.sub(" ", text)
    text = _LIST_MARKER.sub(" ", text)
    if "~~" in text or "==" in text:
        text = _STRIKE_HIGHLIGHT.sub("", text)
    if "*" in text or "_" in text:
        text = _EMPHASIS.sub(_emphasis, text)
    if "&" in text:
        text = html.unescape(text)
    if code:
        text = CODE_PLACEHOLDER.sub(lambda m: _restored_code(m, code), text)
    return " ".join(text.split())


def _restored_code(match: re.Match[str], code: list[str]) -> str:
    """The code's words where its placeholder was, spaced from a word beside it only:
    "a reader (`BEGIN`, then" reads "a reader (BEGIN, then", not "( BEGIN , then"."""
    text, start, end = match.string, match.start(), match.end()
    before = " " if start and text[start - 1].isalnum() else ""
    after = " " if end < len(text) and text[end].isalnum() else ""
    return f"{before}{code[int(match.group(1))]}{after}"


def embedding_input(
    title: str,
    heading_path: Sequence[str],
    text: str,
    *,
    prefix: bool = True,
    max_chars: int = 0,
) -> str:
    """What gets embedded for one chunk: ``"Title > Heading > Sub"`` then the readable text.

    The prefix tells the model which note and section a short chunk belongs to;
    a heading equal to the one before it (the H1 that repeats the title) is
    given once. ``prefix=False`` embeds the readable text alone, so the benefit
    of the prefix can be measured. ``max_chars`` (when above 0) cuts the result
    at the last word boundary within that many characters.
    """
    embedded = _embedding_input(title, heading_path, text, prefix=prefix)
    if 0 < max_chars < len(embedded):
        cut = embedded[:max_chars]
        space = cut.rfind(" ")
        return cut[:space] if space > max_chars // 2 else cut
    return embedded


def _embedding_input(title: str, heading_path: Sequence[str], text: str, *, prefix: bool) -> str:
    body = readable_text(text)
    if not prefix:
        return body
    parts: list[str] = []
    for part in (title, *heading_path):
        clean = readable_text(part)
        if clean and (not parts or clean.casefold() != parts[-1].casefold()):
            parts.append(clean)
    head = " > ".join(parts)
    if not head:
        return body
    return f"{head}\n\n{body}" if body else head


def _extract_code(text: str, code: list[str]) -> str:
    """Swap fenced blocks and inline code for placeholders, keeping their words in ``code``."""
    if "```" not in text and "~~~" not in text:
        return _INLINE_CODE.sub(lambda m: _keep_code(m, code), text)
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        opening = _FENCE_OPEN.match(line)
        if opening is None:
            out.append(line)
            i += 1
            continue
        fence = opening.group(1)
        body: list[str] = []
        i += 1
        while i < len(lines):
            closing = lines[i].strip()
            if closing.startswith(fence[0] * len(fence)) and not closing.strip(fence[0]):
                i += 1
                break
            body.append(lines[i])
            i += 1
        code.append("\n".join(body))
        out.append(f"{CODE_OPEN}{len(code) - 1}{CODE_CLOSE}")
    joined = "\n".join(out)

    return _INLINE_CODE.sub(lambda m: _keep_code(m, code), joined)


def _keep_code(match: re.Match[str], code: list[str]) -> str:
    code.append(match.group(2).strip())
    return f"{CODE_OPEN}{len(code) - 1}{CODE_CLOSE}"


def _hashes(match: re.Match[str]) -> str:
    """Heading markers, closing hashes and the '#' of a #tag go; 'C#' and '#1' stay."""
    text, start, end = match.string, match.start(), match.end()
    before = text[start - 1] if start else "\n"
    after = text[end] if end < len(text) else "\n"
    if before not in " \t\n":
        return match.group(0)  # C#, a URL fragment
    if after in " \t\n":
        return " "  # heading marker or closing hashes
    if end - start == 1 and not after.isdigit():
        return ""  # a #tag reads as its word
    return match.group(0)


def _emphasis(match: re.Match[str]) -> str:
    """Emphasis delimiters go; snake_case and 2*3 keep theirs.

    A run stays only between two ASCII letters or digits, and only when it is
    underscores or a single '*': Chinese or Japanese text has no spaces around
    ``**bold**``, so "inside a word" cannot mean any letter there.
    """
    text, start, end = match.string, match.start(), match.end()
    run = match.group(0)
    if start > 0 and end < len(text) and (run == "*" or set(run) == {"_"}):
        before, after = text[start - 1], text[end]
        if before.isascii() and before.isalnum() and after.isascii() and after.isalnum():
            return run
    return ""


def _wikilink_text(match: re.Match[str]) -> str:
    inner = match.group(1)
    target, _, alias = inner.partition("|")
    if alias.strip():
        return alias.strip()
    note, _, anchor = target.partition("#")
    note = note.strip().rsplit("/", 1)[-1]
    if note.lower().endswith(".md"):
        note = note[:-3]
    anchor = anchor.strip()
    if anchor.startswith("^"):
        anchor = ""  # a block reference: its id means nothing to a reader
    anchor = anchor.replace("#", " ")
    return f"{note} {anchor}".strip()


def without_badges(markdown: str) -> str:
    """``markdown`` without its status-badge images (shields.io, CI, sponsor buttons),
    linked or not; every other image and all other text stay as written."""
    if "![" not in markdown:
        return markdown

    def drop(match: re.Match[str]) -> str:
        return "" if _BADGE_URL.search(match.group(0)) else match.group(0)

    return _IMAGE.sub(drop, _LINKED_IMAGE.sub(drop, markdown))


def _image_text(whole: str, alt: str) -> str:
    alt = alt.strip()
    if _BADGE_URL.search(whole) or not alt or _IMAGE_FILE_NAME.search(alt):
        return " "
    return f" {alt} "
