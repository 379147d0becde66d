"""The tools: each one validates its arguments, asks the retriever or reads a note,
and returns a scrubbed, budgeted result.

Every tool returns a ``CallToolResult``: on success the readable text plus the
structured content (validated against the tool's output model); on failure an
``isError`` result whose text says what went wrong and what to do, with the same
:class:`~mcp_server.models.ErrorInfo` under ``_meta`` (see :mod:`mcp_server.results`).
Nothing a tool raises reaches the protocol layer.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, TypeVar

import anyio
import anyio.to_thread
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from signaldesk.mcp_server.advice import more_message, nothing_message
from signaldesk.mcp_server.arguments import (
    Day,
    Domain,
    Folder,
    Limit,
    MaxTokens,
    Mode,
    NoteType,
    Query,
    Status,
    Tag,
    build_filters,
    parse_day,
)
from signaldesk.mcp_server.backend import RetrieverSlot
from signaldesk.mcp_server.budget import cap_text, token_chars
from signaldesk.mcp_server.commands import for_vault
from signaldesk.mcp_server.errors import InvalidArgumentError, NoteNotFoundError
from signaldesk.mcp_server.models import (
    ContextOutput,
    IndexStatusOutput,
    NoteEntry,
    NoteListOutput,
    ReadNoteOutput,
    ReportOutput,
    SearchHit,
    SearchOutput,
    SignalEntry,
    SignalListOutput,
)
from signaldesk.mcp_server.note_source import NoteSource
from signaldesk.mcp_server.notes import (
    ExcludedPredicate,
    is_board_or_drawing,
    scrub_preserving_lines,
    split_lines,
    title_of,
)
from signaldesk.mcp_server.rendering import (
    render_notes,
    render_read,
    render_report,
    render_search,
    render_signals,
    render_status,
)
from signaldesk.mcp_server.results import NO_INDEX_HINT, guarded, success_result
from signaldesk.mcp_server.settings import McpSettings
from signaldesk.retrieval.context_block import render_context
from signaldesk.retrieval.errors import IndexUnavailableError
from signaldesk.retrieval.records import SearchFilters
from signaldesk.signal_note import SIGNAL_TYPE, signal_scores
from signaldesk.vault import DEFAULT_LAYOUT, SignalLayout

__all__ = ["Toolbox"]

_M = TypeVar("_M", bound=BaseModel)

# Signals read from the index per call, to sort by filing date and apply min_score.
_SIGNAL_SCAN = 5000
# The largest `limit` of list_notes and recent_signals.
_LIST_LIMIT = 500
_SIGNAL_LIMIT = 100


class Toolbox:
    """The tool implementations, sharing the retriever slot, the vault and the settings.

    :param slot: where the retriever is (or will be, once the index exists).
    :param notes: where ``read_note`` and ``latest_report`` read a note's text.
    :param excluded: ``True`` for a vault-relative path that must never be returned
        (``.indexignore`` and the always-excluded folders).
    :param layout: where the configuration files signals and writes reports.
    :param vault: the vault on disk (none in team mode), named in the commands hints give.
    """

    def __init__(
        self,
        slot: RetrieverSlot,
        *,
        notes: NoteSource,
        settings: McpSettings,
        excluded: ExcludedPredicate,
        layout: SignalLayout = DEFAULT_LAYOUT,
        vault: Path | None = None,
    ) -> None:
        self.vault = vault
        self.slot = slot
        self.notes = notes
        self.settings = settings
        self.excluded = excluded
        self.layout = layout

    def _hidden(self, path: str) -> bool:
        """Whether an indexed note must be left out of an answer: it is excluded, or it
        was deleted since the index was last updated (the vault is the source of truth,
        and a path that read_note cannot open sends the model round in circles)."""
        return self.excluded(path) or not self.notes.exists(path)

    # -- search ------------------------------------------------------------------

    @guarded
    async def search(
        self,
        query: Query,
        limit: Limit = 5,
        max_tokens: MaxTokens = 2000,
        folder: Folder = None,
        type: NoteType = None,
        domain: Domain = None,
        tag: Tag = None,
        status: Status = None,
        since: Day = None,
        until: Day = None,
        mode: Mode = None,
    ) -> Annotated[CallToolResult, SearchOutput]:
        """Search the vault (hybrid keyword + semantic ranking) and return the best excerpts.

        Each result has the note's path (pass it to read_note for the whole note), the
        section heading, the excerpt, the fused score and its rank in the keyword and
        vector lists. Filters narrow by folder, frontmatter type/domain/tag/status and
        date (since/until on the note's updated or created day).
        """
        filters = build_filters(
            folder=folder,
            note_type=type,
            domain=domain,
            tag=tag,
            status=status,
            since=since,
            until=until,
        )
        budget = min(max_tokens, self.settings.search_max_tokens)
        retriever = await self.slot.get()
        # Room for the per-result header lines of the text rendering.
        text_budget = max(50, budget - 30 * limit)
        page = await retriever.search_page(
            query, limit=limit, filters=filters, mode=mode, max_tokens=text_budget
        )
        results = page.results
        hits = [
            SearchHit(
                path=r.path,
                title=r.title,
                section=r.section,
                heading_path=list(r.heading_path),
                text=r.text,
                score=round(r.score, 6),
                rank=rank,
                bm25_rank=r.bm25_rank,
                vector_rank=r.vector_rank,
                start_line=r.start_line,
                note_type=r.note_type,
                domain=r.domain,
                tags=list(r.tags),
                updated=r.updated,
            )
            for rank, r in enumerate((r for r in results if not self._hidden(r.path)), start=1)
        ]
        message = None
        if not hits:
            message = nothing_message(
                f"No notes match {query!r}",
                "try broader or different words",
                folder=folder,
                type=type,
                domain=domain,
                tag=tag,
                status=status,
                since=since,
                until=until,
            )
        elif page.omitted:
            # The budget rules over MCP; say what was left out and how to get it.
            # Results are kept in rank order while they fit: a lower limit shows fewer,
            # never the ones left out; only a bigger budget does, up to the server's cap.
            most = self.settings.search_max_tokens
            left = f"{page.omitted} more result(s) within limit={limit} did not fit max_tokens"
            message = (
                f"{left}={budget}: raise max_tokens (at most {most}) to see them"
                if budget < most
                else f"{left}={budget}, the most this server returns"
                + (f" ({max_tokens} was asked)" if max_tokens > budget else "")
                + ": narrow the query or the filters to see others, or read_note a result whole"
            )
        out = SearchOutput(
            query=query, count=len(hits), results=hits, omitted=page.omitted, message=message
        )
        return success_result(out, render_search, token_chars(budget))

    @guarded
    async def get_context(
        self,
        topic: Query,
        max_tokens: MaxTokens = 2000,
        folder: Folder = None,
        domain: Domain = None,
        tag: Tag = None,
    ) -> Annotated[CallToolResult, ContextOutput]:
        """One markdown block of the vault's most relevant excerpts about a topic.

        Each excerpt is headed by its source (note path and heading), in rank order; the
        block keeps to max_tokens and the last excerpt is cut with '...' rather than
        dropped. Use it to ground an answer; use search to see scores and ranks.
        """
        filters = build_filters(folder=folder, domain=domain, tag=tag)
        budget = min(max_tokens, self.settings.search_max_tokens)
        retriever = await self.slot.get()
        # An index built before a path was added to `.indexignore` may still hold it;
        # the next index run drops it, and until then it must not be returned.
        excerpts = (await retriever.context(topic, filters=filters)).without(self._hidden)
        rendered = render_context(excerpts, budget)
        text = rendered.text
        if not rendered.sources:
            # The block would say "no notes in the index match", even when a filter did it.
            text = nothing_message(
                f"No notes match {topic!r}",
                "try broader or different words",
                folder=folder,
                domain=domain,
                tag=tag,
            )
        out = ContextOutput(topic=topic, context=text, sources=list(rendered.sources))
        return success_result(out, lambda o: o.context, token_chars(budget))

    # -- notes -------------------------------------------------------------------

    @guarded
    async def read_note(
        self,
        path: Annotated[
            str,
            Field(
                min_length=1,
                max_length=1024,
                description="Vault-relative path of the note, as given by search or list_notes.",
            ),
        ],
        start_line: Annotated[
            int | None, Field(ge=1, description="First line to return (1-based; default 1).")
        ] = None,
        line_count: Annotated[
            int | None,
            Field(ge=1, le=20000, description="How many lines to return (default: to the end)."),
        ] = None,
    ) -> Annotated[CallToolResult, ReadNoteOutput]:
        """Read a note from the vault (credentials redacted), whole or a range of lines.

        Long notes come a page at a time: when the answer is cut, next_start_line says
        where to continue. The path may leave out '.md', as a [[wiki-link]] does; a path
        that names no note is answered with the likely ones. Only markdown notes inside the
        vault can be read; excluded folders (.obsidian, the templates and attachments
        folders, .indexignore matches) are refused.
        """
        note = await self.notes.read(path)
        raw = note.text
        if is_board_or_drawing(raw):
            raise NoteNotFoundError(
                f"{note.relative!r} is an Excalidraw drawing or a Kanban board, not a note",
                hint="these files are excluded from the index; open them in Obsidian",
            )
        # Scrub the whole note before taking a range: a range could start inside a
        # private key block, whose middle lines no pattern would recognise alone.
        lines = split_lines(await anyio.to_thread.run_sync(scrub_preserving_lines, raw))
        total = len(lines)
        start = start_line or 1
        if total and start > total:
            raise InvalidArgumentError(
                f"start_line {start} is past the end of {note.relative!r} ({total} lines)",
                hint=f"use a start_line between 1 and {total}",
            )
        stop = total if line_count is None else min(total, start - 1 + line_count)
        budget = token_chars(self.settings.read_max_tokens)
        taken: list[str] = []
        used = 0
        for line in lines[start - 1 : stop]:
            if used + len(line) + 1 > budget:
                if not taken:
                    taken.append(cap_text(line, budget))
                break
            taken.append(line)
            used += len(line) + 1
        end = start - 1 + len(taken)
        truncated = end < stop
        out = ReadNoteOutput(
            path=note.relative,
            title=title_of(raw, note.relative),
            text="\n".join(taken),
            start_line=start,
            end_line=end,
            total_lines=total,
            truncated=truncated,
            next_start_line=end + 1 if end < total and (truncated or line_count is None) else None,
        )
        return success_result(out, render_read, budget + 400)

    @guarded
    async def list_notes(
        self,
        folder: Folder = None,
        tag: Tag = None,
        type: NoteType = None,
        domain: Domain = None,
        status: Status = None,
        since: Day = None,
        until: Day = None,
        limit: Annotated[
            int, Field(ge=1, le=_LIST_LIMIT, description=f"Most notes to list (1-{_LIST_LIMIT}).")
        ] = 50,
    ) -> Annotated[CallToolResult, NoteListOutput]:
        """List indexed notes matching the filters, most recently updated first.

        Returns paths, titles, types, domains, tags and dates (no note text): use it to
        explore a folder or a period, then read_note or search.
        """
        filters = build_filters(
            folder=folder,
            note_type=type,
            domain=domain,
            tag=tag,
            status=status,
            since=since,
            until=until,
        )
        retriever = await self.slot.get()
        notes = await retriever.list_notes(filters, limit=limit + 1)
        entries = [
            NoteEntry(
                path=n.path,
                title=n.title,
                note_type=n.note_type,
                domain=n.domain,
                tags=list(n.tags),
                status=n.status,
                created=n.created,
                updated=n.updated,
            )
            for n in notes
            if not self._hidden(n.path)
        ]
        kept, truncated = _fit(entries, limit, token_chars(self.settings.list_max_tokens))
        message = more_message(
            "notes", len(kept), limit, _LIST_LIMIT, truncated, "folder, tag, type or since"
        )
        if not kept:
            message = nothing_message(
                "No indexed notes",
                folder=folder,
                tag=tag,
                type=type,
                domain=domain,
                status=status,
                since=since,
                until=until,
            )
        out = NoteListOutput(count=len(kept), notes=kept, truncated=truncated, message=message)
        return success_result(out, render_notes, token_chars(self.settings.list_max_tokens))

    @guarded
    async def recent_signals(
        self,
        domain: Domain = None,
        since: Day = None,
        min_score: Annotated[
            float | None,
            Field(
                ge=0.0, le=1.0, description="Only signals whose composite score is at least this."
            ),
        ] = None,
        limit: Annotated[
            int,
            Field(
                ge=1, le=_SIGNAL_LIMIT, description=f"Most signals to return (1-{_SIGNAL_LIMIT})."
            ),
        ] = 10,
    ) -> Annotated[CallToolResult, SignalListOutput]:
        """The latest filed signals (scored intake, under 05-signals/ by default), newest first.

        Each has its title, domain, composite score and the four dimension scores
        (relevance, actionability, depth, authority), the source URL and the note's path.
        """
        # `since` applies to the filing day (`created`); the index's date filter would
        # also let through old signals whose file was merely touched.
        start = parse_day(since, "since")
        filters = SearchFilters(
            folder=self.layout.signals, type=SIGNAL_TYPE, domain=(domain or "").strip() or None
        )
        retriever = await self.slot.get()
        # The index orders by `updated` (a file's mtime when the frontmatter has none);
        # a signal's age is when it was filed (`created`), so sort here, over enough of them.
        notes = await retriever.list_notes(filters, limit=_SIGNAL_SCAN)
        notes.sort(key=lambda n: ((n.created or n.updated or "")[:19], n.path), reverse=True)
        entries: list[SignalEntry] = []
        for n in notes:
            filed = (n.created or n.updated or "")[:10]
            if (start is not None and filed < start.isoformat()) or self._hidden(n.path):
                continue
            scores = signal_scores(n.frontmatter)
            composite = scores.get("composite")
            if min_score is not None and (composite is None or composite < min_score):
                continue
            source = n.frontmatter.get("source") or n.frontmatter.get("url")
            entries.append(
                SignalEntry(
                    path=n.path,
                    title=n.title,
                    domain=n.domain,
                    score=composite,
                    relevance=scores.get("relevance"),
                    actionability=scores.get("actionability"),
                    depth=scores.get("depth"),
                    authority=scores.get("authority"),
                    source=source if isinstance(source, str) else None,
                    created=n.created or n.updated,
                    tags=list(n.tags),
                )
            )
            if len(entries) > limit:
                break
        kept, truncated = _fit(entries, limit, token_chars(self.settings.list_max_tokens))
        message = more_message(
            "signals", len(kept), limit, _SIGNAL_LIMIT, truncated, "domain, since or min_score"
        )
        if not kept:
            message = nothing_message(
                "No filed signals", domain=domain, since=since, min_score=min_score
            )
            if not (domain or since or min_score is not None):
                message = for_vault(
                    f"No filed signals in {self.layout.signals}/ yet: `signaldesk scan` files "
                    "them from the subscribed feeds.",
                    self.vault,
                )
        out = SignalListOutput(count=len(kept), signals=kept, truncated=truncated, message=message)
        return success_result(out, render_signals, token_chars(self.settings.list_max_tokens))

    @guarded
    async def latest_report(self) -> Annotated[CallToolResult, ReportOutput]:
        """The newest daily triage report (06-daily/*-triage.md by default): what arrived per source
        and domain, what was filed with its scores, what was rejected near the threshold,
        inbox items waiting, failing feeds and parked errors."""
        note = await self.notes.latest_report()
        raw = note.text
        budget = token_chars(self.settings.report_max_tokens)
        # Line-preserving, so that where the text stops is a line read_note can go on from.
        scrubbed = await anyio.to_thread.run_sync(scrub_preserving_lines, raw)
        text = cap_text(scrubbed, budget)
        # Compared with the scrubbed text: a redaction shorter than the secret is no cut.
        truncated = len(text) < len(scrubbed)
        out = ReportOutput(
            path=note.relative,
            text=text,
            total_lines=len(split_lines(raw)),
            truncated=truncated,
            # The last line shown may be cut short: reading goes on from it.
            next_start_line=text.count("\n") + 1 if truncated else None,
        )
        return success_result(out, render_report, budget + 400)

    # -- index -------------------------------------------------------------------

    @guarded
    async def index_status(self) -> Annotated[CallToolResult, IndexStatusOutput]:
        """What is indexed: note, chunk and vector counts, the embedding model, when the
        index was last updated, notes per folder, and any degraded search mode."""
        # No index is an answer here, not an error, whether it never existed or was
        # deleted under the open retriever.
        try:
            status = await (await self.slot.get()).status()
        except IndexUnavailableError as exc:
            out = IndexStatusOutput(
                exists=False,
                notes=0,
                chunks=0,
                vectors=0,
                model=None,
                dimensions=None,
                last_indexed=None,
                degraded=[],
                folders={},
                hint=for_vault(f"{exc.message}; {exc.hint or NO_INDEX_HINT}", self.vault),
            )
            return success_result(out, render_status, token_chars(self.settings.list_max_tokens))
        last = status.last_indexed
        out = IndexStatusOutput(
            exists=status.exists,
            notes=status.notes,
            chunks=status.chunks,
            vectors=status.vectors,
            model=status.model,
            dimensions=status.dimensions,
            last_indexed=last.isoformat() if isinstance(last, datetime) else None,
            degraded=list(status.degraded),
            folders=dict(status.folders),
        )
        return success_result(out, render_status, token_chars(self.settings.list_max_tokens))


def _fit(entries: list[_M], limit: int, max_chars: int) -> tuple[list[_M], bool]:
    """The first ``limit`` entries whose JSON fits ``max_chars``; and whether any were left."""
    kept: list[_M] = []
    used = 0
    for entry in entries[:limit]:
        size = len(entry.model_dump_json()) + 2
        if kept and used + size > max_chars:
            return kept, True
        kept.append(entry)
        used += size
    return kept, len(entries) > len(kept)
