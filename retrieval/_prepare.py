"""Turning one note file into rows: read, hash, chunk, scrub, and decide what to embed.

Pure CPU work with no database access, so a batch of notes can be prepared
while the previous batch is being embedded or written.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from signaldesk.retrieval.chunker import chunk_note
from signaldesk.retrieval.cleaning import embedding_input, readable_text
from signaldesk.retrieval.fts_text import index_text, name_key
from signaldesk.retrieval.ignore import excluded_by_frontmatter
from signaldesk.retrieval.scrubber import scrub

__all__ = [
    "FileJob",
    "Gone",
    "NoteFields",
    "Outcome",
    "PreparedChunk",
    "PreparedNote",
    "SkippedNote",
    "Touched",
    "Unreadable",
    "content_hash",
    "embed_hash",
    "prepare_file",
    "prepare_many",
    "prepare_note",
]

logger = logging.getLogger(__name__)

# ISO 8601 in UTC, second precision ("2026-05-07T12:00:00Z").
ISO_UTC = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(slots=True)
class PreparedChunk:
    """One chunk ready to insert; ``fts_*`` are already in the keyword index's form."""

    ordinal: int
    section: str
    heading_path: str  # JSON array
    text: str
    start_line: int
    embed_input: str
    embed_hash: str
    fts_text: str
    fts_section: str
    fts_context: str


@dataclass(frozen=True, slots=True)
class NoteFields:
    """The note-level keyword row (``notes_fts``) and the names an exact query may equal.

    Every field is already in the keyword index's form (CJK bigrams); ``body`` is
    the readable text of the whole note (no URLs, badges or comments), so BM25's
    length normalisation counts the words a person reads.
    """

    title: str
    aliases: str
    file: str
    tags: str
    headings: str
    body: str
    keys: tuple[str, ...]


@dataclass(slots=True)
class PreparedNote:
    """One note ready to insert (everything scrubbed)."""

    path: str
    mtime_ns: int
    size: int
    content_hash: str
    title: str
    note_type: str | None
    domain: str | None
    status: str | None
    tags: str  # JSON array
    created: str
    updated: str
    frontmatter: str  # JSON object
    chunks: list[PreparedChunk] = field(default_factory=list)
    fts: NoteFields | None = None
    text: str = ""  # the whole scrubbed note, with PrepareOptions.keep_text


@dataclass(slots=True)
class SkippedNote:
    """A file that is deliberately not indexed (its stat is remembered)."""

    path: str
    mtime_ns: int
    size: int
    content_hash: str
    reason: str


@dataclass(frozen=True, slots=True)
class FileJob:
    """One file to look at, with what the index knows of it (picklable for a worker)."""

    path: str
    mtime_ns: int
    size: int
    known_hash: str | None  # None: not indexed (new, or skipped before)
    force: bool = False


@dataclass(frozen=True, slots=True)
class Touched:
    """The stat changed but the content did not: only the stat columns are refreshed."""

    path: str
    mtime_ns: int
    size: int


@dataclass(frozen=True, slots=True)
class Gone:
    """The file disappeared between the scan and the read."""

    path: str


@dataclass(frozen=True, slots=True)
class Unreadable:
    """The file could not be read or prepared; its old rows (if any) stay."""

    path: str
    message: str


Outcome = PreparedNote | SkippedNote | Touched | Gone | Unreadable


@dataclass(frozen=True, slots=True)
class PrepareOptions:
    """How notes become chunks and embedding inputs (plain values: it crosses processes).

    :param max_chars: sections longer than this are split.
    :param min_chars: fragments shorter than this are merged.
    :param embed_chars: characters of each chunk's embedding input (0: all of it).
    :param keep_text: keep the whole scrubbed note in :attr:`PreparedNote.text` (the
        PostgreSQL index stores it, for a server without the vault on disk).
    """

    max_chars: int
    min_chars: int
    embed_chars: int = 0
    keep_text: bool = False


def prepare_file(vault: str, job: FileJob, options: PrepareOptions) -> Outcome:
    """Read ``job.path`` under ``vault`` and turn it into what the writer needs.

    A module-level function of plain arguments so a process pool can run it.
    """
    try:
        data = (Path(vault) / job.path).read_bytes()
    except FileNotFoundError:
        return Gone(job.path)
    except OSError as exc:
        return Unreadable(job.path, f"cannot read ({exc.strerror or exc})")
    digest = content_hash(data)
    if not job.force and job.known_hash == digest:
        return Touched(job.path, job.mtime_ns, job.size)
    try:
        return prepare_note(
            job.path,
            data,
            job.mtime_ns,
            job.size,
            options=options,
            digest=digest,
        )
    except Exception as exc:  # one broken note must not stop the vault's index
        logger.warning("cannot index %s: %s", job.path, exc, exc_info=True)
        return Unreadable(job.path, f"{type(exc).__name__}: {exc}")


def prepare_many(vault: str, jobs: list[FileJob], options: PrepareOptions) -> list[Outcome]:
    """:func:`prepare_file` over several files (one round trip to a worker process)."""
    return [prepare_file(vault, job, options) for job in jobs]


def content_hash(data: bytes) -> str:
    """The hash that tells a touched file from an edited one."""
    # 80 bits: a collision would only hide one edit until the next one, and the
    # column is stored once per note (45k notes: every byte is 45 KB).
    return hashlib.blake2b(data, digest_size=10).hexdigest()


