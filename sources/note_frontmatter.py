"""Split a markdown file into frontmatter and body, tolerating YAML that does not parse.

`sources` stays independent of `retrieval` (which has its own, fuller parser), so this is a
small one: PyYAML's safe loader first, then a line-by-line ``key: value`` fallback that
recovers what a person or a plugin most likely meant.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

__all__ = ["SplitNote", "as_aware_datetime", "as_str_list", "first_heading", "split_note"]

_FENCE = re.compile(r"\A---[ \t]*\n(.*?)(?:\n)?^(?:---|\.\.\.)[ \t]*$\n?", re.DOTALL | re.MULTILINE)
_FALLBACK_LINE = re.compile(r"^([A-Za-z_][\w -]*?)\s*:\s*(.*)$")
_LIST_LINE = re.compile(r"^\s+-\s*(.*)$")
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class SplitNote:
    """A note split in two. ``error`` says why the YAML was not read cleanly, if it was not."""

    frontmatter: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    has_frontmatter: bool = False
    error: str | None = None


def split_note(text: str) -> SplitNote:
    """Split ``text`` (newlines normalised) into a frontmatter mapping and the body after it."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    match = _FENCE.match(text)
    if match is None:
        return SplitNote(body=text)
    raw, body = match.group(1), text[match.end() :]
    try:
        loaded = yaml.safe_load(raw) if raw.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        return SplitNote(_fallback(raw), body, True, f"frontmatter is not valid YAML{where}")
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        return SplitNote({}, body, True, "frontmatter is not a mapping")
    return SplitNote({str(k): v for k, v in loaded.items()}, body, True, None)


def _fallback(raw: str) -> dict[str, Any]:
    """Recover ``key: value`` lines and ``- item`` lists from YAML the parser rejected."""
    result: dict[str, Any] = {}
    current: str | None = None
    for line in raw.split("\n"):
        item = _LIST_LINE.match(line)
        if item is not None and current is not None:
            existing = result.get(current)
            values = existing if isinstance(existing, list) else []
            values.append(_unquote(item.group(1)))
            result[current] = values
            continue
        pair = _FALLBACK_LINE.match(line)
        if pair is None:
            continue
        current = pair.group(1).strip()
        value = pair.group(2).strip()
        if value.startswith("[") and value.endswith("]") and not value.startswith("[["):
            result[current] = [_unquote(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            result[current] = _unquote(value) if value else None
    return result


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


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


def as_aware_datetime(value: Any) -> dt.datetime | None:
    """Frontmatter dates come as ``date``, naive or aware ``datetime`` or strings; UTC if unsaid."""
    if isinstance(value, dt.datetime):
        result = value
    elif isinstance(value, dt.date):
        result = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00")
        try:
            result = dt.datetime.fromisoformat(text)
        except ValueError:
            try:
                result = dt.datetime.fromisoformat(text[:10])
            except ValueError:
                return None
    else:
        return None
    return result if result.tzinfo is not None else result.replace(tzinfo=dt.UTC)


def first_heading(body: str) -> str | None:
    """The text of the first ``# `` heading, if the body has one."""
    match = _H1.search(body)
    return match.group(1).strip() if match else None


def as_tags(value: Any) -> tuple[str, ...]:
    """Frontmatter tags (a list or a space-separated string) without ``#`` or commas."""
    tags: list[str] = []
    for raw in as_str_list(value):
        for tag in raw.split():
            tag = tag.lstrip("#").strip(",")
            if tag and tag not in tags:
                tags.append(tag)
    return tuple(tags)
