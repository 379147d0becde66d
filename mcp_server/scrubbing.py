"""Credential scrubbing of everything the server sends (defence in depth).

The indexer scrubs chunks before they are stored, but ``read_note`` and
``latest_report`` read files straight from disk, titles and frontmatter come
from the notes table, and an index written by an older version may predate a
pattern. So every string leaving the server passes through the scrubber again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from signaldesk.retrieval.scrubber import scrub

__all__ = ["scrub_data", "scrub_text"]

_log = logging.getLogger(__name__)


def scrub_text(text: str) -> str:
    """``text`` with every credential replaced by ``[REDACTED:<pattern>]``."""
    result = scrub(text)
    if result.findings:
        # Names and counts only (the scrubber logs the same): never the values.
        _log.debug("tool output: %d credential(s) redacted", result.redacted)
    return result.text


def scrub_data(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers) with every string scrubbed.

    One scrubber pass over all the strings joined usually proves there is nothing to
    redact (a tool result holds dozens of short strings, and each pass has a fixed
    cost); only when it finds something is each string scrubbed on its own.
    """
    strings = list(_strings(value))
    if not strings or not scrub(_SEPARATOR.join(strings)).findings:
        return value
    return _scrub_each(value)


# A NUL on a line of its own: not whitespace (an assignment pattern's `\s*` cannot run
# through it) and bounded by newlines (a value's `\S+` cannot run through it either).
_SEPARATOR = "\n\x00\n"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _scrub_each(value: Any) -> Any:
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {key: _scrub_each(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub_each(item) for item in value]
    return value
