"""Set a few frontmatter keys of a note in place, leaving every other byte as it was.

Triage adds its scores to a clipping a person saved and refreshes them in signal
notes a person may have edited since. Re-dumping the whole YAML block would
reorder keys, change quoting and drop comments, so instead the block is edited
line by line: a line ``key: ...`` (with its indented continuation lines) is
replaced, a missing key is appended before the closing fence, and the body after
the fence is carried over byte for byte. Values are written as one-line YAML
scalars that parse back to exactly what was given.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import yaml

from signaldesk.errors import SignaldeskError

__all__ = [
    "FrontmatterPatchError",
    "RawNote",
    "Value",
    "patch_frontmatter",
    "split_raw",
    "yaml_scalar",
]

Scalar = str | float | int | bool | None
# A key's value: a scalar, or a list of strings (a note's tags), written one item a line.
Value = Scalar | list[str]

_BOM = b"\xef\xbb\xbf"
_OPEN = re.compile(rb"---[ \t]*")
_CLOSE = re.compile(rb"(?:---|\.\.\.)[ \t]*")
# Characters YAML does not allow raw in a double-quoted scalar, or reads as line breaks.
_YAML_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


class FrontmatterPatchError(SignaldeskError):
    """A note's frontmatter cannot be edited safely (unclosed block, or YAML that would break)."""


@dataclass(frozen=True, slots=True)
class RawNote:
    """A note's bytes cut into the frontmatter block and the body.

    :param head: the BOM (if any) and the opening fence line, with its line ending.
    :param block: the lines between the fences, without line endings.
    :param tail: the closing fence line with its line ending.
    :param body: everything after the closing fence, untouched.
    :param newline: the line ending the block uses.
    :param has_frontmatter: whether the note had a (closed) block at all.
    """

    head: bytes
    block: tuple[bytes, ...]
    tail: bytes
    body: bytes
    newline: bytes
    has_frontmatter: bool


def split_raw(data: bytes) -> RawNote:
    """Cut ``data`` into frontmatter and body (see :class:`RawNote`).

    :raises FrontmatterPatchError: the note opens a frontmatter block it never closes
        (editing it could turn the person's body into YAML or the other way round).
    """
    bom = _BOM if data.startswith(_BOM) else b""
    text = data[len(bom) :]
    first_end = text.find(b"\n")
    first = text if first_end < 0 else text[:first_end]
    newline = b"\r\n" if first.endswith(b"\r") else b"\n"
    if first_end < 0 or not _OPEN.fullmatch(first.rstrip(b"\r")):
        return RawNote(bom, (), b"", text, newline, False)
    head = bom + text[: first_end + 1]
    pos = first_end + 1
    block: list[bytes] = []
    while pos <= len(text):
        end = text.find(b"\n", pos)
        line_end = len(text) if end < 0 else end + 1
        line = text[pos:line_end]
        bare = line.rstrip(b"\n").rstrip(b"\r")
        if _CLOSE.fullmatch(bare):
            return RawNote(head, tuple(block), line, text[line_end:], newline, True)
        block.append(bare)
        if end < 0:
            break
        pos = line_end
    raise FrontmatterPatchError("the note's frontmatter block is never closed with '---'")


def yaml_scalar(value: Scalar) -> str:
    """``value`` as a one-line YAML scalar that reads back as the same value.

    Strings are double-quoted (JSON's escaping, plus the few characters YAML reads
    differently); floats are written with ``repr`` (non-finite ones as YAML's ``.nan``
    and ``.inf``).
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    quoted = json.dumps(value, ensure_ascii=False)
    return _YAML_UNSAFE.sub(lambda m: _escape(m.group(0)), quoted)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _key_span(block: list[bytes], key: str) -> tuple[int, int] | None:
    """Lines ``[start, stop)`` holding top-level ``key`` and its continuation lines."""
    pattern = re.compile(re.escape(key.encode("utf-8")) + rb"[ \t]*:(?:[ \t]|$)")
    for start, line in enumerate(block):
        if not pattern.match(line):
            continue
        stop = start + 1
        while stop < len(block):
            nxt = block[stop]
            if nxt[:1] in (b" ", b"\t") or nxt == b"-" or nxt.startswith(b"- "):
                stop += 1
                continue
            break
        return start, stop
    return None


def _load(lines: list[bytes] | tuple[bytes, ...]) -> dict[str, object] | None:
    try:
        loaded = yaml.safe_load(b"\n".join(lines).decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, ValueError, TypeError):
        return None
    if loaded is None:
        return {}
    return loaded if isinstance(loaded, dict) else None


def patch_frontmatter(
    data: bytes,
    fields: Mapping[str, Value],
    *,
    only_if_missing: Collection[str] = (),
) -> bytes:
    """Return ``data`` with ``fields`` set in its frontmatter and the body byte-identical.

    A note without frontmatter gets a new block in front of its (unchanged) bytes.

    :param fields: key -> value; each key is replaced where it is, or appended.
    :param only_if_missing: keys of ``fields`` set only when the note lacks them
        (a person's ``tags`` or ``title`` are never replaced).
    :raises FrontmatterPatchError: the block is unclosed, or the edit would leave YAML
        that no longer parses (when it parsed before) or reads back differently.
    """
    raw = split_raw(data)
    nl = raw.newline
    block = list(raw.block)
    for key, value in fields.items():
        lines = _lines(key, value)
        span = _key_span(block, key)
        if span is None:
            block.extend(lines)
        elif key not in only_if_missing:
            block[span[0] : span[1]] = lines
    before = _load(raw.block) if raw.has_frontmatter else {}
    after = _load(block)
    if after is None:
        if before is not None:
            raise FrontmatterPatchError("setting the fields would break the note's YAML")
    else:
        for key, value in fields.items():
            if key in only_if_missing and raw.has_frontmatter and _key_span(list(raw.block), key):
                continue
            if not _same(after.get(key), value):
                raise FrontmatterPatchError(f"the frontmatter key {key!r} does not read back")
    head = raw.head if raw.has_frontmatter else raw.head + b"---" + nl
    tail = raw.tail if raw.has_frontmatter else b"---" + nl
    return head + b"".join(line + nl for line in block) + tail + raw.body


def _lines(key: str, value: Value) -> list[bytes]:
    """The block lines of ``key: value`` (a list as YAML's one item a line)."""
    if not isinstance(value, list):
        return [f"{key}: {yaml_scalar(value)}".encode()]
    if not value:
        return [f"{key}: []".encode()]
    return [f"{key}:".encode(), *(f"- {yaml_scalar(item)}".encode() for item in value)]


def _same(read: object, wanted: Value) -> bool:
    if isinstance(wanted, float) and isinstance(read, int | float) and not isinstance(read, bool):
        return float(read) == wanted or (math.isnan(wanted) and math.isnan(float(read)))
    return read == wanted
