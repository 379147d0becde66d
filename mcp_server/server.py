"""Building the MCP server from a retriever (dependency injection, like qmd's
``createMcpServer(store)``): the server never opens the index on its own."""

from __future__ import annotations

from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from signaldesk import __version__
from signaldesk.mcp_server.backend import RetrieverLike, RetrieverOpener, RetrieverSlot
from signaldesk.mcp_server.instructions import build_instructions
from signaldesk.mcp_server.paths import ExcludedPredicate
from signaldesk.mcp_server.settings import McpSettings
from signaldesk.mcp_server.tools import Toolbox
from signaldesk.retrieval.errors import IndexUnavailableError
from signaldesk.retrieval.ignore import LiveVaultFilter
from signaldesk.retrieval.records import IndexStatus

__all__ = ["SERVER_NAME", "TOOL_NAMES", "build_server"]

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

_TITLES = {
    "search": "Search the vault",
    "get_context": "Context block for a topic",
    "read_note": "Read a note",
    "list_notes": "List notes",
    "recent_signals": "Recent signals",
    "latest_report": "Latest triage report",
    "index_status": "Index status",
}


def build_server(
    retriever: RetrieverLike | None,
    *,
    vault: Path,
    settings: McpSettings,
    status: IndexStatus | None = None,
    opener: RetrieverOpener | None = None,
    unavailable: IndexUnavailableError | None = None,
    excluded: ExcludedPredicate | None = None,
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
    """
    vault = vault.resolve()
    if excluded is None:
        excluded = LiveVaultFilter(vault).excluded
    slot = RetrieverSlot(retriever, opener=opener, unavailable=unavailable)
    toolbox = Toolbox(slot, vault=vault, settings=settings, excluded=excluded)
    server: MCPServer = MCPServer(
        SERVER_NAME,
        title="signaldesk vault search",
        description="Hybrid (keyword + semantic) search over a markdown knowledge vault.",
        instructions=build_instructions(vault, status),
        version=__version__,
        # The SDK configures logging when nothing else has; keep its request chatter out.
        log_level="WARNING",
    )
    annotations = {
        name: ToolAnnotations(
            title=_TITLES[name],
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
        for name in TOOL_NAMES
    }
    for name in TOOL_NAMES:
        server.add_tool(
            getattr(toolbox, name),
            name=name,
            title=_TITLES[name],
            annotations=annotations[name],
            structured_output=True,
        )
    return server
