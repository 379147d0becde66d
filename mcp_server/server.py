"""Building the MCP server from a retriever (dependency injection, like qmd's
``createMcpServer(store)``): the server never opens the index on its own."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    ToolAnnotations,
)
from pydantic import ValidationError

from signaldesk import __version__
from signaldesk.mcp_server.arguments import invalid_arguments, unknown_arguments
from signaldesk.mcp_server.backend import RetrieverLike, RetrieverOpener, RetrieverSlot
from signaldesk.mcp_server.errors import UnknownToolError
from signaldesk.mcp_server.instructions import build_instructions, vault_heading
from signaldesk.mcp_server.note_source import LocalNotes
from signaldesk.mcp_server.paths import ExcludedPredicate
from signaldesk.mcp_server.results import error_result
from signaldesk.mcp_server.settings import McpSettings
from signaldesk.mcp_server.team import TeamNotes, TeamView, team_heading
from signaldesk.mcp_server.tools import Toolbox
from signaldesk.retrieval.errors import IndexUnavailableError, RetrievalError
from signaldesk.retrieval.ignore import LiveVaultFilter
from signaldesk.retrieval.records import IndexStatus
from signaldesk.vault import DEFAULT_LAYOUT, SignalLayout

__all__ = [
    "SERVER_NAME",
    "TOOL_NAMES",
    "build_server",
    "build_team_server",
    "serve_toolbox",
    "tool_description",
]

SERVER_NAME = "signaldesk"

TOOL_NAMES: tuple[str, ...] = (
    "search",
    "get_context",
    "read_note",
    "list_notes",
    "recent_signals",
    "latest_report",
    "index_status",
)

_log = logging.getLogger(__name__)

_TITLES = {
    "search": "Search the vault",
    "get_context": "Context block for a topic",
    "read_note": "Read a note",
    "list_notes": "List notes",
    "recent_signals": "Recent signals",
    "latest_report": "Latest triage report",
    "index_status": "Index status",
}


def tool_description(fn: Callable[..., Any]) -> str:
    """A tool's description from its docstring: no source indentation, one line per paragraph.

    Clients show the description to the model as it is sent; the SDK sends the raw
    docstring, with the eight spaces of method indentation and the source's line wraps.
    """
    paragraphs = inspect.cleandoc(inspect.getdoc(fn) or "").split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())


class _Server(MCPServer):
    """The SDK's server, with argument mistakes answered like every other tool error.

    The SDK answers a call whose arguments fail validation, an unknown tool or (by
    ignoring them) unknown argument names in its own way: pydantic's report, with no
    advice. These become error results with a hint, like the tools' own errors.
    """

    _schemas: dict[str, dict[str, Any]] | None = None

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[Any, Any] | None = None,
    ) -> GetPromptResult | InputRequiredResult:
        # The SDK answers an unknown prompt with JSON-RPC error code 0, which is no
        # code at all; the protocol asks for "invalid params" (-32602).
        if name not in {prompt.name for prompt in await self.list_prompts()}:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Unknown prompt: {name[:80]!r}; this server has no prompts, only "
                f"tools: {', '.join(TOOL_NAMES)}",
            )
        return await super().get_prompt(name, arguments, context)

    async def _input_schemas(self) -> dict[str, dict[str, Any]]:
        if self._schemas is None:
            self._schemas = {tool.name: tool.input_schema for tool in await self.list_tools()}
        return self._schemas

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        schema = (await self._input_schemas()).get(name)
        if schema is None:
            _log.info("call of an unknown tool %r", name[:80])
            return error_result(
                UnknownToolError(
                    f"there is no tool named {name!r}", hint=f"the tools: {', '.join(TOOL_NAMES)}"
                )
            )
        unknown = unknown_arguments(name, arguments, schema)
        if unknown is not None:
            _log.info("tool %s: unknown arguments %s", name, sorted(arguments)[:20])
            return error_result(unknown)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            errors = exc.__cause__.errors()
            # Field names only: the rejected values are the caller's data.
            _log.info(
                "tool %s: invalid arguments %s", name, sorted({str(e["loc"]) for e in errors})
            )
            return error_result(invalid_arguments(name, errors, schema))


def build_server(
    retriever: RetrieverLike | None,
    *,
    vault: Path,
    settings: McpSettings,
    status: IndexStatus | None = None,
    opener: RetrieverOpener | None = None,
    unavailable: IndexUnavailableError | None = None,
    excluded: ExcludedPredicate | None = None,
    layout: SignalLayout = DEFAULT_LAYOUT,
) -> MCPServer:
    """The MCP server over ``retriever`` for ``vault``; all of its tools are read-only.

    :param retriever: an open (ideally warmed-up) retriever, or ``None`` when the vault has
        no index yet — index-backed tools then answer "run `signaldesk index`" until
        ``opener`` succeeds.
    :param status: what is indexed, for the server's instructions (``None``: unknown).
    :param opener: opens a retriever later, once the index exists.
    :param unavailable: why there is no retriever (its hint is shown to clients).
    :param excluded: paths never returned; default: the vault's ``.indexignore`` (re-read
        whenever the file changes) plus the always-excluded folders.
    :param layout: where the configuration files signals and writes reports.
    """
    vault = vault.resolve()
    if excluded is None:
        excluded = LiveVaultFilter(vault).excluded
    toolbox = Toolbox(
        RetrieverSlot(retriever, opener=opener, unavailable=unavailable),
        notes=LocalNotes(vault, excluded, settings.max_note_bytes, layout),
        settings=settings,
        excluded=excluded,
        layout=layout,
        vault=vault,
    )
    return serve_toolbox(
        toolbox,
        build_instructions(
            vault_heading(vault.name), status, vault=vault, signals_folder=layout.signals
        ),
    )


async def build_team_server(
    view: TeamView, *, settings: McpSettings, layout: SignalLayout = DEFAULT_LAYOUT
) -> MCPServer:
    """The MCP server over a team view of the shared index (see :mod:`mcp_server.team`).

    Nothing is excluded here: each vault's ``.indexignore`` was applied when it was
    indexed, and the always-excluded folders are refused by the path checks.
    """
    try:
        status: IndexStatus | None = await view.status()
    except RetrievalError as exc:
        _log.warning("index status unavailable: %s", exc.message)
        status = None
    toolbox = Toolbox(
        RetrieverSlot(view),
        notes=TeamNotes(view, layout),
        settings=settings,
        excluded=_nothing,
        layout=layout,
    )
    heading = team_heading(await view.visible() if status is not None else ())
    return serve_toolbox(
        toolbox, build_instructions(heading, status, signals_folder=layout.signals)
    )


def _nothing(_: str) -> bool:
    return False


def serve_toolbox(toolbox: Toolbox, instructions: str) -> MCPServer:
    """An MCP server offering ``toolbox``'s tools, read-only, under their names."""
    server: MCPServer = _Server(
        SERVER_NAME,
        title="signaldesk vault search",
        description="Hybrid (keyword + semantic) search over a markdown knowledge vault.",
        instructions=instructions,
        version=__version__,
        # The SDK configures logging when nothing else has; keep its request chatter out.
        log_level="WARNING",
    )
    for name in TOOL_NAMES:
        server.add_tool(
            getattr(toolbox, name),
            name=name,
            title=_TITLES[name],
            description=tool_description(getattr(toolbox, name)),
            annotations=ToolAnnotations(
                title=_TITLES[name],
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
            structured_output=True,
        )
    return server
