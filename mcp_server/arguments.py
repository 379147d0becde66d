"""The tools' arguments: their types (descriptions and bounds become each tool's input
schema) and turning them into retrieval filters."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Annotated, Literal

from pydantic import Field

from signaldesk.mcp_server.errors import InvalidArgumentError
from signaldesk.mcp_server.paths import normalise_folder
from signaldesk.retrieval.records import SearchFilters

__all__ = [
    "Day",
    "Domain",
    "Folder",
    "Limit",
    "MaxTokens",
    "Mode",
    "NoteType",
    "Query",
    "Status",
    "Tag",
    "build_filters",
    "parse_day",
    "parse_tags",
]

_RELATIVE_DAYS = re.compile(r"^(\d{1,4})([dw])$")

Query = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1000,
        description="What to look for, in natural language or keywords (any punctuation is safe).",
    ),
]
Limit = Annotated[int, Field(ge=1, le=50, description="Most results to return (1-50).")]
MaxTokens = Annotated[
    int,
    Field(
        ge=50,
        le=32000,
        description="Budget for returned text, about 4 characters a token; long excerpts are "
        "cut with '...' rather than dropped.",
    ),
]
Folder = Annotated[
    str | None,
    Field(
        max_length=300,
        description="Only notes under this vault-relative folder, e.g. '05-signals/security'.",
    ),
]
NoteType = Annotated[
    str | None,
    Field(
        max_length=40,
        description="Only notes of this frontmatter type: note, signal, project, moc or daily.",
    ),
]
Domain = Annotated[
    str | None,
    Field(
        max_length=40,
        description="Only this signal domain, e.g. ai-tooling, security, "
        "systems, programming, web, data, devops, design, mobile, career, research, other.",
    ),
]
Tag = Annotated[
    str | None,
    Field(
        max_length=200,
        description="Only notes with this tag (several: comma-separated, "
        "all required; 'ai' also matches 'ai/llm').",
    ),
]
Status = Annotated[
    str | None,
    Field(max_length=40, description="Only notes with this status: active, archived or draft."),
]
Day = Annotated[
    str | None,
    Field(
        max_length=40,
        description="A day as YYYY-MM-DD, or a span back from today such as '7d' or '2w'.",
    ),
]
Mode = Annotated[
    Literal["hybrid", "bm25", "vector"] | None,
    Field(description="Ranking: hybrid (default), bm25 (keywords only) or vector (meaning only)."),
]


def parse_day(value: str | None, name: str, *, today: date | None = None) -> date | None:
    if value is None or not value.strip():
        return None
    value = value.strip()
    relative = _RELATIVE_DAYS.match(value)
    if relative:
        amount = int(relative.group(1)) * (7 if relative.group(2) == "w" else 1)
        return (today or date.today()) - timedelta(days=amount)
    try:
        # A full timestamp is accepted too; only its day matters.
        return datetime.fromisoformat(value).date() if "T" in value else date.fromisoformat(value)
    except ValueError as exc:
        raise InvalidArgumentError(
            f"{name} must be a day like 2026-11-30 or a span like 7d (got {value!r})",
            hint="send YYYY-MM-DD, or Nd / Nw for N days / weeks back from today",
        ) from exc


def parse_tags(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(t.strip().lstrip("#") for t in value.split(",") if t.strip().lstrip("#"))


def build_filters(
    *,
    folder: str | None = None,
    note_type: str | None = None,
    domain: str | None = None,
    tag: str | None = None,
    status: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> SearchFilters:
    start = parse_day(since, "since")
    end = parse_day(until, "until")
    if start and end and start > end:
        raise InvalidArgumentError(f"since ({start}) is after until ({end})")
    return SearchFilters(
        folder=normalise_folder(folder),
        type=(note_type or "").strip() or None,
        domain=(domain or "").strip() or None,
        tags=parse_tags(tag),
        status=(status or "").strip() or None,
        since=start,
        until=end,
    )
