"""What a signal note says: its file name, its frontmatter and a body a person wants to read.

Everything here is a pure function of the item, its score card and the settings,
so the same item always renders the same note (apart from the filing time).
Titles and texts are untrusted input: file names are built from a slug that
keeps only letters and digits, and every frontmatter value goes through a YAML
emitter, never string formatting.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from signaldesk.frontmatter import render_note
from signaldesk.frontmatter_patch import Scalar
from signaldesk.items import Item
from signaldesk.retrieval.scrubber import scrub_text, scrub_value
from signaldesk.scoring.records import ScoreCard
from signaldesk.signal_note import COMPOSITE_KEY, DIMENSIONS, HASH_KEY, ID_KEY, SIGNAL_TYPE

__all__ = [
    "GENERATED_KEYS",
    "OPTIONAL_GENERATED_KEYS",
    "generated_fields",
    "generated_hash",
    "key_points",
    "render_body",
    "render_signal_note",
    "signal_frontmatter",
    "slugify",
]


# The frontmatter triage owns: rewritten on every re-score, as long as a person has
# not edited any of them (the hash in HASH_KEY tells). Everything else in a signal
# note (title, tags, domain, dates, the body) is written once and then belongs to
# the person.
GENERATED_KEYS: tuple[str, ...] = (
    *(key for name in DIMENSIONS for key in (name, f"{name}_reason")),
    COMPOSITE_KEY,
    "threshold",
    "suggested_domain",
    "route_confidence",
    "route_reason",
    "scored_at",
    "learned",
    "learned_reason",
)
# Generated keys only a note whose score this vault's corrections moved has (see
# generated_fields); the hash leaves out keys a note does not have.
OPTIONAL_GENERATED_KEYS: tuple[str, ...] = ("learned", "learned_reason")
_NO_LONGER_LEARNED = "none of your corrections applies any more"

_SOURCE_KIND_LABEL = {
    "rss": "feed",
    "clipper": "Web Clipper",
    "newsletter": "newsletter",
    "tool_output": "tool output",
}

# -- file names -----------------------------------------------------------------

# Letters a plain NFKD decomposition does not reduce to ASCII.
_FOLD = str.maketrans(
    {
        "ß": "ss",
        "æ": "ae",
        "œ": "oe",
        "ø": "o",
        "đ": "d",
        "ð": "d",
        "ł": "l",
        "þ": "th",
        "\u0131": "i",
    }
)
_SLUG_MAX_BYTES = 150  # well under the 255-byte file name limit, with room for date and "-NN"


def _is_wide_script(char: str) -> bool:
    """CJK ideographs, kana and hangul: kept as they are (no sensible ASCII form)."""
    code = ord(char)
    return (
        0x3040 <= code <= 0x30FF  # hiragana, katakana
        or 0x3400 <= code <= 0x4DBF  # CJK extension A
        or 0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0xAC00 <= code <= 0xD7AF  # hangul syllables
        or 0xF900 <= code <= 0xFAFF  # CJK compatibility ideographs
        or 0x20000 <= code <= 0x2FA1F  # CJK extensions B and later
    )


def slugify(title: str, *, max_chars: int = 60, fallback: str = "untitled") -> str:
    """A file-name-safe slug of ``title``: lower-case, ASCII-folded, CJK kept, hyphenated.

    Only letters and digits survive (anything else, including ``/``, ``.``, NUL and
    emoji, becomes a separator), so the result can never name a path outside its
    folder, and it is never empty (``fallback`` then). Capped at ``max_chars``
    characters and 150 UTF-8 bytes, cut at a hyphen when one is near the end.
    """
    out: list[str] = []
    for char in unicodedata.normalize("NFKC", title).lower().translate(_FOLD):
        if char.isascii():
            out.append(char if char.isalnum() else "-")
            continue
        if _is_wide_script(char):
            out.append(char)
            continue
        category = unicodedata.category(char)
        if category[0] not in "LN":
            out.append("-")
            continue
        folded = "".join(
            c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c)
        )
        if folded.isascii():
            out.append("".join(c for c in folded if c.isalnum()) or "-")
        else:
            # Greek, Cyrillic, Arabic, ...: a letter is still better than nothing.
            out.append(unicodedata.normalize("NFC", folded))
    slug = re.sub(r"-{2,}", "-", "".join(out)).strip("-")
    slug = _cap(slug, max(1, max_chars))
    return slug or fallback


def _cap(slug: str, max_chars: int) -> str:
    cut = slug[:max_chars]
    while len(cut.encode("utf-8")) > _SLUG_MAX_BYTES:
        cut = cut[:-1]
    if len(cut) < len(slug):
        hyphen = cut.rfind("-")
        if hyphen >= len(cut) // 2:
            cut = cut[:hyphen]
    return cut.strip("-")


# -- key points -------------------------------------------------------------------

_FENCE = re.compile(r"^\s*(```|~~~)")
# A line of nothing but images, each maybe a link: ![alt](src) or [![alt](src)](href).
_IMAGES_ONLY = re.compile(r"^\s*(?:\[?!\[[^\]]*\]\([^)\s]*\)(?:\]\([^)\s]*\))?\s*)+$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“(\[]?[A-Z0-9])|(?<=[\u3002\uff01\uff1f])")
_WORD = re.compile(r"[^\W\d_]{3,}|\d+(?:\.\d+)+", re.UNICODE)
_WIDE_RUN = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_NOISE = re.compile(r"(?<!\\)(\*\*|__|`|\*(?=\S)|(?<=[^\s\\])\*)")
_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!<>|~])")
# An inline code span, kept as written: its marks are code (`__init__`, `a*b`), not emphasis.
_CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_HIDDEN_SPAN = re.compile("\x00(\\d+)\x00")
# A line inside a paragraph that reads as a title, not a sentence: bold all through,
# italic all through without closing punctuation (a caption: "*Code with too much
# nesting*" above a code block), or a short first line with no closing punctuation and a
# capitalised line below it.
_BOLD_LINE = re.compile(r"^(\*\*|__)[^*_].*\1$")
_ITALIC_LINE = re.compile(r"^([*_])[^*_](?:.*[^*_\s])?\1$")
_SENTENCE_CLOSE = re.compile(r"[.!?:;,…)\]\"'\u201d\u2019]$")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(\[[ xX]\]\s+)?")
_STOPWORDS = """
    the and for that this with from have has had are was were will would could should
    been being into onto than then them they their there these those what when where
    which while who whom whose why how its it's not but you your yours our ours his her
    hers she him also just more most some such very can may might must one two any all
    each other about after before over under again out off only own same too here
