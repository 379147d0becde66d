"""Team mode: one MCP server per token over the shared PostgreSQL index, each confined to
the token's vaults.

Clients see the team's vaults as one tree whose top folders are the vault names: a path is
``<vault>/<path in the vault>`` in every result and in every argument (``read_note``'s
``path``, the ``folder`` filters), so a path copied from ``search`` reads the right note and
a path can never name a vault outside the token's set. The retriever each server gets is
already confined (:meth:`PgRetriever.confined`), so a tool cannot widen what it sees; the
qualifying here only renames.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterable
from typing import Protocol

from signaldesk.mcp_server.backend import RetrieverLike
from signaldesk.mcp_server.errors import NoteNotFoundError
from signaldesk.mcp_server.note_source import SourceNote
from signaldesk.mcp_server.notes import newest_report
from signaldesk.mcp_server.paths import check_relative_path
from signaldesk.retrieval.context_block import ContextExcerpts, Excerpt
from signaldesk.retrieval.records import (
    IndexStatus,
    NoteInfo,
    SearchFilters,
    SearchMode,
    SearchPage,
    SearchResult,
)
from signaldesk.vault import DEFAULT_LAYOUT, SignalLayout

__all__ = ["TeamIndex", "TeamNotes", "TeamView", "team_heading"]

# Notes scanned per call to find the newest triage report of the visible vaults.
_REPORT_SCAN = 5000


class TeamIndex(RetrieverLike, Protocol):
    """What team mode needs of the shared index (:class:`retrieval.pg_retriever.PgRetriever`):
    the tools' surface, and the stored note text and the vault names."""

    async def read_note(self, vault: str, path: str) -> str | None: ...

    async def vault_names(self) -> frozenset[str]: ...


def team_heading(vaults: Iterable[str]) -> str:
    """The first line of a team server's instructions."""
    names = ", ".join(repr(v) for v in sorted(vaults)) or "none yet"
    return (
        f"signaldesk: search over the team's markdown vaults ({names}). Every path begins "
        "with its vault's name (`<vault>/<folder>/<note>.md`): pass it as it is to read_note, "
        "and use a vault name as the first folder of a `folder` filter."
    )


def _qualified(vault: str | None, path: str) -> str:
    return f"{vault}/{path}" if vault else path


class TeamView:
    """A confined index seen as one tree of ``<vault>/<path>`` (a ``RetrieverLike``).

    :param index: the shared index, already confined to what this view may see.
    :param refresh_seconds: how long the list of indexed vaults is reused (a vault indexed
        for the first time shows up within this long).
    """

    def __init__(self, index: TeamIndex, *, refresh_seconds: float = 30.0) -> None:
        self._index = index
        self._refresh = refresh_seconds
        self._known: frozenset[str] = frozenset()
        self._known_at = -math.inf

    async def visible(self) -> frozenset[str]:
        """The indexed vaults this view may see."""
        now = time.monotonic()
        if now - self._known_at > self._refresh:
            self._known, self._known_at = await self._index.vault_names(), now
        return self._known

    async def split(self, path: str) -> tuple[str, str] | None:
        """``(vault, path in the vault)`` for a qualified path of a visible vault."""
        vault, sep, inner = path.partition("/")
        if not sep or not inner or vault not in await self.visible():
            return None
        return vault, inner

    async def _filters(self, filters: SearchFilters | None) -> SearchFilters:
        """The client's filters in the index's terms: a folder that starts with a vault
        name narrows to that vault; any other folder applies inside every visible vault
        (so ``recent_signals``' signals folder finds each vault's signals)."""
        base = filters or SearchFilters()
        folder = base.folder
        if folder:
            vault, _, inner = folder.partition("/")
            if vault in await self.visible():
                wanted = frozenset({vault}) if base.vaults is None else base.vaults & {vault}
                return dataclasses.replace(base, folder=inner or None, vaults=wanted)
        return base

    def _result(self, result: SearchResult) -> SearchResult:
        return dataclasses.replace(result, path=_qualified(result.vault, result.path))

    async def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        max_tokens: int | None = None,
    ) -> list[SearchResult]:
        page = await self.search_page(
            query, limit=limit, filters=filters, mode=mode, max_tokens=max_tokens
        )
        return list(page.results)

    async def search_page(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        max_tokens: int | None = None,
    ) -> SearchPage:
        page = await self._index.search_page(
            query,
            limit=limit,
            filters=await self._filters(filters),
            mode=mode,
            max_tokens=max_tokens,
        )
        return dataclasses.replace(page, results=tuple(self._result(r) for r in page.results))

    async def context(self, topic: str, *, filters: SearchFilters | None = None) -> ContextExcerpts:
        found = await self._index.context(topic, filters=await self._filters(filters))
        excerpts = tuple(
            Excerpt(
                self._result(e.result),
                _qualified(e.result.vault, e.linked_from) if e.linked_from else None,
            )
            for e in found.excerpts
        )
        return ContextExcerpts(found.topic, excerpts)

    async def list_notes(
        self, filters: SearchFilters | None = None, *, limit: int = 50
    ) -> list[NoteInfo]:
        notes = await self._index.list_notes(await self._filters(filters), limit=limit)
        return [dataclasses.replace(n, path=_qualified(n.vault, n.path)) for n in notes]

    async def read(self, vault: str, path: str) -> str | None:
        return await self._index.read_note(vault, path)

    async def status(self) -> IndexStatus:
        status = await self._index.status()
        # The shared index names folders `vault:folder`; here they are paths like any other.
        folders = {name.replace(":", "/", 1): n for name, n in status.folders.items()}
        return dataclasses.replace(status, folders=folders)

    async def warm_up(self) -> None:
        await self._index.warm_up()

    async def aclose(self) -> None:
        await self._index.aclose()


@dataclasses.dataclass(frozen=True, slots=True)
class TeamNotes:
    """``read_note`` and ``latest_report`` from the note text the shared index holds."""

    view: TeamView
    layout: SignalLayout = DEFAULT_LAYOUT

    async def read(self, path: str) -> SourceNote:
        relative = check_relative_path(path)
        where = await self.view.split(relative)
        text = None if where is None else await self.view.read(*where)
        if text is None:
            raise NoteNotFoundError(
                f"no note at {relative!r}",
                hint="paths begin with the vault's name; use `search` or `list_notes` to "
                "find the note's exact path",
            )
        return SourceNote(relative, text)

    def exists(self, relative: str) -> bool:
        # The shared index holds the text itself: what it lists can be read.
        return True

    async def latest_report(self) -> SourceNote:
        notes = await self.view.list_notes(
            SearchFilters(folder=self.layout.reports), limit=_REPORT_SCAN
        )
        newest = newest_report(((n.path, n.mtime) for n in notes), self.layout)
        return await self.read(newest)