def embed_hash(text: str) -> str:
    """Identifies the exact text given to the embedding model (64 bits is plenty here)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def prepare_note(
    path: str,
    data: bytes,
    mtime_ns: int,
    size: int,
    *,
    options: PrepareOptions,
    digest: str | None = None,
) -> PreparedNote | SkippedNote:
    """Chunk and scrub one note read from ``path`` (vault-relative).

    :param digest: the content hash when the caller has already computed it.
    """
    digest = digest or content_hash(data)
    text = data.decode("utf-8", errors="replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
        logger.info("%s is not valid UTF-8; undecodable bytes were replaced", path)
    # Trigger: every note. Why: a secret must be seen whole to be recognised, and
    # chunking cuts (a 4096-bit key spans several chunks, and its middle chunks carry
    # neither BEGIN nor END). So the whole file is scrubbed first and the scrubbed text
    # is chunked; a redaction keeps the line count, so chunk start lines stay those of
    # the file. Strings that are not in the scrubbed text as-is (YAML-unescaped values,
    # merged chunks, a title from the file name) are scrubbed again one by one.
    whole = scrub(text)
    findings: dict[str, int] = dict(whole.findings)
    clean_text = whole.text
    note = chunk_note(path, clean_text, max_chars=options.max_chars, min_chars=options.min_chars)
    if excluded_by_frontmatter(note.frontmatter):
        return SkippedNote(path, mtime_ns, size, digest, "frontmatter")

    def clean(value: str) -> str:
        return value if not value or value in clean_text else _scrubbed(value, findings)

    title = clean(note.title or Path(path).stem)
    tags = [clean(str(tag)) for tag in note.tags or ()]
    aliases = [clean(str(alias)) for alias in note.aliases or ()]
    frontmatter = _clean_value(dict(note.frontmatter or {}), clean)
    mtime_iso = _iso_from_ns(mtime_ns)
    prepared = PreparedNote(
        path=path,
        mtime_ns=mtime_ns,
        size=size,
        content_hash=digest,
        title=title,
        note_type=_scalar(note.note_type, clean),
        domain=_scalar(note.domain, clean),
        status=_scalar(note.status, clean),
        tags=json.dumps(tags, ensure_ascii=False),
        created=_date_text(note.created) or mtime_iso,
        updated=_date_text(note.updated) or mtime_iso,
        frontmatter=json.dumps(frontmatter, ensure_ascii=False, default=str),
        text=clean_text if options.keep_text else "",
    )
    context_head = " ".join([title, *tags])
    context_tail = " ".join(aliases)
    headings_seen: dict[str, None] = {}
    bodies: list[str] = []
    for chunk in note.chunks:
        chunk_text = _squeeze_padding(clean(chunk.text))
        headings = [clean(h) for h in chunk.heading_path]
        section = clean(chunk.section or "")
        embed_text = embedding_input(title, headings, chunk_text, max_chars=options.embed_chars)
        context = " ".join(p for p in (context_head, " ".join(headings), context_tail) if p)
        headings_seen.update(dict.fromkeys(headings))
        bodies.append(readable_text(chunk_text))
        prepared.chunks.append(
            PreparedChunk(
                ordinal=chunk.ordinal,
                section=section,
                heading_path=json.dumps(headings, ensure_ascii=False),
                text=chunk_text,
                start_line=chunk.start_line,
                embed_input=embed_text,
                embed_hash=embed_hash(embed_text),
                fts_text=index_text(chunk_text),
                fts_section=index_text(section),
                fts_context=index_text(context),
            )
        )
    stem = clean(Path(path).stem)
    prepared.fts = NoteFields(
        title=index_text(title),
        aliases=index_text(" ".join(aliases)),
        file=index_text(stem),
        tags=index_text(" ".join(tags)),
        headings=index_text(" ".join(headings_seen)),
        body=index_text("\n".join(bodies)),
        keys=tuple(dict.fromkeys(k for k in map(name_key, (title, stem, *aliases)) if k)),
    )
    if findings:
        # Pattern names and counts only: the values never reach a log.
        summary = ", ".join(f"{name} x{count}" for name, count in sorted(findings.items()))
        logger.info("%s: redacted %s", path, summary)
    return prepared


# The line breaks a multi-line redaction keeps (for line numbers) are not worth
# storing or showing: at most one blank line after a marker.
_PADDING = re.compile(r"(\[REDACTED:[\w-]+\])\n{3,}")


def _squeeze_padding(text: str) -> str:
    return _PADDING.sub("\\1\n\n", text) if "[REDACTED:" in text else text


def _scrubbed(text: str, findings: dict[str, int]) -> str:
    if not text:
        return text
    result = scrub(text)
    for name, count in result.findings.items():
        findings[name] = findings.get(name, 0) + count
    return result.text


def _clean_value(value: Any, clean: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, Mapping):
        return {str(k): _clean_value(v, clean) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [_clean_value(v, clean) for v in value]
    return value


def _scalar(value: object, clean: Callable[[str], str]) -> str | None:
    if value is None or value == "":
        return None
    return clean(str(value))


def _date_text(value: object) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _iso_from_ns(mtime_ns: int) -> str:
    return datetime.fromtimestamp(mtime_ns // 1_000_000_000, tz=UTC).strftime(ISO_UTC)
