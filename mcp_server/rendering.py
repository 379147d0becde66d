"""Readable text renderings of the tool outputs.

The structured content is for programs; most clients show the model the text
content, so it carries the same facts compactly: path and section first (the
source attribution), then the text.
"""

from __future__ import annotations

from signaldesk.mcp_server.models import (
    ErrorInfo,
    IndexStatusOutput,
    NoteListOutput,
    ReadNoteOutput,
    ReportOutput,
    SearchHit,
    SearchOutput,
    SignalListOutput,
)

__all__ = [
    "hit_header",
    "render_error",
    "render_notes",
    "render_read",
    "render_report",
    "render_search",
    "render_signals",
    "render_status",
]


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def hit_header(hit: SearchHit) -> str:
    """``[1] path § Heading > Sub (score 0.0325; bm25 #1, vector #3; line 12)``."""
    ranks = [
        f"{name} #{rank}"
        for name, rank in (("bm25", hit.bm25_rank), ("vector", hit.vector_rank))
        if rank is not None
    ]
    where = " > ".join(hit.heading_path) or hit.section
    details = [f"score {hit.score:.4f}"]
    if ranks:
        details.append(", ".join(ranks))
    if hit.start_line is not None:
        details.append(f"line {hit.start_line}")
    section = f" § {where}" if where else ""
    return f"[{hit.rank}] {hit.path}{section} ({'; '.join(details)})"


def render_search(out: SearchOutput) -> str:
    if not out.results:
        return out.message or f"No results for {out.query!r}."
    noun = "result" if out.count == 1 else "results"
    head = f"{out.count} {noun} for {out.query!r}:"
    if out.omitted and out.message:
        # First, so that capping the text to the budget cannot cut it off.
        head += f"\n[{out.message}]"
    parts = [head]
    for hit in out.results:
        parts.append(f"{hit_header(hit)}\n{hit.text}")
    return "\n\n".join(parts)


def render_read(out: ReadNoteOutput) -> str:
    head = f"{out.path} (lines {out.start_line}-{out.end_line} of {out.total_lines})"
    tail = ""
    if out.next_start_line is not None:
        tail = f"\n\n[more: call read_note with start_line={out.next_start_line}]"
    return f"{head}\n\n{out.text}{tail}"


def render_notes(out: NoteListOutput) -> str:
    if not out.notes:
        return out.message or "No notes match these filters."
    lines = [f"{out.count} note(s):"]
    if out.message:
        lines.append(f"[{out.message}]")
    for note in out.notes:
        date = note.updated or note.created or ""
        extra = ", ".join(x for x in (note.note_type, note.domain, date) if x)
        lines.append(f"- {note.path} — {note.title}" + (f" ({extra})" if extra else ""))
    return "\n".join(lines)


def render_signals(out: SignalListOutput) -> str:
    if not out.signals:
        return out.message or "No filed signals match these filters."
    lines = [f"{out.count} signal(s), newest first:"]
    if out.message:
        lines.append(f"[{out.message}]")
    for sig in out.signals:
        dims = (
            f"rel {_score(sig.relevance)} act {_score(sig.actionability)} "
            f"dep {_score(sig.depth)} auth {_score(sig.authority)}"
        )
        lines.append(
            f"- [{_score(sig.score)}] {sig.title} — {sig.domain or 'other'}, "
            f"{sig.created or 'undated'} ({dims})\n  {sig.path}"
            + (f"\n  {sig.source}" if sig.source else "")
        )
    return "\n".join(lines)


def render_status(out: IndexStatusOutput) -> str:
    if not out.exists:
        return "No index yet" + (f": {out.hint}" if out.hint else ".")
    folders = ", ".join(f"{name} ({count})" for name, count in out.folders.items())
    lines = [
        f"{out.notes} notes, {out.chunks} chunks, {out.vectors} vectors",
        f"model: {out.model or 'none'}" + (f" ({out.dimensions} dims)" if out.dimensions else ""),
        f"last indexed: {out.last_indexed or 'never'}",
        f"degraded: {', '.join(out.degraded) or 'no'}",
    ]
    if folders:
        lines.append(f"folders: {folders}")
    return "\n".join(lines)


def render_report(out: ReportOutput) -> str:
    head = f"{out.path} ({out.total_lines} lines)"
    if out.next_start_line is not None:
        # First, so that capping the text to the budget cannot cut it off.
        head += (
            f"\n[cut to budget; for the rest call read_note with path={out.path!r} and "
            f"start_line={out.next_start_line}]"
        )
    elif out.truncated:
        head += " (cut to budget)"
    return f"{head}\n\n{out.text}"


def render_error(err: ErrorInfo) -> str:
    return f"Error ({err.code}): {err.message}" + (f"\nWhat to do: {err.hint}" if err.hint else "")
