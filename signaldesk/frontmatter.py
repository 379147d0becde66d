"""Split a note into its YAML frontmatter and its body, whatever shape the YAML is in.

Real vaults are full of frontmatter that YAML parsers reject: a tab where spaces
were meant, ``title: Foo: a subtitle`` with an unquoted colon, a block whose
closing ``---`` was never typed, a Templater placeholder that is not valid YAML.
Obsidian shows such notes anyway, so the index must too. The strict parser
(PyYAML ``safe_load``) handles the normal case; when it fails, a forgiving
line-by-line ``key: value`` reader recovers what it can instead of losing every
key, and :attr:`ParsedNote.error` says what went wrong. Nothing here raises.

Every value is made JSON-safe on the way out (dates and datetimes become ISO
strings, sets become lists, keys become strings) so downstream code can store
the mapping as JSON without a second look.
"""

from __future__ import annotations

import datetime as _dt
import logging
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = [
    "ParsedNote",
    "alias_values",
    "as_aware_datetime",
    "as_str_list",
    "as_tags",
    "first_heading",
    "first_text",
    "frontmatter_date",
    "note_title",
    "parse_date",
    "parse_note",
    "render_note",
    "tag_values",
    "unique_casefold",
]

_log = logging.getLogger(__name__)

# The C loader is several times faster on a 6,000-note vault; fall back when
# PyYAML was built without libyaml.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_OPEN_FENCE = re.compile(r"---[ \t]*")
_CLOSE_FENCE = re.compile(r"(?:---|\.\.\.)[ \t]*")
# A top-level key in the forgiving reader: anything up to the first ": " (or a
# colon at the end of the line), not starting with a list dash or a comment.
_KEY_LINE = re.compile(r"([^\s#\-:][^:]*?|-[^\s:][^:]*?)[ \t]*:(?:[ \t]+(.*?)|)[ \t]*$")
_LIST_ITEM = re.compile(r"-(?:[ \t]+(.*?)|)[ \t]*$")

# A "billion laughs" alias bomb parses into a small shared structure that
# explodes when walked; stop converting after this many values.
_MAX_VALUES = 20_000

_MD_SUFFIX = re.compile(r"\.md$", re.IGNORECASE)
_TAG_SPLIT = re.compile(r"[,\s]+")
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ParsedNote:
    """A note split into frontmatter and body.

    :param frontmatter: the YAML mapping, JSON-safe; ``{}`` when absent or unreadable.
    :param body: the text after the frontmatter block, newlines normalised to ``\\n``.
    :param body_line: 1-based line number in the file where ``body`` starts.
    :param error: why the YAML could not be parsed strictly, if it could not.
    """

    frontmatter: dict[str, Any]
    body: str
    body_line: int
    error: str | None


class _TooLarge(Exception):
    """The frontmatter expands to more values than any real note has."""


def parse_note(text: str) -> ParsedNote:
    """Split ``text`` (a whole note) into frontmatter and body; never raises.

    The block must start on the first line with ``---`` and end with ``---``
    (or ``...``). A block that is never closed is read forgivingly for as long
    as its lines look like ``key: value`` pairs; the rest is body. A closed
    block that holds no key at all (prose between two horizontal rules) is not
    treated as frontmatter, so its text is not lost from the body.
    """
    try:
        return _parse(text)
    except Exception as exc:  # pragma: no cover - a last resort, the parser above is total
        _log.warning("frontmatter parsing failed unexpectedly: %s", exc, exc_info=True)
        return ParsedNote({}, _normalise(text), 1, f"unexpected error: {exc}")


def _normalise(text: str) -> str:
    if text.startswith("\ufeff"):
        text = text[1:]
    # Lone CRs count as line breaks too, so line numbers match what an editor shows.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _parse(raw: str) -> ParsedNote:
    text = _normalise(raw)
    lines = text.split("\n")
    if not lines or not _OPEN_FENCE.fullmatch(lines[0]):
        return ParsedNote({}, text, 1, None)

    close = next((i for i in range(1, len(lines)) if _CLOSE_FENCE.fullmatch(lines[i])), None)
    if close is None:
        return _parse_unclosed(text, lines)

    block = lines[1:close]
    body = "\n".join(lines[close + 1 :])
    body_line = close + 2
    if not any(line.strip() and not line.lstrip().startswith("#") for line in block):
        return ParsedNote({}, body, body_line, None)

    data, error = _strict(block)
    if data is not None:
        return ParsedNote(data, body, body_line, None)
    loose = _forgiving(block)
    if not loose:
        # Nothing key-like between the fences: a horizontal rule, not frontmatter.
        return ParsedNote({}, text, 1, error)
    return ParsedNote(loose, body, body_line, error)


