"""`signaldesk search` and `signaldesk context`: hybrid search from the shell."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import click

from signaldesk.errors import SignaldeskError
from signaldesk.pipeline.cli._context import AppContext
from signaldesk.pipeline.cli._hints import with_vault
from signaldesk.pipeline.cli._output import print_json, to_jsonable
from signaldesk.pipeline.cli._search_options import (
    QueryCommand,
    filter_options,
    search_parameters,
)
from signaldesk.pipeline.wording import plural
from signaldesk.retrieval.context_block import (
    SOURCE_SEPARATOR,
    ContextExcerpts,
    render_context,
    source_label,
)
from signaldesk.retrieval.errors import RetrievalError
from signaldesk.retrieval.explanation import SearchExplanation
from signaldesk.retrieval.records import SearchFilters, SearchMode, SearchResult

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal
    from rich.console import Console

    from signaldesk.pipeline.config import Workspace
    from signaldesk.pipeline.config_snapshot import SearchSetup
    from signaldesk.retrieval.one_shot import OneShot
    from signaldesk.retrieval.retriever import Retriever

__all__ = ["COMMANDS", "context", "search", "search_arguments", "search_payload"]


def _filters(
    folder: str | None,
    note_type: str | None,
    domain: str | None,
    tags: tuple[str, ...],
    status: str | None,
    since: datetime | None,
    until: datetime | None,
) -> SearchFilters | None:
    filters = SearchFilters(
        folder=folder,
        type=note_type,
        domain=domain,
        tags=tuple(tags),
        status=status,
        since=since.date() if since else None,
        until=until.date() if until else None,
    )
    return None if filters == SearchFilters() else filters


async def _open(workspace: Workspace) -> Retriever:
    # Imported here: loading the embedding stack is only worth it for a search.
    from signaldesk.retrieval.backends import open_retriever
    from signaldesk.retrieval.embedder import LazyEmbedder

    embedder = LazyEmbedder(workspace.config.index)
    return await open_retriever(
        workspace.vault,
        workspace.config.index,
        workspace.config.search,
        embedder,
        postgres=workspace.config.postgres,
    )


class _Searches(Protocol):
    """What the verbs search with: in this thread, whatever the backend."""

    def ask(
        self, query: str, explain: bool, kwargs: dict[str, Any]
    ) -> tuple[list[SearchResult], SearchExplanation | None]:
        """The results, and the explanation when it was asked for."""
        ...

    def context(self, topic: str, filters: SearchFilters | None) -> ContextExcerpts: ...


class _Here:
    """The SQLite index, searched in this thread (retrieval/one_shot.py)."""

    def __init__(self, one: OneShot) -> None:
        self._one = one

    def ask(
        self, query: str, explain: bool, kwargs: dict[str, Any]
    ) -> tuple[list[SearchResult], SearchExplanation | None]:
        exp = self._one.explain(query, explain=explain, **kwargs)
        return list(exp.results), exp if explain else None

    def context(self, topic: str, filters: SearchFilters | None) -> ContextExcerpts:
        return self._one.context(topic, filters=filters)


class _Team:
    """The team database's async retriever, called through a blocking portal."""

    def __init__(self, portal: BlockingPortal, retriever: Retriever) -> None:
        self._portal = portal
        self._retriever = retriever

    def ask(
        self, query: str, explain: bool, kwargs: dict[str, Any]
    ) -> tuple[list[SearchResult], SearchExplanation | None]:
        if explain:
            exp = self._portal.call(partial(self._retriever.explain, query, **kwargs))
            return list(exp.results), exp
        return self._portal.call(partial(self._retriever.search, query, **kwargs)), None

    def context(self, topic: str, filters: SearchFilters | None) -> ContextExcerpts:
        return self._portal.call(partial(self._retriever.context, topic, filters=filters))


