"""Credential scrubbing of everything the server sends (defence in depth).

The indexer scrubs chunks before they are stored, but ``read_note`` and
``latest_report`` read files straight from disk, titles and frontmatter come
from the notes table, and an index written by an older version may predate a
pattern. So every string leaving the server passes through the scrubber again.
"""

from __future__ import annotations

import logging
from typing import Any

from retrieval.scrubber import scrub

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
    """A JSON-like value (dicts, lists, strings, numbers) with every string scrubbed."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {key: scrub_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_data(item) for item in value]
    return value
