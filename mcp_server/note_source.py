"""Where ``read_note`` and ``latest_report`` get a note's text: the vault's files, or (team
mode) the copy the shared index holds, since a team's server may have no vault on disk."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import anyio.to_thread

from signaldesk.mcp_server.errors import NoteNotFoundError
from signaldesk.mcp_server.notes import find_latest_report, read_note_text, similar_notes
from signaldesk.mcp_server.paths import ExcludedPredicate, resolve_note_path
from signaldesk.vault import DEFAULT_LAYOUT, SignalLayout

__all__ = ["LocalNotes", "NoteSource", "SourceNote"]


@dataclass(frozen=True, slots=True)
class SourceNote:
    """A note's path as the client should cite it, and its raw (unscrubbed) text."""

    relative: str
    text: str


class NoteSource(Protocol):
    async def read(self, path: str) -> SourceNote:
        """The note at a client's ``path``.

        :raises PathRefusedError: the path is not an acceptable note path.
        :raises NoteNotFoundError: there is no such note.
        """
        ...

    async def latest_report(self) -> SourceNote:
        """The newest triage report. :raises NoteNotFoundError: there is none yet."""
        ...

    def exists(self, relative: str) -> bool:
        """Whether the note an index entry names is still there to be read."""
        ...


@dataclass(frozen=True, slots=True)
class LocalNotes:
    """The vault's own files, every path confined to it (:func:`resolve_note_path`)."""

    vault: Path
    excluded: ExcludedPredicate
    max_bytes: int
    layout: SignalLayout = DEFAULT_LAYOUT

    async def read(self, path: str) -> SourceNote:
        try:
            note = resolve_note_path(
                self.vault, path, excluded=self.excluded, max_bytes=self.max_bytes
            )
        except NoteNotFoundError as exc:
            found = await anyio.to_thread.run_sync(
                functools.partial(similar_notes, self.vault, path, self.excluded)
            )
            if not found:
                raise
            raise NoteNotFoundError(
                exc.message, hint="did you mean " + " or ".join(repr(p) for p in found) + "?"
            ) from exc
        text = await anyio.to_thread.run_sync(read_note_text, note.absolute)
        return SourceNote(note.relative, text)

    def exists(self, relative: str) -> bool:
        # A stat, no more: the index named this path, and read() checks it fully.
        return (self.vault / relative).is_file()

    async def latest_report(self) -> SourceNote:
        relative = await anyio.to_thread.run_sync(
            functools.partial(find_latest_report, self.vault, self.excluded, layout=self.layout)
        )
        return await self.read(relative)
