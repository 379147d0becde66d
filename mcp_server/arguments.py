"""The tools' arguments: their types (descriptions and bounds become each tool's input
schema) and turning them into retrieval filters."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Annotated, Any, Literal

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
    "invalid_arguments",
    "parse_day",
    "parse_tags",
    "unknown_arguments",
]

_RELATIVE_DAYS = re.compile(r"^(\d{1,4})([dw])$")
_SHOWN_CHARS = 60
_MAX_PROBLEMS = 5

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
        raise InvalidArgumentError(
            f"since ({start}) is after until ({end})",
            hint="swap since and until, or give only one of them",
        )
    return SearchFilters(
        folder=normalise_folder(folder),
        type=(note_type or "").strip() or None,
        domain=(domain or "").strip() or None,
        tags=parse_tags(tag),
        status=(status or "").strip() or None,
        since=start,
        until=end,
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def invalid_arguments(
    tool: str, errors: Sequence[Mapping[str, Any]], schema: Mapping[str, Any]
) -> InvalidArgumentError:
    """What is wrong with a call's arguments (``ValidationError.errors()``), and, as the hint,
    what each offending argument takes (from the tool's input schema).

    The SDK's own message for this is pydantic's report (with a link to pydantic's
    docs and no advice); a model fixes its call sooner when told the argument's range.
    """
    properties: Mapping[str, Any] = schema.get("properties") or {}
    problems: list[str] = []
    advice: dict[str, str] = {}
    for error in errors[:_MAX_PROBLEMS]:
        loc = [str(part) for part in error["loc"]]
        field = ".".join(loc) or "arguments"
        got = "" if error["type"] == "missing" else f" (got {_shown(error['input'])})"
        problems.append(f"{field}: {error['msg'].rstrip('.')}{got}")
        spec = properties.get(loc[0]) if loc else None
        if isinstance(spec, Mapping) and isinstance(spec.get("description"), str):
            advice.setdefault(loc[0], f"{loc[0]}: {spec['description']}")
    if len(errors) > _MAX_PROBLEMS:
        problems.append(f"and {len(errors) - _MAX_PROBLEMS} more")
    hint = " ".join(advice.values()) or f"see the input schema of {tool} in tools/list"
    return InvalidArgumentError(
        f"invalid arguments for {tool}: " + "; ".join(problems),
        hint=f"{hint} Fix the arguments and call {tool} again.",
    )


def unknown_arguments(
    tool: str, given: Iterable[str], schema: Mapping[str, Any]
) -> InvalidArgumentError | None:
    """An error naming the arguments ``tool`` does not take (``None`` if all are known).

    The SDK ignores unknown names, so a misspelt ``max_token`` would silently fall
    back to the default; saying so lets the caller correct it.
    """
    known = list(schema.get("properties") or {})
    unknown = sorted(set(given) - set(known))
    if not unknown:
        return None
    names = ", ".join(repr(name) for name in unknown)
    return InvalidArgumentError(
        f"{tool} has no argument {names}",
        hint=f"{tool} takes: {', '.join(known) or 'no arguments'}",
    )
