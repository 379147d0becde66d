"""A person's corrections to triage: noticed in the vault, given as commands, learned from.

Noticed at the start of each triage run (:func:`notice_vault_corrections`), for the items
triage filed or left in the inbox:

======================================  ===========================================
what the person did                     recorded as
======================================  ===========================================
moved a signal note to another domain   kept, under that domain ("moved the note")
moved it out of the signals folder      kept ("moved the note out of signals")
moved it into ``04-archive/``           thrown away ("archived the note")
set ``status: archived`` in it          thrown away ("archived the note")
deleted it                              thrown away ("deleted the note")
moved a clipping out of the inbox       kept, under the domain folder it went to
deleted a clipping from the inbox       thrown away ("deleted the clipping")
======================================  ===========================================

Given as commands (:func:`apply_command`): ``signaldesk triage accept ID`` files an item
triage rejected (or confirms one it filed), ``reject ID`` marks its note ``status:
archived`` (never deleted), ``move ID DOMAIN`` moves its note into that domain's folder.
Each writes one row in the ledger's ``corrections`` table; the scorer of every later run
learns from the rows in force (:func:`scoring_corrections`); undoing or resetting stamps
rows undone, which brings the old decisions back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from signaldesk.frontmatter import parse_note
from signaldesk.frontmatter_patch import FrontmatterPatchError, Value, patch_frontmatter
from signaldesk.pipeline.errors import PipelineError
from signaldesk.pipeline.intake.feeds import FeedRegistry, prior_of
from signaldesk.pipeline.ledger.base import ItemLedger
from signaldesk.pipeline.ledger.corrections import (
    CorrectionRecord,
    active_corrections,
    record_correction,
)
from signaldesk.pipeline.ledger.store import LedgerEntry
from signaldesk.pipeline.settings import TriageSettings
from signaldesk.pipeline.triage.filing import NoteWriter, read_note_id
from signaldesk.retrieval.ignore import VaultFilter, iter_vault_notes
from signaldesk.scoring.feedback import Correction
from signaldesk.vault import ARCHIVE_FOLDER, DOMAINS, atomic_write_bytes, write_new_file

__all__ = [
    "CommandResult",
    "CorrectionError",
    "apply_command",
    "notice_vault_corrections",
    "scoring_corrections",
]

logger = logging.getLogger(__name__)

Action = Literal["accept", "reject", "move"]
_HEAD = 65_536


class CorrectionError(PipelineError):
    """A correction command cannot be applied (unknown item, unknown domain, ...)."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a correction command did."""

    item_id: str
    recorded: bool
    message: str
    note_path: str | None = None
    needs_filing: bool = False
    domain: str | None = None


def _domain_of(rel: str, signals: str) -> str | None:
    parts = PurePosixPath(rel).parts
    if len(parts) >= 3 and parts[0] == signals and parts[1] in DOMAINS:
        return parts[1]
    return None