@contextmanager
def _searcher(app: AppContext, setup: SearchSetup) -> Iterator[_Searches]:
    """Searches for this process: in this thread on SQLite, no event loop (a one-shot
    search is a hook's whole latency); the team database's async retriever otherwise."""
    if setup.index.backend == "sqlite":
        from signaldesk.retrieval.embedder import LazyEmbedder
        from signaldesk.retrieval.one_shot import open_one_shot

        with open_one_shot(
            setup.vault, setup.index, setup.search, LazyEmbedder(setup.index)
        ) as one:
            yield _Here(one)
        return
    from anyio.from_thread import start_blocking_portal

    with start_blocking_portal() as portal:
        retriever = portal.call(_open, app.workspace())
        try:
            yield _Team(portal, retriever)
        finally:
            portal.call(retriever.aclose)


def search_arguments(
    limit: int | None,
    filters: SearchFilters | None,
    mode: SearchMode | None,
    max_tokens: int | None,
) -> dict[str, Any]:
    """The retriever's arguments for the verb's options (also a forwarded search's)."""
    return {
        "limit": limit,
        "filters": filters,
        "mode": mode,
        "max_tokens": max_tokens,
        # A person who asks for --limit N gets N results; the budget shortens text.
        "fit": "trim",
    }


def search_payload(query: str, results: list[SearchResult]) -> dict[str, Any]:
    """What ``search --json`` prints for ``results`` (in-process or forwarded)."""
    return {"query": query, "results": [_result_json(r) for r in results]}


def _result_json(result: SearchResult) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(result)
    data["source"] = source_label(result)
    return data


def _explain_json(exp: SearchExplanation) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(exp)
    data.pop("results", None)
    data.pop("query", None)
    return data


def _snippet(text: str, section: str = "", width: int = 220) -> str:
    # The words a reader sees (no badge URLs, comments or link targets), on one line,
    # cut between two words rather than inside one. A chunk opens with its heading,
    # which the source column already ends with: the snippet starts after it.
    from signaldesk.retrieval.budget import cut
    from signaldesk.retrieval.cleaning import readable_text

    first, _, rest = text.partition("\n")
    if (
        section
        and first.lstrip().startswith("#")
        and rest.strip()
        and readable_text(first).casefold() == readable_text(section).casefold()
    ):
        text = rest
    flat = readable_text(_table_rows(text)) or re.sub(r"\s+", " ", text).strip()
    return cut(flat, width)


_TABLE_RULE_CELL = re.compile(r":?-{3,}:?")
_CELL_BAR = re.compile(r"(?<!\\)\|")  # "\|" is a bar inside a cell ([[note\|alias]])


def _table_rows(text: str) -> str:
    """Markdown table rows as ``cell · cell;`` (their rule line dropped): on one line a
    table's cells otherwise run into each other, header and rows alike ("note domain
    composite Path traversal in ... security 0.76")."""
    if "|" not in text:
        return text
    out: list[str] = []
    for line in text.split("\n"):
        row = line.strip()
        if not (row.startswith("|") and row.endswith("|") and len(row) > 1):
            out.append(line)
            continue
        cells = [c.strip() for c in _CELL_BAR.split(row[1:-1])]
        if all(_TABLE_RULE_CELL.fullmatch(c) for c in cells if c):
            continue
        out.append(" · ".join(c for c in cells if c) + ";")
    return "\n".join(out)


def _hint_empty_index(console: Console, app: AppContext) -> None:
    """Say so when nothing matched because the index holds no notes at all."""
    from rich.markup import escape

    from signaldesk.retrieval.backends import index_status_of

    workspace = app.workspace()
    vault = app.vault_argument
    status = index_status_of(workspace.vault, workspace.config.index, workspace.config.postgres)
    if status.exists and status.notes == 0:
        console.print(
            f"[yellow]The index of {escape(str(workspace.vault))} holds 0 notes[/]: add notes "
            "to the vault (or point --vault / SIGNALDESK_VAULT at the vault you meant) and run "
            f"{escape(with_vault('`signaldesk index`', vault))}.",
            highlight=False,
            soft_wrap=True,  # the command pastes as it reads
        )


