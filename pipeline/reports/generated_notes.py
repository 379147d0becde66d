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

from signaldesk.faults import is_disk_full_error, is_read_only_error
from signaldesk.frontmatter import parse_note, render_note
from signaldesk.pipeline.errors import PipelineError
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


class GeneratedNoteError(PipelineError):
    """A report or log cannot be written where its path setting puts it (a folder or a
    file in the way)."""


def write_generated_note(path: Path, frontmatter: dict[str, Any], body: str) -> GeneratedNote:
    """Create or refresh a generated note, keeping it if a person has edited it since.

    The body and frontmatter are scrubbed first: a commit message or an item title may
    carry a credential, and signaldesk does not copy one into the vault.

    :raises GeneratedNoteError: something that is not such a note is in the way.
    """
    try:
        return _write(path, frontmatter, body)
    except OSError as exc:
        if is_disk_full_error(exc) or is_read_only_error(exc):
            raise  # said in one line, with its hint, wherever they happen
        raise GeneratedNoteError(
            f"cannot write {path}: {exc.strerror or exc}",
            hint="move what is in the way (nothing there was changed), or point "
            "[report] path / [captains_log] path elsewhere",
        ) from exc


def _write(path: Path, frontmatter: dict[str, Any], body: str) -> GeneratedNote:
    body = scrub_text(body)
    frontmatter = scrub_value(frontmatter)
    if path.exists():
        current = parse_note(path.read_text(encoding="utf-8", errors="replace"))
        recorded = current.frontmatter.get(HASH_KEY)
        if recorded != _body_hash(current.body):
            # Info, not a warning: every caller says so itself (the CLI's line, serve's
            # job summary in `status`), and a second line would repeat it.
            logger.info("%s was edited by hand; not overwritten (delete it to regenerate)", path)
            return GeneratedNote(path, "kept_edited")
        if recorded == _body_hash(body):
            return GeneratedNote(path, "unchanged")
        created = current.frontmatter.get("created")
        if created is not None and "created" in frontmatter:
            # A rewrite is an update: the note keeps when it was first written.
            frontmatter = {**frontmatter, "created": created, "updated": frontmatter["created"]}
        atomic_write_text(path, _with_hash(frontmatter, body))
        return GeneratedNote(path, "updated")
    atomic_write_text(path, _with_hash(frontmatter, body))
    return GeneratedNote(path, "created")
