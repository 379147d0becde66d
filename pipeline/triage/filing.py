"""Filing signal notes: create them, move or copy clippings into place, refresh their scores.

The rules this module keeps (SPEC section 2, "the user's files are sacred"):

* Every write is atomic (a fsynced temporary file in the target folder, then a
  link or rename), and a new name is taken with ``os.link``, which fails instead
  of replacing when the name exists: two writers can never end up on one file,
  and a note a person wrote is never overwritten.
* A note is never deleted or moved back. A clipping is moved only when it still
  holds the bytes that were read; if a person changed it meanwhile it stays too.
* Re-scoring rewrites only the triage-owned frontmatter lines
  (:data:`~pipeline.triage.note_render.GENERATED_KEYS`), and only while they are exactly
  what triage last wrote (a hash in the note tells); title, tags, body and every
  other key stay byte for byte.
* Each signal note carries ``signaldesk_id`` (the ledger id), so an item never
  gets a second note, even when the person moved or renamed the first one.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Literal

from signaldesk.frontmatter import parse_note
from signaldesk.frontmatter_patch import FrontmatterPatchError, Scalar, patch_frontmatter
from signaldesk.items import Item
from signaldesk.pipeline.errors import PipelineError
from signaldesk.pipeline.settings import TriageSettings
from signaldesk.pipeline.triage.note_render import (
    GENERATED_KEYS,
    generated_fields,
    generated_hash,
    render_body,
    render_signal_note,
    signal_frontmatter,
    slugify,
)
from signaldesk.retrieval.ignore import VaultFilter, iter_vault_notes
from signaldesk.scoring.records import ScoreCard
from signaldesk.signal_note import HASH_KEY, ID_KEY, SIGNAL_TYPE
from signaldesk.vault import (
    DOMAINS,
    atomic_write_bytes,
    file_mode,
    write_new_file,
)

__all__ = ["FilingError", "NoteOutcome", "NoteResult", "NoteWriter", "read_note_id"]

logger = logging.getLogger(__name__)

NoteOutcome = Literal[
    "created",  # a new signal note was written
    "moved",  # the clipping was moved into its domain folder, scores added
    "copied",  # the clipping was copied there (it stays in the inbox too)
    "left",  # the clipping stays where it is, untouched (clipping_action = "leave")
    "updated",  # re-scored: the generated fields were refreshed
    "unchanged",  # re-scored: nothing to change
    "kept_edited",  # re-scored, but a person edited the generated fields: left alone
    "missing",  # the item's note is gone (deleted by a person): not written again
    "stays",  # below the threshold: nothing written (a clipping stays in the inbox)
    "held",  # re-scored above the threshold, but `--rescore` files nothing by itself
    "failed",  # could not be written; the item is tried again next run
]

_ID_LINE = re.compile(
    rb"^" + ID_KEY.encode() + rb":[ \t]*['\"]?([0-9a-f]{16,64})['\"]?[ \t]*\r?$", re.M
)
_HEAD_BYTES = 65_536  # no real frontmatter is longer; a signal note's is ~2 KiB
_READ_STEP = 4096
_FENCE_END = re.compile(rb"\n(?:---|\.\.\.)[ \t]*\r?(?:\n|$)")
_MAX_NAME_TRIES = 1000


class FilingError(PipelineError):
    """A note could not be written, moved or refreshed (the vault is left as it was)."""


@dataclass(frozen=True, slots=True)
class NoteResult:
    """What filing did for one item.

    :param path: vault-relative POSIX path of the item's note (``None``: none).
    :param outcome: see :data:`NoteOutcome`.
    :param previous_path: where a moved clipping was (the indexer must forget it).
    :param message: a note for the report (why a clipping stayed, what was kept).
    """

    path: str | None
    outcome: NoteOutcome
    previous_path: str | None = None
    message: str | None = None


def read_note_id(path: Path) -> str | None:
    """The ``signaldesk_id`` in the frontmatter of the note at ``path``, if any.

    Reads only the frontmatter (in 4 KiB steps, at most 64 KiB), so looking through a
    folder of long notes stays cheap.
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(_READ_STEP)
            if not head.removeprefix(b"\xef\xbb\xbf").startswith(b"---"):
                return None
            while len(head) < _HEAD_BYTES and not _FENCE_END.search(head, 3):
                chunk = handle.read(_READ_STEP)
                if not chunk:
                    break
                head += chunk
    except OSError:
        return None
    end = _FENCE_END.search(head, 3)
    match = _ID_LINE.search(head, 0, end.start() if end else len(head))
    return match.group(1).decode("ascii") if match else None


