"""The structured output of each tool (published to clients as its ``outputSchema``).

Every tool also returns a readable text rendering of the same data (see
:mod:`mcp_server.rendering`); clients that understand structured content use
these models, the rest read the text.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ContextOutput",
    "ErrorInfo",
    "IndexStatusOutput",
    "NoteEntry",
    "NoteListOutput",
    "ReadNoteOutput",
    "ReportOutput",
    "SearchHit",
    "SearchOutput",
    "SignalEntry",
    "SignalListOutput",
]


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ErrorInfo(_Out):
    """What went wrong and what to do about it.

    An error result shows it as text and carries it under ``_meta`` (see
    :mod:`mcp_server.results`); it is never an error result's structured content,
    which clients would check against the tool's success schema.
    """

    code: str = Field(description="Machine-readable kind, e.g. path_refused, index_unavailable.")
    message: str = Field(description="What went wrong.")
    hint: str | None = Field(default=None, description="What to do next.")


class SearchHit(_Out):
    path: str = Field(description="Vault-relative path of the note; pass it to read_note.")
    title: str = Field(description="The note's title.")
    section: str = Field(description="Heading of the section the excerpt comes from.")
    heading_path: list[str] = Field(description="Headings from the top of the note down.")
    text: str = Field(description="The excerpt (cut with '...' when over budget).")
    score: float = Field(
        description="Fused keyword + semantic score; higher is better (compare within one answer)."
    )
    rank: int = Field(description="1-based position in this result list.")
    bm25_rank: int | None = Field(default=None, description="Position in the keyword (BM25) list.")
    vector_rank: int | None = Field(
        default=None, description="Position in the semantic (vector) list."
    )
    start_line: int | None = Field(
        default=None, description="Line of the note where the section starts."
    )
    note_type: str | None = None
    domain: str | None = None
    tags: list[str] = Field(default_factory=list)
    updated: str | None = None


class SearchOutput(_Out):
    query: str
    count: int
    results: list[SearchHit]
    omitted: int = Field(
        default=0,
        description=(
            "Results that ranked within `limit` but did not fit `max_tokens`; a bigger "
            "max_tokens (up to the server's cap) gets them."
        ),
    )
    message: str | None = Field(
        default=None, description="Advice when nothing matched or results were left out."
    )


class ReadNoteOutput(_Out):
    path: str
    title: str | None
    text: str = Field(description="The requested lines of the note, credentials redacted.")
    start_line: int = Field(description="First line returned (1-based).")
    end_line: int = Field(description="Last line returned (inclusive; start_line - 1 if none).")
    total_lines: int
    truncated: bool = Field(description="True when the budget stopped before line_count lines.")
    next_start_line: int | None = Field(
        None, description="Pass as start_line to continue reading, when there is more."
    )


class NoteEntry(_Out):
    path: str
    title: str
    note_type: str | None = None
    domain: str | None = None
    tags: list[str] = Field(default_factory=list)
    status: str | None = None
    created: str | None = None
    updated: str | None = None


class NoteListOutput(_Out):
    count: int
    notes: list[NoteEntry]
    truncated: bool = Field(description="True when more notes matched than were returned.")
    message: str | None = Field(
        default=None, description="How to get the rest, when more matched than were returned."
    )


class ContextOutput(_Out):
    topic: str
    context: str = Field(description="Markdown excerpts, each headed by its source path.")
    sources: list[str] = Field(description="Paths of the notes the excerpts come from.")


class SignalEntry(_Out):
    path: str
    title: str
    domain: str | None = None
    score: float | None = Field(default=None, description="Composite score in [0, 1].")
    relevance: float | None = None
    actionability: float | None = None
    depth: float | None = None
    authority: float | None = None
    source: str | None = Field(default=None, description="URL of the original.")
    created: str | None = None
    tags: list[str] = Field(default_factory=list)


class SignalListOutput(_Out):
    count: int
    signals: list[SignalEntry]
    truncated: bool = Field(description="True when more signals matched than were returned.")
    message: str | None = Field(
        default=None, description="How to get the rest, when more matched than were returned."
    )


class IndexStatusOutput(_Out):
    exists: bool
    notes: int
    chunks: int
    vectors: int
    model: str | None
    dimensions: int | None
    last_indexed: str | None
    degraded: list[str] = Field(description="Search modes that are unavailable right now.")
    folders: dict[str, int] = Field(description="Indexed notes per top-level folder.")
    hint: str | None = Field(default=None, description="What to do when the index is missing.")


class ReportOutput(_Out):
    path: str
    text: str
    total_lines: int
    truncated: bool = Field(description="True when the report was cut to the budget.")
    next_start_line: int | None = Field(
        None, description="When cut: read_note(path, start_line=this) reads the rest."
    )
