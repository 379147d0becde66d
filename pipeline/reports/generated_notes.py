"""Writing notes that signaldesk generates (reports, logs) without ever clobbering a person's edits.

A generated note records a hash of the body it was written with. Regenerating
replaces it only while that hash still matches; once someone has edited the
note, it is kept and the run says so.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from signaldesk.frontmatter import parse_note, render_note
from signaldesk.retrieval.scrubber import scrub_text, scrub_value
from signaldesk.signal_note import HASH_KEY
from signaldesk.vault import atomic_write_text

logger = logging.getLogger(__name__)


WriteOutcome = Literal["created", "updated", "unchanged", "kept_edited"]


@dataclass(frozen=True, slots=True)
class GeneratedNote:
    """Where a generated note went and what happened to it."""

    path: Path
    outcome: WriteOutcome


def _body_hash(body: str) -> str:
    return hashlib.sha256(body.strip().encode("utf-8")).hexdigest()[:16]


def _with_hash(frontmatter: dict[str, Any], body: str) -> str:
    """A note with YAML frontmatter; the body hash is added so later runs can tell edits."""
    return render_note({**frontmatter, HASH_KEY: _body_hash(body)}, body)


def write_generated_note(path: Path, frontmatter: dict[str, Any], body: str) -> GeneratedNote:
    """Create or refresh a generated note, keeping it if a person has edited it since.

    The body and frontmatter are scrubbed first: a commit message or an item title may
    carry a credential, and signaldesk does not copy one into the vault.
    """
    body = scrub_text(body)
    frontmatter = scrub_value(frontmatter)
    if path.exists():
        current = parse_note(path.read_text(encoding="utf-8", errors="replace"))
        recorded = current.frontmatter.get(HASH_KEY)
        if recorded != _body_hash(current.body):
            logger.warning("%s was edited by hand; not overwritten (delete it to regenerate)", path)
            return GeneratedNote(path, "kept_edited")
        if recorded == _body_hash(body):
            return GeneratedNote(path, "unchanged")
        atomic_write_text(path, _with_hash(frontmatter, body))
        return GeneratedNote(path, "updated")
    atomic_write_text(path, _with_hash(frontmatter, body))
    return GeneratedNote(path, "created")