def _narrowed_by(filters: SearchFilters | None, vault: Path | None) -> str:
    """What the filters asked for, so an empty answer says what it was narrowed to
    (and that a folder ``vault`` does not have cannot match; ``None``: the team
    database, whose other vaults may have it)."""
    if filters is None:
        return ""
    from signaldesk.retrieval.filters import normalise_folder

    said: list[str] = []
    if filters.folder:
        folder = normalise_folder(filters.folder)
        missing = (
            ", a folder this vault does not have"
            if vault is not None and not (vault / folder).is_dir()
            else ""
        )
        said.append(f"under {folder}/{missing}")
    for name, value in (("type", filters.type), ("domain", filters.domain)):
        if value:
            said.append(f"{name} {value}")
    if filters.tags:
        said.append("tagged " + " and ".join(filters.tags))
    if filters.status:
        said.append(f"status {filters.status}")
    if filters.since:
        said.append(f"updated on or after {filters.since.isoformat()}")
    if filters.until:
        said.append(f"updated on or before {filters.until.isoformat()}")
    return " (only notes " + "; ".join(said) + ")" if said else ""


def _print_results(
    console: Console,
    query: str,
    results: list[SearchResult],
    vault: Path,
    filters: SearchFilters | None = None,
    *,
    one_vault: bool = True,
) -> None:
    # rich's tables are imported here: `search --json` (a hook's call) never draws one.
    from rich.markup import escape
    from rich.style import Style
    from rich.table import Table
    from rich.text import Text

    if not results:
        narrowed = _narrowed_by(filters, vault if one_vault else None)
        console.print(
            f"No results for [bold]{escape(query)}[/]{escape(narrowed)}.",
            highlight=False,
        )
        if not any(ch.isalnum() for ch in query):
            # Keyword search reads words, and the model has no vector for symbols alone.
            console.print(
                "The query has no letters or digits: punctuation and symbols alone match "
                "nothing; search for words.",
                highlight=False,
            )
        return
    table = Table(title=f"Results for “{escape(query)}”", show_lines=True, expand=True)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("source", ratio=2, overflow="fold")
    table.add_column("snippet", ratio=3)
    for rank, r in enumerate(results, start=1):
        # A terminal that knows links (OSC 8) opens the note on a click, however the
        # path wraps; the text stays the vault-relative path the JSON and MCP give.
        link = Style(link=(vault / r.path).as_uri()) if r.vault is None else Style()
        source = Text(source_label(r), style=link)
        table.add_row(str(rank), f"{r.score:.3f}", source, Text(_snippet(r.text, r.section)))
    console.print(table)