def _parse_unclosed(text: str, lines: list[str]) -> ParsedNote:
    end = 1
    while end < len(lines):
        line = lines[end]
        stripped = line.strip()
        # A blank line, a markdown heading or a line of prose: the body has begun.
        if not stripped or line.startswith("#"):
            break
        if not (_KEY_LINE.match(stripped) or line[:1] in (" ", "\t") or stripped[0] == "-"):
            break
        end += 1
    loose = _forgiving(lines[1:end])
    if not loose:
        return ParsedNote({}, text, 1, None)
    body = "\n".join(lines[end:])
    return ParsedNote(loose, body, end + 1, "frontmatter block is never closed with '---'")


def _strict(block: list[str]) -> tuple[dict[str, Any] | None, str | None]:
    source = "\n".join(block)
    try:
        loaded = yaml.load(source, Loader=_SafeLoader)  # safe: a SafeLoader subclass
    except yaml.YAMLError as exc:
        return None, _describe_yaml_error(exc)
    except (ValueError, TypeError, RecursionError, OverflowError) as exc:
        # safe_load raises these for e.g. an out-of-range timestamp like 2023-02-30.
        return None, f"invalid YAML value: {exc}"
    if loaded is None:
        return {}, None
    if not isinstance(loaded, dict):
        return None, f"frontmatter is a {type(loaded).__name__}, not a mapping"
    try:
        budget = [_MAX_VALUES]
        return {_key(k): _json_safe(v, budget) for k, v in loaded.items()}, None
    except (_TooLarge, RecursionError):
        return None, "frontmatter expands to too many values (YAML alias bomb?)"


