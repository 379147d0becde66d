"""Private key blocks: found as one unit, whatever their size, line lengths or ending.

A regex over a PEM block either needs both ends in view or guesses at line lengths;
issue 12 measured both failing (a 3072-bit key's short last line, a key split by
chunking). So blocks are found by walking lines:

- a ``BEGIN ... PRIVATE KEY`` marker (PEM, OpenSSH, PKCS#1/#8, encrypted, PGP armour,
  RFC 4716 ``---- BEGIN SSH2 ...``) starts a block, wherever it sits on its line
  (after ``private_key: "`` or a quote);
- the block ends at its ``END`` marker when everything up to it looks like key material
  (base64 lines of any length, armour headers such as ``Proc-Type`` and ``DEK-Info``,
  blank lines, quotes and indentation of the surrounding code or quote);
- with no such END, the block runs to the end of the base64 lines that follow;
- a JSON or code string (``"-----BEGIN PRIVATE KEY-----\\nMIIE...\\n"``) is the same
  thing on one line, with ``\\n`` escapes;
- text that starts inside a key (no BEGIN in view) loses the base64 lines before an
  END marker.

The spans returned cover the markers too.
"""

from __future__ import annotations

import re

__all__ = ["private_key_spans"]

_BEGIN = re.compile(r"-{4,5} ?BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)? ?-{4,5}", re.IGNORECASE)
_END = re.compile(r"-{4,5} ?END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)? ?-{4,5}", re.IGNORECASE)
# One line of key material, with what code, YAML, quotes and lists put around it.
_BODY_LINE = re.compile(
    r"[ \t>]*(?:[-*+][ \t]+)?[\"'`]?"  # indentation, quote marks, a list bullet, a quote
    r"(?:[A-Za-z0-9+/=]+|=[A-Za-z0-9+/]{4})?"  # base64 (or PGP's =CRC line)
    r"(?:\\n)?[\"'`]?[ \t,;+\\]*"  # an escaped newline, a closing quote, concatenation
)
_HEADER_LINE = re.compile(
    r"[ \t>]*[\"']?(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset|Subject|"
    r"Private-Lines|Public-Lines|Encryption|Private-MAC|x-[\w-]+):[^\r\n]*",
    re.IGNORECASE,
)
# Inside one line: base64 runs joined by \n escapes (a key in a JSON string).
_ESCAPED_RUN = re.compile(r"(?:\\r)?(?:\\n)(?:[A-Za-z0-9+/=]|\\r|\\n)*")
_MAX_LINES = 4000


def _is_body(line: str) -> bool:
    return bool(_BODY_LINE.fullmatch(line)) or bool(_HEADER_LINE.fullmatch(line))


def _has_material(line: str) -> bool:
    return any(c.isalnum() for c in line)


def _lines_from(text: str, start: int) -> list[tuple[int, int]]:
    """(start, end) of each line from ``start`` on (end excludes the newline)."""
    spans: list[tuple[int, int]] = []
    position = start
    while position <= len(text) and len(spans) < _MAX_LINES:
        newline = text.find("\n", position)
        end = len(text) if newline < 0 else newline
        spans.append((position, end))
        if newline < 0:
            break
        position = newline + 1
    return spans


def _block_end(text: str, begin_end: int, limit: int) -> int:
    """Where the block whose BEGIN marker ends at ``begin_end`` stops (``limit``: next BEGIN)."""
    line_end = text.find("\n", begin_end)
    line_end = len(text) if line_end < 0 else line_end
    rest_of_line = text[begin_end:line_end]
    # Escaped on one line: the END marker on the same line, else the escaped run.
    end = _END.search(text, begin_end, min(line_end, limit))
    if end is not None:
        return end.end()
    escaped = _ESCAPED_RUN.match(text, begin_end)
    if escaped is not None and escaped.end() > begin_end + 2:
        return escaped.end()
    if rest_of_line.strip(" \t\r\"'`,;") != "":
        return line_end  # something else follows on the BEGIN line: take the line
    last = line_end
    pending_blank = False
    for start, stop in _lines_from(text, line_end + 1)[:_MAX_LINES]:
        if start >= limit:
            break
        line = text[start:stop].rstrip("\r")
        marker = _END.search(line)
        if marker is not None:
            before = line[: marker.start()]
            if before.strip() == "" or _is_body(before):
                return start + marker.end()
            break
        if line.strip() == "":
            pending_blank = True
            continue
        if not _is_body(line):
            break
        if pending_blank and not _has_material(line):
            break
        pending_blank = False
        if _has_material(line):
            last = stop
    return last


def _headless_spans(text: str, taken: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Key material before an END marker with no BEGIN in view (text starting mid-key)."""
    spans: list[tuple[int, int]] = []
    for end in _END.finditer(text):
        if any(s <= end.start() < e for s, e in taken):
            continue
        line_start = text.rfind("\n", 0, end.start()) + 1
        start = line_start if _is_body(text[line_start : end.start()]) else end.start()
        cursor = line_start
        while cursor > 0:
            previous = text.rfind("\n", 0, cursor - 1) + 1
            line = text[previous : cursor - 1].rstrip("\r")
            if not line.strip() or not _is_body(line):
                break
            start = previous
            cursor = previous
        spans.append((start, end.end()))
    return spans


def private_key_spans(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` holding private key blocks (markers included), in order."""
    if "PRIVATE KEY" not in text.upper():
        return []
    begins = list(_BEGIN.finditer(text))
    spans: list[tuple[int, int]] = []
    for index, begin in enumerate(begins):
        if spans and begin.start() < spans[-1][1]:
            continue
        limit = begins[index + 1].start() if index + 1 < len(begins) else len(text)
        spans.append((begin.start(), _block_end(text, begin.end(), limit)))
    spans += _headless_spans(text, spans)
    return sorted(spans)