def _fmt(value: float | int | None, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def _print_explain(console: Console, exp: SearchExplanation, rows_shown: int) -> None:
    from rich import box
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    weights = ", ".join(f"{name} {round(value, 3):g}" for name, value in exp.weights.items())
    lines = [
        f"[bold]mode[/]: {exp.mode} (asked: {exp.requested_mode})   [bold]fusion[/]: {exp.fusion}",
        f"[bold]weights[/]: {weights}   "
        f"[bold]rrf k[/]: {exp.rrf_k}   [bold]candidates/list[/]: {exp.candidates}",
        f"[bold]bm25 column weights[/] (text, section, context): {exp.column_weights}",
        "[bold]note column weights[/] (title, aliases, file, tags, headings, body): "
        f"{exp.note_column_weights}",
        f"[bold]MATCH[/]: {escape(exp.match) if exp.match is not None else '(none)'}",
        "[bold]timings[/]: " + ", ".join(f"{k} {v:.1f} ms" for k, v in exp.timings_ms.items()),
    ]
    if exp.degraded:
        lines.append("[bold yellow]degraded[/]: " + escape("; ".join(exp.degraded)))
    console.print(Panel("\n".join(lines), title="explain", expand=False), highlight=False)
    # Headers on two lines and no inner rules: at 80 columns the eight figures then leave
    # the source room to be read (it was squeezed to nothing, the headers cut to "note ra…").
    table = Table(
        title="candidate notes (fused order), each by its best chunk",
        expand=True,
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for name in ("#", "fused", "note\nrank", "note\nbm25", "chunk\nrank", "chunk\nbm25"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("vec\nrank", justify="right", no_wrap=True)
    table.add_column("cosine", justify="right", no_wrap=True)
    table.add_column("source", overflow="fold", ratio=1, min_width=24)
    for rank, row in enumerate(exp.rows[:rows_shown], start=1):
        label = row.path + (f"{SOURCE_SEPARATOR}{row.section}" if row.section else "")
        if row.exact:
            label += "  (exact name)"
        table.add_row(
            str(rank),
            f"{row.score:.4f}",
            _fmt(row.note_rank),
            _fmt(row.note_score, ".3f"),
            _fmt(row.bm25_rank),
            _fmt(row.bm25_score, ".3f"),
            _fmt(row.vector_rank),
            _fmt(row.vector_score, ".3f"),
            Text(label),
        )
    console.print(table)


def _batch(searches: _Searches, path: Path, kwargs: dict[str, Any]) -> None:
    """One JSON line per query line; a line that is not a query gets an error line (its
    line number as id) and the rest still run: one bad line never costs the others."""
    bad: list[int] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                query_id, query = item.get("id", number), item["query"]
            except (ValueError, KeyError, AttributeError) as exc:
                bad.append(number)
                problem = f'line {number}: not a {{"id", "query"}} JSON object ({exc})'
                print_json({"id": number, "error": problem}, lines=True)
                continue
            try:
                results, _ = searches.ask(str(query), False, kwargs)
            except RetrievalError as exc:
                print_json({"id": query_id, "error": exc.message}, lines=True)
                continue
            print_json({"id": query_id, "results": [_result_json(r) for r in results]}, lines=True)
    if bad:
        lines = ", ".join(str(n) for n in bad[:10]) + (", ..." if len(bad) > 10 else "")
        raise SignaldeskError(
            f"{path}: {plural(len(bad), 'line')} not a query ({lines}); the others were run",
            hint='one JSON object per line, e.g. {"id": "q1", "query": "vector search"}',
        )


@click.command("search", cls=QueryCommand)
@search_parameters
@click.pass_obj
def search(
    app: AppContext,
    query: str | None,
    limit: int | None,
    mode: SearchMode | None,
    folder: str | None,
    note_type: str | None,
    domain: str | None,
    tags: tuple[str, ...],
    status: str | None,
    since: datetime | None,
    until: datetime | None,
    max_tokens: int | None,
    explain: bool,
    as_json: bool,
    batch: Path | None,
) -> None:
    """Search the vault's index (keyword + semantic) for QUERY."""
    if (query is None) == (batch is None):
        raise click.UsageError("give either a QUERY or --batch FILE")
    filters = _filters(folder, note_type, domain, tags, status, since, until)
    kwargs = search_arguments(limit, filters, mode, max_tokens)
    setup = app.search_setup()
    with _searcher(app, setup) as searches:
        if batch is not None:
            _batch(searches, batch, kwargs)
            return
        assert query is not None
        results, exp = searches.ask(query, explain, kwargs)
    if as_json:
        payload = search_payload(query, results)
        if exp is not None:
            payload["explain"] = _explain_json(exp)
        print_json(payload)
        return
    if exp is not None:
        _print_explain(app.console, exp, max(10, len(results) * 2))
    _print_results(
        app.console,
        query,
        results,
        setup.vault,
        filters,
        one_vault=setup.index.backend == "sqlite",
    )
    if not results:
        _hint_empty_index(app.console, app)


@click.command("context", cls=QueryCommand)
@click.argument("query")
@click.option("--max-tokens", type=click.IntRange(min=1), help="Token budget for the block.")
@filter_options
@click.option("--json", "as_json", is_flag=True, help='Print {"query", "context"} as JSON.')
@click.pass_obj
def context(
    app: AppContext,
    query: str,
    max_tokens: int | None,
    folder: str | None,
    note_type: str | None,
    domain: str | None,
    tags: tuple[str, ...],
    status: str | None,
    since: datetime | None,
    until: datetime | None,
    as_json: bool,
) -> None:
    """Print a markdown block of vault excerpts about QUERY, each with its source."""
    filters = _filters(folder, note_type, domain, tags, status, since, until)
    setup = app.search_setup()
    with _searcher(app, setup) as searches:
        excerpts = searches.context(query, filters)
    budget = setup.search.max_tokens if max_tokens is None else max(1, max_tokens)
    block = render_context(excerpts, budget).text
    if as_json:
        print_json({"query": query, "context": block})
    else:
        click.echo(block, nl=False)


COMMANDS: list[click.Command] = [search, context]