def _describe_yaml_error(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        # +2: the mark is 0-based within the block and the block starts on line 2.
        return f"invalid YAML at line {mark.line + 2}: {problem}"
    return f"invalid YAML: {problem}"


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    return str(_json_safe(key, [_MAX_VALUES]))


def _json_safe(value: object, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooLarge
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, dict):
        return {_key(k): _json_safe(v, budget) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return [_json_safe(v, budget) for v in items]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _forgiving(block: list[str]) -> dict[str, Any]:
    """Read ``key: value`` lines one at a time, keeping whatever makes sense.

    Indented ``- item`` lines extend the list of the key above them; indented
    ``key: value`` lines under an empty key form a nested mapping, otherwise they
    are taken as top-level keys whose indentation went wrong.
    """
    result: dict[str, Any] = {}
    current: str | None = None  # last top-level key whose value was empty
    for line in block:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indented = line[:1] in (" ", "\t")
        item = _LIST_ITEM.match(stripped)
        if item is not None and current is not None:
            existing = result.get(current)
            items = existing if isinstance(existing, list) else []
            value = _scalar(item.group(1) or "")
            if value not in (None, ""):
                items.append(value)
            result[current] = items
            continue
        match = _KEY_LINE.match(stripped)
        if match is None:
            continue
        key, raw_value = match.group(1).strip().strip("'\""), match.group(2) or ""
        if indented and current is not None and not isinstance(result.get(current), list):
            nested = result.get(current)
            mapping = nested if isinstance(nested, dict) else {}
            mapping[key] = _scalar(raw_value)
            result[current] = mapping
            continue
        if raw_value:
            result[key] = _scalar(raw_value)
            current = None
        else:
            result[key] = None
            current = key
    return result


def _scalar(raw: str) -> Any:
    """One value from the forgiving reader: YAML's reading when it has one, else the text."""
    raw = raw.strip()
    if not raw:
        return None
    if raw.startswith("[[") and raw.endswith("]]"):
        # `key: [[Note]]` is a nested flow list to YAML but a wiki-link to the person.
        return raw
    try:
        loaded = yaml.load(raw, Loader=_SafeLoader)  # safe: a SafeLoader subclass
    except Exception:
        loaded = _unquote(raw)
        if loaded != raw:
            return loaded  # it was quoted: a string, whatever it looks like
        if loaded.startswith("[") and loaded.endswith("]"):
            return [part.strip().strip("'\"") for part in loaded[1:-1].split(",") if part.strip()]
        return loaded
    try:
        safe = _json_safe(loaded, [_MAX_VALUES])
    except (_TooLarge, RecursionError):
        return raw
    # A one-line flow mapping (`{a: b}`) in YAML that failed anyway: keep the text as written.
    if isinstance(safe, dict):
        return raw
    return safe


def _unquote(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return raw


def render_note(frontmatter: Mapping[str, Any], body: str) -> str:
    """A note: ``frontmatter`` as a YAML block, a blank line, then ``body``.

    The emitter quotes whatever needs it and never wraps a long value (a wrapped
    URL or title is still valid YAML, but not what a person expects to read).
    """
    header = yaml.safe_dump(
        dict(frontmatter),
        sort_keys=False,
        allow_unicode=True,
        width=1_000_000,
        default_flow_style=False,
    ).strip()
    return f"---\n{header}\n---\n\n{body.strip()}\n"


# -- reading values: what notes and plugins write in practice --------------------------


def as_str_list(value: Any) -> list[str]:
    """A frontmatter value that may be a list, a string or a comma list, as clean strings."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        items = [str(v) for v in value if v is not None and str(v).strip()]
    else:
        text = str(value)
        items = [p for p in re.split(r",\s*(?![^\[]*\]\])", text)] if "," in text else [text]
    return [i.strip() for i in items if i.strip()]


def as_aware_datetime(value: Any) -> _dt.datetime | None:
    """Frontmatter dates come as ``date``, naive or aware ``datetime`` or strings; UTC if unsaid."""
    if isinstance(value, _dt.datetime):
        result = value
    elif isinstance(value, _dt.date):
        result = _dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and value.strip():
        # The one date parser; a date followed by words ("2026-11-30 at noon") keeps its day.
        iso = parse_date(value) or parse_date(value.strip()[:10])
        if iso is None:
            return None
        result = _dt.datetime.fromisoformat(iso)
    else:
        return None
    return result if result.tzinfo is not None else result.replace(tzinfo=_dt.UTC)


def note_title(frontmatter: Mapping[str, Any], path: str, *, heading: str | None) -> str:
    """A note's title as a person expects it: the frontmatter ``title``, else its first
    ``# `` heading (``heading``: the caller's reading of it), else the file name."""
    name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    stem = _MD_SUFFIX.sub("", name) or name
    return first_text(frontmatter.get("title")) or heading or stem


def first_heading(body: str) -> str | None:
    """The text of the first ``# `` heading, if the body has one."""
    match = _H1.search(body)
    return match.group(1).strip() if match else None


def as_tags(value: Any) -> tuple[str, ...]:
    """Frontmatter tags, once each (see :func:`tag_values`)."""
    return tuple(unique_casefold(tag_values(value)))


def first_text(value: object) -> str | None:
    """A scalar frontmatter value as clean text (a list gives its first item)."""
    if isinstance(value, list):
        value = next((v for v in value if v not in (None, "")), None)
    if value is None or isinstance(value, dict | list):
        return None
    text = str(value).strip()
    return text or None


def tag_values(value: object) -> list[str]:
    """Tags as written in frontmatter: a list, nested lists, or a comma or space separated
    string; without ``#`` and edge slashes."""
    out: list[str] = []
    if value is None:
        return out
    if isinstance(value, list | tuple):
        for item in value:
            out.extend(tag_values(item))
        return out
    if isinstance(value, dict):
        return out
    for part in _TAG_SPLIT.split(str(value)):
        tag = part.strip().lstrip("#").strip("/")
        if tag:
            out.append(tag)
    return out


def alias_values(value: object) -> list[str]:
    """Aliases: a list, or a string that may list several names separated by commas."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [a for item in value for a in alias_values(item)]
    if isinstance(value, dict):
        return []
    text = str(value).strip()
    if not text:
        return []
    # An alias string may list several names separated by commas (older Obsidian).
    return [part.strip() for part in text.split(",") if part.strip()]


def unique_casefold(values: Iterable[str]) -> list[str]:
    """``values`` without repeats, ignoring case, first spelling kept."""
    seen: set[str] = set()
    out: list[str] = []
    for value in values:
        key = value.casefold()
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


def frontmatter_date(fm: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of ``keys`` (any case) holding a date, as an ISO string."""
    lowered = {k.lower(): v for k, v in fm.items()}
    for key in keys:
        value = first_text(lowered.get(key))
        if value is None:
            continue
        parsed = parse_date(value)
        if parsed is not None:
            return parsed
    return None


def parse_date(value: str) -> str | None:
    """A date or datetime as people write them (ISO, ``2026/11/30``, ``20261130``), as ISO."""
    text = value.strip().strip("'\"")
    try:
        if len(text) == 10:
            return _dt.date.fromisoformat(text).isoformat()
        return _dt.datetime.fromisoformat(text).isoformat()
    except ValueError:
        pass
    for fmt in ("%Y/%m/%d", "%Y.%m.%d", "%Y/%m/%d %H:%M", "%Y%m%d"):
        try:
            parsed = _dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
        return parsed.date().isoformat() if parsed.time() == _dt.time() else parsed.isoformat()
    return None