"""
_STOP = frozenset(_STOPWORDS.split())


def _prose_units(text: str) -> list[str]:
    """Sentences and list items of ``text``, skipping code, tables, headings and images."""
    units: list[str] = []
    in_code = False
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            # Links become their text before the split: "[One. Two](u)" is not two units.
            joined = _MD_LINK.sub(r"\1", " ".join(paragraph))
            units.extend(s.strip() for s in _sentences(joined) if s.strip())
            paragraph.clear()

    lines = text.splitlines()
    for number, line in enumerate(lines):
        if _FENCE.match(line):
            flush()
            in_code = not in_code
            continue
        stripped = line.strip()
        if in_code or not stripped:
            flush()
            continue
        if stripped.startswith(("#", "|", ">", "<", "---", "===")) or stripped.startswith("!["):
            flush()
            continue
        if _LIST_MARK.match(line):
            flush()
            units.append(_LIST_MARK.sub("", line).strip())
            continue
        following = lines[number + 1].strip() if number + 1 < len(lines) else ""
        if (
            _BOLD_LINE.match(stripped)
            or (_ITALIC_LINE.match(stripped) and not _SENTENCE_CLOSE.search(stripped[1:-1]))
            or (
                not paragraph  # the first line of a block: hard-wrapped prose never qualifies
                and len(stripped) <= 80
                and following[:1].isupper()
                and not _SENTENCE_CLOSE.search(_MD_LINK.sub(r"\1", stripped))
            )
        ):
            flush()  # a title inside a paragraph: never run into the text below it
            continue
        paragraph.append(stripped)
    flush()
    cleaned = []
    for unit in units:
        plain = " ".join(_plain(unit).split())
        # CJK packs a word into one or two characters: count them double.
        width = len(plain) + sum(len(run) for run in _WIDE_RUN.findall(plain))
        if width >= 25 and sum(c.isalpha() for c in plain) >= 10:
            cleaned.append(plain)
    return cleaned


def _sentences(paragraph: str) -> list[str]:
    """``paragraph`` cut into sentences, never inside a code span (`BEGIN ... COMMIT`)."""
    spans: list[str] = []

    def hide(span: re.Match[str]) -> str:
        spans.append(span.group(0))
        return f"\x00{len(spans) - 1}\x00"

    hidden = _CODE_SPAN.sub(hide, paragraph)
    return [
        _HIDDEN_SPAN.sub(lambda m: spans[int(m.group(1))], s) for s in _SENTENCE_END.split(hidden)
    ]


def _plain(unit: str) -> str:
    """``unit`` without emphasis, link targets and escapes; its code spans kept whole
    (a paragraph's links are gone already, a list item's are not)."""
    linked = _MD_LINK.sub(r"\1", unit)
    out: list[str] = []
    start = 0
    for span in _CODE_SPAN.finditer(linked):
        out.append(_MD_ESCAPE.sub(r"\1", _MD_NOISE.sub("", linked[start : span.start()])))
        out.append(span.group(0))
        start = span.end()
    out.append(_MD_ESCAPE.sub(r"\1", _MD_NOISE.sub("", linked[start:])))
    return "".join(out).strip()


def _terms(sentence: str) -> list[str]:
    lowered = sentence.lower()
    words = [w for w in _WORD.findall(lowered) if w not in _STOP and not _WIDE_RUN.fullmatch(w)]
    for run in _WIDE_RUN.findall(lowered):
        words.extend(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    return words


def key_points(text: str, *, limit: int = 5, max_chars: int = 280, summary: str = "") -> list[str]:
    """The few sentences that carry the most of ``text``'s vocabulary, in reading order.

    Extractive and deterministic: each sentence (or list item) scores the summed
    frequency of its content words across the text, divided by the square root of
    its length so long sentences do not win by size; the opening sentence gets a
    small bonus (articles tend to lead with their point). Near-repeats are skipped,
    and so is what ``summary`` (the note's Summary) already says. A sentence that ends
    in a colon only leads into what follows it (a code block, a list) and is not a point.
    """
    if limit <= 0:
        return []
    units = _prose_units(text)
    if not units:
        return []
    terms = [_terms(u) for u in units]
    frequency = Counter(t for ts in terms for t in set(ts))
    scored: list[tuple[float, int]] = []
    for index, ts in enumerate(terms):
        if not ts or units[index].endswith(":"):
            continue
        weight = sum(frequency[t] for t in set(ts) if frequency[t] > 1) / math.sqrt(len(ts))
        if index == 0:
            weight *= 1.25
        scored.append((weight, index))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    chosen: list[int] = []
    seen: list[set[str]] = [said] if (said := set(_terms(summary))) else []
    for _, index in scored:
        words = set(terms[index])
        if any(len(words & other) >= 0.7 * min(len(words), len(other)) for other in seen):
            continue
        chosen.append(index)
        seen.append(words)
        if len(chosen) == limit:
            break
    return [_clip(units[i], max_chars) for i in sorted(chosen)]


def _clip(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1]
    space = cut.rfind(" ")
    cut = (cut[:space] if space > max_chars // 2 else cut).rstrip(" ,;:")
    if _CODE_SPAN.sub("", cut).count("`") % 2:
        cut += "`"  # cut inside a code span: close it, or the mark runs into the "…"
    return cut + "…"


# -- body -------------------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,6})(?=\s)")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u2028\u2029]")


def _one_line(text: str) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())


def _first_paragraph(text: str) -> str:
    """The opening prose, up to about 200 characters, never past the first heading that
    follows it (so "... and higher. Why this change is happening ..." cannot happen)."""
    head: list[str] = []
    in_code = seen_prose = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_code = not in_code
        elif not in_code and _HEADING.match(line.strip()):
            if seen_prose:
                break
            continue
        elif not in_code and _IMAGES_ONLY.match(line):
            # A picture is no opening prose: under one, a Medium post's Summary was its
            # whole markdown on one line ("#### Using Wild ... ![](...) #### HEY, ...").
            continue
        elif not in_code and line.strip():
            seen_prose = True
        head.append(line)
    units = _prose_units("\n".join(head))
    paragraph: list[str] = []
    for unit in units:
        paragraph.append(unit)
        if sum(len(u) for u in paragraph) > 200:
            break
    return " ".join(paragraph)


def _heading_key(text: str) -> str:
    plain = _MD_NOISE.sub("", _HEADING.sub("", text.strip()))
    return " ".join(plain.casefold().split()).rstrip(" .:;!?")


def _without_leading_title(markdown: str, title: str) -> str:
    """``markdown`` without its first line when that line is the note's title again.

    Pages open with their own title as a heading, a text drop with its first line (which
    became the title): under the note's ``# title`` that read twice. A heading that is
    most of the title counts too ("Path traversal in tarsafe 3.2" under "Path traversal
    in tarsafe 3.2 ...; upgrade to 3.2.4").
    """
    lines = markdown.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or _FENCE.match(lines[first]):
        return markdown
    line, wanted = _heading_key(lines[first]), _heading_key(title)
    heading = bool(_HEADING.match(lines[first].strip()))
    same = line == wanted or (
        heading and len(line) >= 0.5 * len(wanted) and wanted.startswith(line)
    )
    if not line or not same:
        return markdown
    return "\n".join(lines[first + 1 :]).lstrip("\n")


def _demote_headings(markdown: str) -> str:
    """Move the content's headings down so they nest under "## Content": its shallowest
    heading becomes "###" and the others keep their distance from it (a page whose
    sections are "##" gets "###", not "####": an outline without a skipped level)."""
    lines = markdown.splitlines()
    levels: list[int | None] = []
    in_code = False
    for line in lines:
        if _FENCE.match(line):
            in_code = not in_code
        match = None if in_code else _HEADING.match(line)
        levels.append(len(match.group(1)) if match else None)
    present = [level for level in levels if level is not None]
    if not present:
        return markdown
    shift = max(0, 3 - min(present))
    return "\n".join(
        line if level is None else "#" * min(6, level + shift) + line[level:]
        for line, level in zip(lines, levels, strict=True)
    )


def _excerpt(markdown: str, max_chars: int) -> tuple[str, int]:
    """``markdown`` cut at a paragraph break near ``max_chars``, and how much was left out."""
    text = _CONTROL.sub("", markdown).strip()
    if len(text) <= max_chars:
        return text, 0
    cut = text[:max_chars]
    brk = cut.rfind("\n\n")
    if brk > max_chars // 2:
        cut = cut[:brk]
    if cut.count("```") % 2:
        cut += "\n```"  # never leave a code fence open: the rest of the note would be code
    return cut.rstrip(), len(text) - len(cut)


def _date_text(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.date().isoformat() if value.time() == datetime.min.time() else value.isoformat()


def render_body(
    item: Item,
    *,
    key_point_count: int = 5,
    summary_chars: int = 600,
    content_chars: int = 12_000,
    arrived: datetime | None = None,
) -> str:
    """The note body: the title, then Summary, Key points, Content and Source sections."""
    title = _one_line(item.title) or "Untitled"
    # The feed's summary is markdown too: take its prose, never a flattened code block.
    summary = (
        _first_paragraph(item.summary or "")
        or _first_paragraph(item.text)
        or _one_line(item.summary or "")
    )
    summary = _clip(summary, summary_chars) if summary else "_No summary available._"
    points = key_points(item.text, limit=key_point_count, summary=summary)
    text = _without_leading_title(item.text, title)
    content, left = _excerpt(_demote_headings(text), content_chars)
    lines = [f"# {title}", "", "## Summary", "", summary, "", "## Key points", ""]
    lines += [f"- {p}" for p in points] or ["_Nothing stood out: see the content below._"]
    lines += ["", "## Content", "", content or "_The source gave no text._"]
    if left:
        lines += ["", f"_… {left:,} more characters: see the source._"]
    lines += ["", "## Source", ""]
    if item.url:
        lines.append(f"- Link: <{item.url}>")
    if item.author:
        lines.append(f"- Author: {_one_line(item.author)}")
    # A mail's site is its sender's name, most often the author again: said once.
    if item.site_name and not (item.source_kind == "newsletter" and item.site_name == item.author):
        lines.append(f"- Site: {_one_line(item.site_name)}")
    if item.published:
        lines.append(f"- Published: {_date_text(item.published)}")
    how = _SOURCE_KIND_LABEL.get(item.source_kind, item.source_kind)
    where = f" `{_one_line(item.source_id)}`" if item.source_id else ""
    if item.source_kind == "tool_output":
        # Every tool output has the same source id; the tool and the file say where from.
        tool, drop = item.extra.get("tool"), item.extra.get("drop_file")
        named = [f"`{_one_line(str(v))}`" for v in (tool, drop) if v]
        where = f" {' from '.join(named)}" if named else ""
    when = f" on {arrived.date().isoformat()}" if arrived else ""
    lines.append(f"- Arrived: via {how}{where}{when}")
    if item.origin_path:
        lines.append(f"- Original note: `{_one_line(item.origin_path)}`")
    return "\n".join(lines) + "\n"


# -- frontmatter --------------------------------------------------------------------


def generated_fields(
    card: ScoreCard,
    *,
    threshold: float,
    scored_at: datetime,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Scalar]:
    """The triage-owned frontmatter fields for ``card`` (see :data:`GENERATED_KEYS`).

    :param previous: the note's frontmatter when re-scoring: a ``learned`` shift it shows
        that the card no longer has (the corrections were undone) is set to 0, not left.
    """
    fields: dict[str, Scalar] = {}
    for name in DIMENSIONS:
        score = card.dimension(name)
        fields[name] = round(float(score.value), 3)
        fields[f"{name}_reason"] = _one_line(score.reason)
    fields["composite"] = round(float(card.composite), 3)
    fields["threshold"] = round(float(threshold), 3)
    fields["suggested_domain"] = card.route.domain
    fields["route_confidence"] = round(float(card.route.confidence), 3)
    fields["route_reason"] = _one_line(card.route.reason)
    fields["scored_at"] = scored_at.isoformat(timespec="seconds")
    if card.learned is not None:
        fields["learned"] = round(float(card.learned.value), 3)
        fields["learned_reason"] = _one_line(card.learned.reason)
    elif previous is not None and previous.get("learned") is not None:
        fields["learned"] = 0.0
        fields["learned_reason"] = _NO_LONGER_LEARNED
    return fields


def generated_hash(values: Mapping[str, Any]) -> str:
    """A short hash of the generated fields as they read back from a note."""
    # Keys a note does not have are left out, so a note written before a key existed
    # (``learned``) keeps its hash.
    canonical = {
        key: round(float(v), 3) if isinstance(v, int | float) and not isinstance(v, bool) else v
        for key, v in ((k, values.get(k)) for k in GENERATED_KEYS)
        if v is not None
    }
    blob = json.dumps(canonical, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _tag(raw: str) -> str | None:
    """An Obsidian-valid tag: no spaces or punctuation other than ``-``, ``_`` and ``/``."""
    tag = re.sub(r"[^\w/-]+", "-", raw.strip().lstrip("#"), flags=re.UNICODE).strip("-/")
    if not tag or tag.isdigit():
        return None
    return tag[:64]


def signal_frontmatter(
    item: Item,
    card: ScoreCard,
    *,
    item_id: str,
    domain: str,
    threshold: float,
    now: datetime,
) -> dict[str, Any]:
    """The whole frontmatter of a new signal note (SPEC sections 2 and 5), flat keys."""
    tags: list[str] = ["signal", domain]
    for raw in item.tags:
        tag = _tag(raw)
        if tag and tag not in tags and tag != "clippings":
            tags.append(tag)
    # Local wall-clock time without an offset: the form Obsidian's Properties view
    # shows as a date-time (with an offset it falls back to plain text).
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S")
    meta: dict[str, Any] = {
        "title": _one_line(item.title) or "Untitled",
        "type": SIGNAL_TYPE,
        "domain": domain,
        "tags": tags,
        "created": stamp,
        "updated": stamp,
    }
    if item.url:
        meta["source"] = item.url
    meta["source_kind"] = item.source_kind
    if item.author:
        meta["author"] = _one_line(item.author)
    if item.published:
        meta["published"] = _date_text(item.published)
    meta["status"] = "active"
    fields = generated_fields(card, threshold=threshold, scored_at=now)
    meta.update(fields)
    meta[ID_KEY] = item_id
    meta[HASH_KEY] = generated_hash(fields)
    return meta


def render_signal_note(meta: Mapping[str, Any], body: str) -> str:
    """Frontmatter and body as one note. The emitter quotes whatever needs it.

    Credentials in what the item carried (a tool's output, an article) are scrubbed:
    signaldesk wrote this note, so it must not copy a secret into the vault.
    """
    return render_note(scrub_value(dict(meta)), scrub_text(body))