def _link_new(folder: Path, stem: str, suffix: str, data: bytes, mode: int | None = None) -> Path:
    try:
        return write_new_file(folder, stem, suffix, data, tries=_MAX_NAME_TRIES, mode=mode)
    except FileExistsError as exc:
        raise FilingError(str(exc)) from exc


class NoteWriter:
    """Files and refreshes signal notes in one vault.

    :param vault: the vault root.
    :param settings: the ``[triage]`` settings.
    :param threshold: the scoring threshold (recorded in each note beside the composite).
    :param dry_run: decide and name everything, write nothing (results say what would be).
    """

    def __init__(
        self, vault: Path, settings: TriageSettings, threshold: float, *, dry_run: bool = False
    ) -> None:
        self.vault = vault
        self.settings = settings
        self.threshold = threshold
        self.dry_run = dry_run
        self._ids: dict[str, str] | None = None
        self._scanned_all = False

    # -- finding an item's note --------------------------------------------------

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.vault).as_posix()

    def _walk(self, root: Path) -> Iterator[Path]:
        # The vault's own rules only: `.indexignore` hides notes from search, not from
        # the triage that filed them (a person may move a signal anywhere).
        rules = VaultFilter(self.vault, with_indexignore=False)
        for rel, _ in iter_vault_notes(self.vault, rules, under=self._rel(root)):
            yield self.vault / rel

    def _index(self, root: Path) -> None:
        assert self._ids is not None
        for path in self._walk(root):
            note_id = read_note_id(path)
            if note_id is not None:
                self._ids.setdefault(note_id, self._rel(path))

    def find(self, item_id: str, hint: str | None = None, *, deep: bool = True) -> str | None:
        """Where the note of ``item_id`` is now, vault-relative, or ``None``.

        ``hint`` (the ledger's ``note_path``) is tried first; then the signals folder
        and (``deep``), when the note is still not found, the whole vault are searched
        for a note whose ``signaldesk_id`` is ``item_id`` (a person may have moved it).
        Each folder is read once per writer; later look-ups use what was found.
        """
        if hint and self._holds(hint, item_id):
            return hint
        if self._ids is None:
            self._ids = {}
            self._index(self.vault / self.settings.signals_folder)
        found = self._ids.get(item_id)
        if found is not None and self._holds(found, item_id):
            return found
        if deep and not self._scanned_all:
            self._scanned_all = True
            self._index(self.vault)
            found = self._ids.get(item_id)
            if found is not None and self._holds(found, item_id):
                return found
        return None

    def exists(self, rel: str) -> bool:
        """Whether ``rel`` names a file inside the vault."""
        path = self._safe_path(rel)
        return path is not None and path.is_file()

    def _holds(self, rel: str, item_id: str) -> bool:
        path = self._safe_path(rel)
        return path is not None and path.is_file() and read_note_id(path) == item_id

    def _safe_path(self, rel: str) -> Path | None:
        """``rel`` under the vault, or ``None`` when it would lead outside it."""
        pure = PurePosixPath(rel)
        if pure.is_absolute() or ".." in pure.parts or not pure.parts:
            return None
        return self.vault.joinpath(*pure.parts)

    def _remember(self, item_id: str, rel: str) -> None:
        if self._ids is not None:
            self._ids[item_id] = rel

    # -- names -------------------------------------------------------------------

    def folder_for(self, domain: str) -> Path:
        """The domain's folder under the signals folder (unknown domains go to ``other``)."""
        return (
            self.vault / self.settings.signals_folder / (domain if domain in DOMAINS else "other")
        )

    def stem_for(self, item: Item, now: datetime) -> str:
        """``<YYYY-MM-DD>-<slug>`` for a new note about ``item``."""
        slug = slugify(item.title, max_chars=self.settings.slug_chars, fallback="signal")
        return f"{now.date().isoformat()}-{slug}"

    def planned_path(self, item: Item, domain: str, now: datetime) -> str:
        """The name a new note would get now (for dry runs; nothing is taken)."""
        folder = self.folder_for(domain)
        stem = self.stem_for(item, now)
        for attempt in range(1, _MAX_NAME_TRIES + 1):
            path = folder / (f"{stem}.md" if attempt == 1 else f"{stem}-{attempt}.md")
            if not path.exists():
                return self._rel(path)
        return self._rel(folder / f"{stem}.md")

    def planned_clipping_path(self, origin: str, domain: str) -> str:
        """Where a clipping would be moved or copied to now (nothing is taken)."""
        folder = self.folder_for(domain)
        name = PurePosixPath(origin)
        for attempt in range(1, _MAX_NAME_TRIES + 1):
            candidate = name.name if attempt == 1 else f"{name.stem}-{attempt}{name.suffix}"
            if not (folder / candidate).exists():
                return self._rel(folder / candidate)
        return self._rel(folder / name.name)

    # -- writing -----------------------------------------------------------------

    def create(self, item: Item, card: ScoreCard, item_id: str, now: datetime) -> NoteResult:
        """Write a new signal note for ``item`` under its routed domain.

        :raises FilingError: the note could not be written.
        """
        domain = card.route.domain if card.route.domain in DOMAINS else "other"
        if self.dry_run:
            return NoteResult(self.planned_path(item, domain, now), "created")
        meta = signal_frontmatter(
            item, card, item_id=item_id, domain=domain, threshold=self.threshold, now=now
        )
        body = render_body(
            item,
            key_point_count=self.settings.key_points,
            summary_chars=self.settings.summary_chars,
            content_chars=self.settings.content_chars,
            arrived=now,
        )
        data = render_signal_note(meta, body).encode("utf-8")
        try:
            path = _link_new(self.folder_for(domain), self.stem_for(item, now), ".md", data)
        except OSError as exc:
            raise FilingError(f"cannot write the note for {item.title!r}: {exc}") from exc
        rel = self._rel(path)
        self._remember(item_id, rel)
        logger.info("filed %s", rel)
        return NoteResult(rel, "created")

    def _clipping_fields(
        self, card: ScoreCard, item_id: str, domain: str, now: datetime
    ) -> tuple[dict[str, Scalar], set[str]]:
        fields: dict[str, Scalar] = {"type": SIGNAL_TYPE, "domain": domain, "status": "active"}
        generated = generated_fields(card, threshold=self.threshold, scored_at=now)
        fields.update(generated)
        fields[ID_KEY] = item_id
        fields[HASH_KEY] = generated_hash(generated)
        return fields, {"type", "domain", "status"}

    def file_clipping(
        self, item: Item, card: ScoreCard, item_id: str, now: datetime
    ) -> NoteResult | None:
        """Move (or copy, or leave) the clipping ``item`` came from into its domain folder.

        The clipping's body is kept byte for byte; the scores, ``signaldesk_id`` and
        (when absent) ``type``, ``domain`` and ``status`` are added to its frontmatter.
        Returns ``None`` when the clipping is no longer there (file a new note instead).

        :raises FilingError: the clipping could not be read or written.
        """
        origin = item.origin_path
        source = self._safe_path(origin) if origin else None
        if origin is None or source is None or not source.is_file():
            return None
        action = self.settings.clipping_action
        if action == "leave":
            if not self.dry_run:
                logger.info("clipping %s passed; left where it is", origin)
            return NoteResult(origin, "left")
        domain = card.route.domain if card.route.domain in DOMAINS else "other"
        if self.dry_run:
            planned = self.planned_clipping_path(origin, domain)
            if action == "copy":
                return NoteResult(planned, "copied")
            return NoteResult(planned, "moved", previous_path=origin)
        try:
            original = source.read_bytes()
            mode = file_mode(source)  # a moved clipping keeps its permissions
        except OSError as exc:
            raise FilingError(f"cannot read the clipping {origin}: {exc}") from exc
        fields, keep = self._clipping_fields(card, item_id, domain, now)
        try:
            patched = patch_frontmatter(original, fields, only_if_missing=keep)
        except FrontmatterPatchError as exc:
            # Frontmatter we cannot edit safely: the clipping stays as the person left it.
            logger.warning("clipping %s left in place: %s", origin, exc.message)
            return NoteResult(origin, "left", message=f"left in place: {exc.message}")
        name = PurePosixPath(origin)
        try:
            target = _link_new(
                self.folder_for(domain), name.stem, name.suffix or ".md", patched, mode=mode
            )
        except OSError as exc:
            raise FilingError(f"cannot file the clipping {origin}: {exc}") from exc
        rel = self._rel(target)
        self._remember(item_id, rel)
        if action == "copy":
            logger.info("copied clipping %s -> %s", origin, rel)
            return NoteResult(rel, "copied")
        # Remove the original only if it still holds what was read: an edit made in the
        # meantime must not be lost, so then both copies stay.
        try:
            unchanged = source.read_bytes() == original
        except OSError:
            unchanged = False
        if not unchanged:
            logger.warning("clipping %s changed while being filed; kept beside %s", origin, rel)
            return NoteResult(rel, "copied", message="the clipping changed meanwhile; kept both")
        try:
            source.unlink()
        except OSError as exc:
            logger.warning("clipping %s copied to %s but not removed: %s", origin, rel, exc)
            return NoteResult(rel, "copied", message=f"original not removed: {exc}")
        logger.info("moved clipping %s -> %s", origin, rel)
        return NoteResult(rel, "moved", previous_path=origin)

    def refresh(self, rel: str, card: ScoreCard, item_id: str, now: datetime) -> NoteResult:
        """Bring the generated fields of the note at ``rel`` up to date with ``card``.

        Leaves the note alone when a person edited any generated field, when it is not
        this item's signal note (a clipping left in place), or when nothing changed.

        :raises FilingError: the note could not be read or written.
        """
        path = self._safe_path(rel)
        if path is None:
            return NoteResult(rel, "unchanged", message="path outside the vault")
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return NoteResult(None, "missing")
        except OSError as exc:
            raise FilingError(f"cannot read {rel}: {exc}") from exc
        meta = parse_note(data.decode("utf-8", errors="replace")).frontmatter
        if meta.get(ID_KEY) != item_id:
            return NoteResult(rel, "left")
        current = {key: meta.get(key) for key in GENERATED_KEYS}
        if generated_hash(current) != meta.get(HASH_KEY):
            return NoteResult(rel, "kept_edited", message="scores edited by hand; kept")
        fields = generated_fields(card, threshold=self.threshold, scored_at=now, previous=meta)
        if generated_hash({**current, "scored_at": None}) == generated_hash(
            {**fields, "scored_at": None}
        ):
            return NoteResult(rel, "unchanged")
        try:
            patched = patch_frontmatter(data, {**fields, HASH_KEY: generated_hash(fields)})
        except FrontmatterPatchError as exc:
            return NoteResult(
                rel, "kept_edited", message=f"frontmatter not editable: {exc.message}"
            )
        if self.dry_run:
            return NoteResult(rel, "updated")
        try:
            if path.read_bytes() != data:
                return NoteResult(rel, "kept_edited", message="edited while re-scoring; kept")
            atomic_write_bytes(path, patched)
        except OSError as exc:
            raise FilingError(f"cannot update {rel}: {exc}") from exc
        logger.info("re-scored %s", rel)
        return NoteResult(rel, "updated")