def _status(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            head = handle.read(_HEAD)
    except OSError:
        return None
    value = parse_note(head.decode("utf-8", errors="replace")).frontmatter.get("status")
    return str(value).strip().lower() if value is not None else None


def _walk_names(vault: Path) -> dict[str, list[str]]:
    """Vault-relative paths of every note by file name (the vault's own rules only)."""
    found: dict[str, list[str]] = {}
    for rel, _ in iter_vault_notes(vault, VaultFilter(vault, with_indexignore=False)):
        found.setdefault(PurePosixPath(rel).name, []).append(rel)
    return found


def _filed_note(
    entry: LedgerEntry, writer: NoteWriter, settings: TriageSettings
) -> tuple[bool | None, str | None, str, str | None] | None:
    """The correction a filed item's note shows, if any: (accept, domain, how, where now)."""
    hint = entry.note_path
    assert hint is not None
    if writer.exists(hint) and read_note_id(writer.vault / hint) is None:
        return None  # a clipping filed with `leave`: it carries no id to follow
    where = writer.find(entry.id, hint, deep=True)
    if where is None:
        return False, None, "deleted the note", None
    if PurePosixPath(where).parts[:1] == (ARCHIVE_FOLDER,):
        return False, None, "archived the note", where
    if _status(writer.vault / where) == "archived":
        return False, None, "archived the note", where
    domain = _domain_of(where, settings.signals_folder)
    if domain is not None and domain != entry.domain:
        return True, domain, "moved the note", where
    if domain is None and PurePosixPath(where).parts[:1] != (settings.signals_folder,):
        return True, None, "moved the note out of signals", where
    return None


def _inbox_clipping(
    entry: LedgerEntry, writer: NoteWriter, names: dict[str, list[str]], settings: TriageSettings
) -> tuple[bool | None, str | None, str] | None:
    """The correction a rejected clipping shows once it has left the inbox."""
    origin = entry.item.origin_path
    if origin is None or writer.exists(origin):
        return None
    elsewhere = [p for p in names.get(PurePosixPath(origin).name, []) if p != origin]
    if not elsewhere:
        return False, None, "deleted the clipping"
    where = elsewhere[0]
    if PurePosixPath(where).parts[:1] == (ARCHIVE_FOLDER,):
        return False, None, "archived the clipping"
    return True, _domain_of(where, settings.signals_folder), "moved the clipping out of the inbox"


async def notice_vault_corrections(
    ledger: ItemLedger, writer: NoteWriter, settings: TriageSettings
) -> list[CorrectionRecord]:
    """Record what the person did to filed notes and inbox clippings since the last run."""
    recorded: list[CorrectionRecord] = []
    names: dict[str, list[str]] | None = None
    for entry in await ledger.entries(status="filed"):
        if entry.note_path is None:
            continue
        seen = _filed_note(entry, writer, settings)
        if seen is None:
            continue
        accept, domain, how, where = seen
        row = await record_correction(
            ledger, entry.id, accept=accept, domain=domain, how=how, once=True
        )
        recorded += [row] if row is not None else []
        if where is not None and where != entry.note_path:
            # Follow the note where the person put it, so the next run finds it at once.
            await ledger.record_triage(
                entry.id,
                "filed",
                score=entry.score,
                scores=entry.scores,
                domain=domain or entry.domain,
                note_path=where,
            )
    for entry in await ledger.entries(status="rejected", source_kind="clipper"):
        if names is None:
            names = _walk_names(writer.vault)
        left = _inbox_clipping(entry, writer, names, settings)
        if left is not None:
            row = await record_correction(
                ledger, entry.id, accept=left[0], domain=left[1], how=left[2], once=True
            )
            recorded += [row] if row is not None else []
    for row in recorded:
        logger.info("correction noticed for %s: %s", row.item_id[:10], row.how)
    return recorded


async def scoring_corrections(ledger: ItemLedger) -> list[Correction]:
    """The corrections in force, with their items, as the scorer takes them."""
    out: list[Correction] = []
    rows = await active_corrections(ledger)
    priors = await FeedRegistry(ledger).priors() if rows else {}
    for row in rows:
        entry = await ledger.get(row.item_id)
        if entry is not None:
            prior = prior_of(entry.item, priors)  # as triage scored the item
            out.append(Correction(entry.item, row.accept, row.domain, row.how, prior))
    return out


def _archive(writer: NoteWriter, rel: str) -> str:
    """Set ``status: archived`` in the note at ``rel`` (the note stays where it is)."""
    path = writer.vault / rel
    data = path.read_bytes()
    try:
        patched = patch_frontmatter(data, {"status": "archived"})
    except FrontmatterPatchError as exc:
        return f"note {rel} left as it is: {exc.message}"
    atomic_write_bytes(path, patched)
    return f"marked {rel} status: archived"


def _move(writer: NoteWriter, rel: str, domain: str) -> str:
    """Move the note at ``rel`` into ``domain``'s folder (a new name if one is taken)."""
    source = writer.vault / rel
    data = source.read_bytes()
    try:
        data = patch_frontmatter(data, _moved_fields(data, domain))
    except FrontmatterPatchError as exc:
        logger.info("domain of %s not updated: %s", rel, exc.message)
    name = PurePosixPath(rel)
    target = write_new_file(writer.folder_for(domain), name.stem, name.suffix or ".md", data)
    source.unlink()
    return target.relative_to(writer.vault).as_posix()


def _moved_fields(data: bytes, domain: str) -> dict[str, Value]:
    """What a move sets in the note's frontmatter: ``domain``, and in ``tags`` the old
    domain's tag (which the note was filed with) renamed, the person's other tags kept."""
    fields: dict[str, Value] = {"domain": domain}
    meta = parse_note(data.decode("utf-8", errors="replace")).frontmatter
    old, tags = meta.get("domain"), meta.get("tags")
    if (
        isinstance(old, str)
        and old != domain
        and isinstance(tags, list)
        and all(isinstance(tag, str) for tag in tags)
        and old in tags
    ):
        fields["tags"] = list(dict.fromkeys(domain if tag == old else tag for tag in tags))
    return fields


async def apply_command(
    ledger: ItemLedger,
    writer: NoteWriter,
    entry: LedgerEntry,
    action: Action,
    domain: str | None = None,
) -> CommandResult:
    """Record ``accept`` / ``reject`` / ``move`` for ``entry`` and do it to its note.

    ``needs_filing`` in the result says the item has no note yet and must be filed
    (under ``domain``): the caller triages it with that decision.

    :raises CorrectionError: an unknown domain, or a move without one.
    """
    if action == "move" and domain is None:
        raise CorrectionError("move needs a domain", hint=f"one of: {', '.join(DOMAINS)}")
    if domain is not None and domain not in DOMAINS:
        raise CorrectionError(f"unknown domain {domain!r}", hint=f"one of: {', '.join(DOMAINS)}")
    where = (
        writer.find(entry.id, entry.note_path, deep=True) if entry.note_path is not None else None
    )
    accept = action != "reject"
    chosen = domain if action == "move" else (entry.domain if accept else None)
    how = f"`triage {action}`"
    row = await record_correction(ledger, entry.id, accept=accept, domain=chosen, how=how)
    message = "recorded" if row is not None else "already recorded"
    note = where
    if action == "reject" and where is not None:
        message += "; " + _archive(writer, where)
    elif (
        action == "move"
        and where is not None
        and chosen is not None
        and _domain_of(where, writer.settings.signals_folder) != chosen
    ):
        note = _move(writer, where, chosen)
        message += f"; moved {where} -> {note}"
        await ledger.record_triage(
            entry.id,
            "filed",
            score=entry.score,
            scores=entry.scores,
            domain=chosen,
            note_path=note,
        )
    needs = accept and where is None and entry.status in ("rejected", "pending")
    return CommandResult(entry.id, row is not None, message, note, needs, chosen)
