"""The MCP server end to end, in process: the real retriever over a real indexed vault,
driven by the SDK's own client. (The stdio and HTTP transports: test_mcp_transports.py.)"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult
from mcp_vault import (
    FORBIDDEN_TEXT,
    SECRETS,
    build_vault,
    index_vault,
    traversal_variants,
)

from signaldesk.mcp_server import TOOL_NAMES, McpSettings, build_server
from signaldesk.mcp_server.models import (
    ContextOutput,
    IndexStatusOutput,
    NoteListOutput,
    ReadNoteOutput,
    ReportOutput,
    SearchOutput,
    SignalListOutput,
)
from signaldesk.mcp_server.results import error_info
from signaldesk.retrieval.context_block import ContextExcerpts
from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.retrieval.errors import IndexUnavailableError
from signaldesk.retrieval.records import (
    IndexStatus,
    NoteInfo,
    SearchFilters,
    SearchMode,
    SearchPage,
    SearchResult,
)
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.vault import DEFAULT_LAYOUT, SignalLayout

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def indexed_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    vault = build_vault(tmp_path_factory.mktemp("mcp"))
    index_vault(vault)
    return vault


@pytest.fixture(scope="module")
def embedder() -> LazyEmbedder:
    return LazyEmbedder(IndexSettings())


@asynccontextmanager
async def connected(
    vault: Path,
    embedder: LazyEmbedder,
    settings: McpSettings | None = None,
    layout: SignalLayout = DEFAULT_LAYOUT,
) -> AsyncIterator[Client]:
    retriever = await Retriever.open(vault, IndexSettings(), SearchSettings(), embedder)
    try:
        await retriever.warm_up()
        server = build_server(
            retriever,
            vault=vault,
            settings=settings or McpSettings(),
            status=await retriever.status(),
            layout=layout,
        )
        async with Client(server) as client:
            yield client
    finally:
        await retriever.aclose()


def everything(result: CallToolResult) -> str:
    """Every byte a client receives for a call (text and structured content)."""
    return json.dumps(result.model_dump(mode="json"), ensure_ascii=False)


def error_of(result: CallToolResult) -> dict[str, Any]:
    """An error result's code, message and hint, checked to be what every client accepts:
    no structured content (clients check it against the tool's success schema), and the
    message and the hint in the text the model reads."""
    assert result.is_error, everything(result)
    assert result.structured_content is None, everything(result)
    info = error_info(result)
    assert info is not None, everything(result)
    assert info.message in text_of(result) and (info.hint or "") in text_of(result)
    return info.model_dump()


async def call(client: Client, name: str, args: dict[str, Any] | None = None) -> CallToolResult:
    result = await client.call_tool(name, args or {})
    assert isinstance(result, CallToolResult)
    return result


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert block.type == "text"
    return block.text


# -- the tool list -------------------------------------------------------------------


async def test_tools_are_listed_read_only_with_schemas(
    indexed_vault: Path, embedder: LazyEmbedder
) -> None:
    async with connected(indexed_vault, embedder) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == set(TOOL_NAMES)
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40
        # What the model reads: prose, not the docstring's source indentation and wraps.
        for paragraph in tool.description.split("\n\n"):
            assert paragraph == " ".join(paragraph.split()), repr(tool.description)
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.destructive_hint is False
        assert tool.annotations.idempotent_hint is True
        assert tool.annotations.open_world_hint is False
        assert tool.output_schema is not None
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    search = tools["search"].input_schema["properties"]
    assert search["limit"]["default"] == 5 and search["limit"]["maximum"] == 50
    assert search["max_tokens"]["default"] == 2000
    assert tools["search"].input_schema["required"] == ["query"]
    assert tools["read_note"].input_schema["required"] == ["path"]


async def test_instructions_are_built_from_the_index(
    indexed_vault: Path, embedder: LazyEmbedder
) -> None:
    async with connected(indexed_vault, embedder) as client:
        instructions = client.instructions or ""
        status = IndexStatusOutput.model_validate(
            (await call(client, "index_status")).structured_content
        )
    assert f"{status.notes} notes in {status.chunks} chunks" in instructions
    assert "03-resources/" in instructions
    assert "security" in instructions and "ai-tooling" in instructions
    assert "search(" in instructions and "read_note(" in instructions


# -- each tool -------------------------------------------------------------------------


async def test_search_ranks_with_attribution(indexed_vault: Path, embedder: LazyEmbedder) -> None:
    async with connected(indexed_vault, embedder) as client:
        result = await call(client, "search", {"query": "WAL readers keep reading writer"})
    assert not result.is_error, everything(result)
    out = SearchOutput.model_validate(result.structured_content)
    assert out.count == len(out.results) >= 1
    top = out.results[0]
    assert top.path == "03-resources/sqlite-wal.md"
    assert top.rank == 1 and top.score > 0
    assert top.section and top.title == "SQLite WAL mode"
    assert top.bm25_rank is not None or top.vector_rank is not None
    text = text_of(result)
    assert text.startswith(f"{out.count} result")
    assert "[1] 03-resources/sqlite-wal.md" in text


async def test_search_filters_and_empty_results(
    indexed_vault: Path, embedder: LazyEmbedder
) -> None:
    async with connected(indexed_vault, embedder) as client:
        signals = await call(
            client, "search", {"query": "advisory upgrade", "folder": "05-signals", "limit": 10}
        )
        security = await call(client, "search", {"query": "release", "domain": "security"})
        tagged = await call(client, "search", {"query": "ownership", "tag": "rust"})
        none = await call(client, "search", {"query": "ownership", "tag": "no-such-tag-anywhere"})
        punctuation = await call(client, "search", {"query": 'AND OR NOT "-: (sqlite*'})
    paths = [h.path for h in SearchOutput.model_validate(signals.structured_content).results]
    assert paths and all(p.startswith("05-signals/") for p in paths)
    sec = SearchOutput.model_validate(security.structured_content).results
    assert all(h.domain == "security" for h in sec)
    assert SearchOutput.model_validate(tagged.structured_content).results[0].path == (
        "03-resources/rust-ownership.md"
    )
    empty = SearchOutput.model_validate(none.structured_content)
    assert empty.count == 0 and empty.message and "broader" in text_of(none)
    assert not punctuation.is_error, everything(punctuation)


async def test_search_output_keeps_to_the_token_budget(
    indexed_vault: Path, embedder: LazyEmbedder
) -> None:
    async with connected(indexed_vault, embedder) as client:
        result = await call(
            client, "search", {"query": "archived measurement", "limit": 5, "max_tokens": 60}
        )
    assert not result.is_error, everything(result)
    assert len(text_of(result)) <= 60 * 4
    out = SearchOutput.model_validate(result.structured_content)
    assert out.results and out.results[-1].text.endswith("...")


async def test_search_says_how_many_results_the_budget_left_out(
    indexed_vault: Path, embedder: LazyEmbedder
) -> None:
    async with connected(indexed_vault, embedder) as client:
        tight = await call(client, "search", {"query": "notes", "limit": 10, "max_tokens": 60})
        roomy = await call(client, "search", {"query": "notes", "limit": 10, "max_tokens": 8000})
    assert not tight.is_error and not roomy.is_error
    small = SearchOutput.model_validate(tight.structured_content)
    large = SearchOutput.model_validate(roomy.structured_content)
    assert small.omitted > 0 and small.count + small.omitted <= 10
    assert small.message is not None and "max_tokens" in small.message
    assert "raise max_tokens (at most 8000) to see them" in text_of(tight)
    assert "lower limit" not in text_of(tight)  # a lower limit shows fewer, not those
    assert large.count > small.count and large.omitted == 0


async def test_search_at_the_servers_cap_does_not_ask_for_more_budget(
    indexed_vault: Path, embedder: LazyEmbedder
) -> None:
    capped = McpSettings(search_max_tokens=100)
    async with connected(indexed_vault, embedder, capped) as client:
        result = await call(client, "search", {"query": "notes", "limit": 10, "max_tokens": 9000})
    out = SearchOutput.model_validate(result.structured_content)
    assert out.omitted > 0 and out.message is not None, everything(result)
    assert "raise max_tokens" not in out.message
    assert "max_tokens=100, the most this server returns (9000 was asked)" in text_of(result)


async def test_search_arguments_are_validated(indexed_vault: Path, embedder: LazyEmbedder) -> None:
    async with connected(indexed_vault, embedder) as client:
        too_many = await call(client, "search", {"query": "x", "limit": 500})
        bad_day = await call(client, "search", {"query": "x", "since": "last tuesday"})
        reversed_days = await call(
            client, "search", {"query": "x", "since": "2026-11-30", "until": "2026-01-01"}
        )
    assert error_of(too_many)["code"] == "invalid_argument"
    assert error_of(bad_day)["code"] == "invalid_argument"
    assert "YYYY-MM-DD" in error_of(bad_day)["hint"]
    assert error_of(reversed_days)["code"] == "invalid_argument"


async def test_argument_mistakes_say_what_the_argument_takes(
    indexed_vault: Path, embedder: LazyEmbedder
) -> None:
    """The SDK's own answer to these is pydantic's report with no advice (or, for an
    unknown name, silence): each is an error result whose hint says what to send."""
    async with connected(indexed_vault, embedder) as client:
        too_many = error_of(await call(client, "search", {"query": "x", "limit": 500}))
        missing = error_of(await call(client, "search", {"limit": 3}))
        wrong_type = error_of(await call(client, "read_note", {"path": ["a.md"]}))
        misspelt = error_of(await call(client, "search", {"query": "x", "max_token": 100}))
        no_tool = error_of(await call(client, "delete_note", {"path": "a.md"}))
    assert too_many["code"] == "invalid_argument"
    assert "limit" in too_many["message"] and "500" in too_many["message"]
    assert "(1-50)" in too_many["hint"] and "pydantic" not in too_many["message"]
    assert "query" in missing["message"] and "What to look for" in missing["hint"]
    assert "path" in wrong_type["message"] and "Vault-relative path" in wrong_type["hint"]
    assert "'max_token'" in misspelt["message"] and "max_tokens" in misspelt["hint"]
    assert no_tool["code"] == "unknown_tool" and "read_note" in no_tool["hint"]


async def test_read_note_whole_and_by_lines(indexed_vault: Path, embedder: LazyEmbedder) -> None:
    async with connected(indexed_vault, embedder) as client:
        whole = await call(client, "read_note", {"path": "03-resources/sqlite-wal.md"})
        part = await call(
            client,
            "read_note",
            {"path": "03-resources/sqlite-wal.md", "start_line": 9, "line_count": 3},
        )
        past = await call(
            client, "read_note", {"path": "03-resources/sqlite-wal.md", "start_line": 999}
        )
        missing = await call(client, "read_note", {"path": "03-resources/nope.md"})
    out = ReadNoteOutput.model_validate(whole.structured_content)
    expected = (indexed_vault / "03-resources" / "sqlite-wal.md").read_text().rstrip("\n")
    assert out.text == expected
    assert out.title == "SQLite WAL mode"
    lines = len(expected.splitlines())
    assert (out.start_line, out.end_line, out.total_lines) == (1, lines, lines)
    assert not out.truncated and out.next_start_line is None
    sub = ReadNoteOutput.model_validate(part.structured_content)
    assert sub.text.splitlines() == expected.splitlines()[8:11]
    assert (sub.start_line, sub.end_line) == (9, 11)
    assert sub.next_start_line is None
    assert error_of(past)["code"] == "invalid_argument"
    assert error_of(missing)["code"] == "not_found"


async def test_read_note_pages_a_long_note(indexed_vault: Path, embedder: LazyEmbedder) -> None:
    settings = McpSettings(read_max_tokens=1000)
    async with connected(indexed_vault, embedder, settings) as client:
        first = await call(client, "read_note", {"path": "04-archive/long-note.md"})
        page = ReadNoteOutput.model_validate(first.structured_content)
        assert page.truncated and page.next_start_line == page.end_line + 1
        assert len(page.text) <= 4000 and len(text_of(first)) <= 4000 + 400
        second = await call(
            client,
            "read_note",
            {"path": "04-archive/long-note.md", "start_line": page.next_start_line},
        )
    nxt = ReadNoteOutput.model_validate(second.structured_content)
    assert nxt.start_line == page.end_line + 1
    assert (
        nxt.text.splitlines()[0]
        == f"Line {nxt.start_line}: archived measurement " + str(nxt.start_line * 7) + "."
    )


async def test_list_notes_filters_and_order(indexed_vault: Path, embedder: LazyEmbedder) -> None:
    async with connected(indexed_vault, embedder) as client:
        everything_listed = await call(client, "list_notes", {"limit": 500})
        signals = await call(client, "list_notes", {"folder": "05-signals", "type": "signal"})
        tagged = await call(client, "list_notes", {"tag": "sqlite"})
        recent = await call(client, "list_notes", {"since": "2026-11-21", "until": "2026-11-30"})
        limited = await call(client, "list_notes", {"limit": 2})
    all_paths = [
        n.path for n in NoteListOutput.model_validate(everything_listed.structured_content).notes
    ]
    assert "03-resources/sqlite-wal.md" in all_paths
    for excluded in ("private/diary.md", ".obsidian/snippets.md", "07-templates/daily-template.md"):
        assert excluded not in all_paths
    sig = NoteListOutput.model_validate(signals.structured_content)
    assert sorted(n.path.split("/")[1] for n in sig.notes) == ["ai-tooling", "data", "security"]
    assert [n.path for n in NoteListOutput.model_validate(tagged.structured_content).notes] == [
        "03-resources/sqlite-wal.md"
    ]
    dates = [
        (n.updated or n.created or "")[:10]
        for n in NoteListOutput.model_validate(recent.structured_content).notes
    ]
    assert dates and all("2026-11-21" <= d <= "2026-11-30" for d in dates)
    assert dates == sorted(dates, reverse=True)
    lim = NoteListOutput.model_validate(limited.structured_content)
    assert lim.count == 2 and lim.truncated


async def test_get_context_is_one_attributed_block(
    indexed_vault: Path, embedder: LazyEmbedder
) -> None:
    async with connected(indexed_vault, embedder) as client:
        result = await call(client, "get_context", {"topic": "sqlite busy timeout readers"})
        small = await call(
            client, "get_context", {"topic": "archived measurement", "max_tokens": 80}
        )
    out = ContextOutput.model_validate(result.structured_content)
    assert "### 03-resources/sqlite-wal.md" in out.context
    assert out.sources[0] == "03-resources/sqlite-wal.md"
    assert text_of(result) == out.context
    cut = ContextOutput.model_validate(small.structured_content)
    assert len(text_of(small)) <= 80 * 4
    assert cut.context.rstrip().endswith("...")


async def test_recent_signals_from_frontmatter(indexed_vault: Path, embedder: LazyEmbedder) -> None:
    async with connected(indexed_vault, embedder) as client:
        result = await call(client, "recent_signals")
        strong = await call(client, "recent_signals", {"min_score": 0.6})
        security = await call(client, "recent_signals", {"domain": "security"})
        since = await call(client, "recent_signals", {"since": "2026-11-24"})
    out = SignalListOutput.model_validate(result.structured_content)
    assert [s.domain for s in out.signals] == ["security", "ai-tooling", "data"]
    first = out.signals[0]
    assert first.title == "OpenSSH advisory fixes pre-auth race"
    assert (first.score, first.relevance, first.actionability, first.depth, first.authority) == (
        0.81,
        0.9,
        0.85,
        0.7,
        0.75,
    )
    assert first.source == "https://example.org/openssh-advisory"
    nested = out.signals[1]
    assert (nested.score, nested.relevance) == (0.64, 0.8)
    assert out.signals[2].score == 0.58  # `score:` stands for the composite
    assert [
        s.score for s in SignalListOutput.model_validate(strong.structured_content).signals
    ] == [
        0.81,
        0.64,
    ]
    assert SignalListOutput.model_validate(security.structured_content).count == 1
    assert SignalListOutput.model_validate(since.structured_content).count == 2
    assert "[0.81] OpenSSH advisory" in text_of(result)


async def test_an_empty_signal_list_says_why(embedder: LazyEmbedder, tmp_path: Path) -> None:
    """No signals at all is not "no match": the answer says none were filed yet, and what
    files them; with a filter, it names the filter."""
    vault = build_vault(tmp_path)
    shutil.rmtree(vault / "05-signals")
    index_vault(vault)
    async with connected(vault, embedder) as client:
        none = await call(client, "recent_signals")
        filtered = await call(client, "recent_signals", {"domain": "security", "since": "7d"})
    assert text_of(none) == (
        f"No filed signals in 05-signals/ yet: `signaldesk --vault {vault.resolve()} scan` "
        "files them from the subscribed feeds."
    )
    out = SignalListOutput.model_validate(filtered.structured_content)
    assert out.count == 0 and out.message == text_of(filtered)
    assert "No filed signals with domain='security', since='7d'" in text_of(filtered)


async def test_a_report_cut_to_budget_says_where_read_note_goes_on(
    embedder: LazyEmbedder, tmp_path: Path
) -> None:
    vault = build_vault(tmp_path)
    rows = "".join(f"| feed {n} | rss | {n} | {n % 3} |\n" for n in range(80))
    (vault / "06-daily" / "2026-11-30-triage.md").write_text(
        f"# Triage report 2026-11-30\n\n## Arrived\n\n{rows}", encoding="utf-8"
    )
    index_vault(vault)
    tight = McpSettings(report_max_tokens=100)
    async with connected(vault, embedder, tight) as client:
        report = await call(client, "latest_report")
        out = ReportOutput.model_validate(report.structured_content)
        assert out.truncated and out.next_start_line is not None, everything(report)
        hint = f"call read_note with path={out.path!r} and start_line={out.next_start_line}]"
        assert hint in text_of(report)
        rest = await call(
            client, "read_note", {"path": out.path, "start_line": out.next_start_line}
        )
    shown = out.text.removesuffix("...").rstrip()
    # Nothing is skipped: the rest begins with the line the cut report ended on.
    last = shown.split("\n")[-1]
    assert ReadNoteOutput.model_validate(rest.structured_content).text.startswith(last)
    assert (vault / out.path).read_text(encoding="utf-8").startswith(shown)


async def test_a_report_with_a_redaction_is_not_cut(embedder: LazyEmbedder, tmp_path: Path) -> None:
    # A redaction shorter than the secret made the answer look cut to budget.
    vault = build_vault(tmp_path)
    key = SECRETS["private_key_body"]
    report = vault / "06-daily" / "2026-11-30-triage.md"
    report.write_text(
        f"# Triage 2026-11-30\n\n-----BEGIN RSA PRIVATE KEY-----\n{key}\n{key}\n"
        "-----END RSA PRIVATE KEY-----\n\nThe end.\n",
        encoding="utf-8",
    )
    index_vault(vault)
    async with connected(vault, embedder) as client:
        result = await call(client, "latest_report")
    out = ReportOutput.model_validate(result.structured_content)
    assert key not in everything(result) and "The end." in out.text
    assert not out.truncated and out.next_start_line is None, everything(result)
    assert "cut to budget" not in text_of(result)


async def test_latest_report_is_the_newest(indexed_vault: Path, embedder: LazyEmbedder) -> None:
    async with connected(indexed_vault, embedder) as client:
        result = await call(client, "latest_report")
    out = ReportOutput.model_validate(result.structured_content)
    assert out.path == "06-daily/2026-11-29-triage.md"
    assert "```mermaid" in out.text and not out.truncated


async def test_signals_and_reports_are_found_where_the_configuration_puts_them(
    indexed_vault: Path, embedder: LazyEmbedder, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(indexed_vault, vault, ignore=shutil.ignore_patterns(".signaldesk"))
    (vault / "05-signals").rename(vault / "Signals")
    (vault / "06-daily").rename(vault / "Journal")
    index_vault(vault)
    layout = SignalLayout(signals="Signals", report_path="Journal/{date}-triage.md")
    async with connected(vault, embedder, layout=layout) as client:
        signals = await call(client, "recent_signals")
        report = await call(client, "latest_report")
    assert [
        s.domain for s in SignalListOutput.model_validate(signals.structured_content).signals
    ] == [
        "security",
        "ai-tooling",
        "data",
    ]
    assert ReportOutput.model_validate(report.structured_content).path == (
        "Journal/2026-11-29-triage.md"
    )


async def test_index_status(indexed_vault: Path, embedder: LazyEmbedder) -> None:
    async with connected(indexed_vault, embedder) as client:
        result = await call(client, "index_status")
    out = IndexStatusOutput.model_validate(result.structured_content)
    assert out.exists and out.notes >= 10 and out.chunks >= out.notes
    assert out.model and out.last_indexed
    assert "private" not in out.folders and ".obsidian" not in out.folders


# -- safety ---------------------------------------------------------------------------------


async def test_traversal_variants_are_refused(indexed_vault: Path, embedder: LazyEmbedder) -> None:
    async with connected(indexed_vault, embedder) as client:
        for raw in traversal_variants(indexed_vault):
            result = await call(client, "read_note", {"path": raw})
            assert result.is_error, f"{raw!r} was not refused: {everything(result)}"
            payload = everything(result)
            for marker in FORBIDDEN_TEXT:
                assert marker not in payload, raw
            if raw:  # the empty path fails schema validation before the tool runs
                assert error_of(result)["code"] == "path_refused", raw
        folder = await call(client, "list_notes", {"folder": "../outside"})
        assert error_of(folder)["code"] == "path_refused"


async def test_planted_secrets_never_leave_the_server(
    indexed_vault: Path, embedder: LazyEmbedder
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "deploy credentials GitHub token Slack key", "limit": 10}),
        ("search", {"query": "signing key private", "mode": "bm25"}),
        ("get_context", {"topic": "deploy credentials cloud access database", "max_tokens": 4000}),
        ("read_note", {"path": "00-inbox/deploy-credentials.md"}),
        (
            "read_note",
            {"path": "00-inbox/deploy-credentials.md", "start_line": 28, "line_count": 2},
        ),
        ("list_notes", {"limit": 500}),
        ("recent_signals", {"limit": 100}),
        ("latest_report", {}),
        ("index_status", {}),
    ]
    async with connected(indexed_vault, embedder) as client:
        for name, args in calls:
            result = await call(client, name, args)
            payload = everything(result)
            for label, secret in SECRETS.items():
                assert secret not in payload, f"{label} leaked through {name}({args})"
        whole = await call(client, "read_note", {"path": "00-inbox/deploy-credentials.md"})
    out = ReadNoteOutput.model_validate(whole.structured_content)
    assert "[REDACTED:" in out.text
    # Line numbers still match the file even though a multi-line key block was redacted.
    on_disk = (indexed_vault / "00-inbox" / "deploy-credentials.md").read_text().splitlines()
    assert out.total_lines == len(on_disk)
    assert out.text.splitlines()[-1] == on_disk[-1]


# -- no index, failures ---------------------------------------------------------------------


async def test_without_an_index_tools_say_what_to_do(
    tmp_path: Path, embedder: LazyEmbedder
) -> None:
    vault = build_vault(tmp_path)
    opened: list[Retriever] = []

    async def opener() -> Retriever:
        retriever = await Retriever.open(vault, IndexSettings(), SearchSettings(), embedder)
        opened.append(retriever)
        return retriever

    with pytest.raises(IndexUnavailableError) as missing:
        await opener()
    server = build_server(
        None, vault=vault, settings=McpSettings(), opener=opener, unavailable=missing.value
    )
    # The command names the vault served: a shell's own `signaldesk index` may index another.
    command = f"`signaldesk --vault {vault.resolve()} index`"
    try:
        async with Client(server) as client:
            assert command in (client.instructions or "")
            search = await call(client, "search", {"query": "sqlite"})
            error = error_of(search)
            assert error["code"] == "index_unavailable"
            assert command in error["hint"]
            assert command in text_of(search)
            status = IndexStatusOutput.model_validate(
                (await call(client, "index_status")).structured_content
            )
            assert not status.exists and command in (status.hint or "")
            # Reading needs no index.
            read = await call(client, "read_note", {"path": "03-resources/sqlite-wal.md"})
            assert not read.is_error
            # Once the index exists, the same server finds it: no restart needed.
            await anyio.to_thread.run_sync(index_vault, vault)
            found = await call(client, "search", {"query": "sqlite wal"})
            assert not found.is_error, everything(found)
    finally:
        for retriever in opened:
            await retriever.aclose()


class _BrokenRetriever:
    """Fails in the ways a retriever can: crashes, and hangs."""

    def __init__(self, hang: bool = False) -> None:
        self.hang = hang

    async def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        max_tokens: int | None = None,
    ) -> list[SearchResult]:
        if self.hang:
            await anyio.sleep_forever()
        raise RuntimeError(f"database exploded near {SECRETS['github_token']}")

    async def search_page(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        max_tokens: int | None = None,
    ) -> SearchPage:
        await self.search(query)
        raise AssertionError("unreachable")

    async def context(self, topic: str, *, filters: SearchFilters | None = None) -> ContextExcerpts:
        raise RuntimeError("boom")

    async def list_notes(
        self, filters: SearchFilters | None = None, *, limit: int = 50
    ) -> list[NoteInfo]:
        return []

    async def status(self) -> IndexStatus:
        return IndexStatus(db_path="x", exists=True)

    async def warm_up(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


async def test_unexpected_failures_are_generic_errors(tmp_path: Path) -> None:
    vault = build_vault(tmp_path)
    server = build_server(_BrokenRetriever(), vault=vault, settings=McpSettings())
    async with Client(server) as client:
        result = await call(client, "search", {"query": "anything"})
    error = error_of(result)
    assert error["code"] == "internal_error"
    assert "exploded" not in everything(result)
    assert SECRETS["github_token"] not in everything(result)


async def test_a_hung_call_times_out_with_a_structured_error(tmp_path: Path) -> None:
    vault = build_vault(tmp_path)
    settings = McpSettings(tool_timeout_seconds=0.2)
    server = build_server(_BrokenRetriever(hang=True), vault=vault, settings=settings)
    async with Client(server) as client:
        with anyio.fail_after(10):
            result = await call(client, "search", {"query": "anything"})
    assert "took longer" in error_of(result)["message"]


async def test_an_index_deleted_under_the_server(embedder: LazyEmbedder, tmp_path: Path) -> None:
    """Deleted while the server runs (the user wiped .signaldesk/): the search tools say
    what to run, with the vault served, and index_status answers that there is none."""
    vault = build_vault(tmp_path)
    index_vault(vault)
    command = f"`signaldesk --vault {vault.resolve()} index`"
    async with connected(vault, embedder) as client:
        for path in (vault / ".signaldesk").glob("index.db*"):
            path.unlink()
        search = await call(client, "search", {"query": "sqlite"})
        status = await call(client, "index_status")
    assert error_of(search)["code"] == "index_unavailable"
    assert command in error_of(search)["hint"]
    assert not status.is_error, everything(status)
    out = IndexStatusOutput.model_validate(status.structured_content)
    assert not out.exists and command in (out.hint or "")


async def test_no_triage_report_yet(tmp_path: Path) -> None:
    vault = build_vault(tmp_path)
    shutil.rmtree(vault / "06-daily")
    server = build_server(_BrokenRetriever(), vault=vault, settings=McpSettings())
    async with Client(server) as client:
        result = await call(client, "latest_report")
    error = error_of(result)
    assert error["code"] == "not_found"
    assert f"`signaldesk --vault {vault.resolve()} report`" in error["hint"]
