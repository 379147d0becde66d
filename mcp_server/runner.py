"""Running the server: open and warm the retriever, build the server, serve a transport.

Readiness comes last on purpose: the embedding model is loaded, the index
opened and a first query run *before* the transport accepts anything, so a
client's first call is as fast as any other and never times out on a cold
model.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

from signaldesk.mcp_server.backend import RetrieverLike
from signaldesk.mcp_server.binding import check_binding
from signaldesk.mcp_server.errors import TransportConfigError
from signaldesk.mcp_server.http import HttpEndpoint, build_http_app, build_team_app, serve_http
from signaldesk.mcp_server.server import build_server, build_team_server
from signaldesk.mcp_server.settings import McpSettings
from signaldesk.mcp_server.team import TeamView
from signaldesk.mcp_server.tokens import Principal
from signaldesk.postgres import PostgresSettings
from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.retrieval.errors import IndexUnavailableError, RetrievalError
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.vault import DEFAULT_LAYOUT, SignalLayout

__all__ = ["prepared_server", "prepared_team_servers", "run_http", "run_stdio"]

_log = logging.getLogger(__name__)


@asynccontextmanager
async def prepared_server(
    vault: Path,
    index: IndexSettings,
    search: SearchSettings,
    settings: McpSettings,
    layout: SignalLayout = DEFAULT_LAYOUT,
) -> AsyncIterator[MCPServer]:
    """A server over ``vault``'s index, warmed up; the retriever is closed on exit.

    A vault without an index (or with one that cannot be read: a damaged file, a
    garbled pointer) still gets a server: its index-backed tools answer with what
    is wrong and the command that fixes it, and it opens the index as soon as it
    can, so the client need not be restarted.
    """
    embedder = LazyEmbedder(index)
    opened: list[RetrieverLike] = []

    async def opener() -> RetrieverLike:
        try:
            retriever = await Retriever.open(vault, index, search, embedder)
        except IndexUnavailableError:
            raise
        except RetrievalError as exc:
            raise _unavailable(exc) from exc
        try:
            started = time.perf_counter()
            await retriever.warm_up()
            _log.info("warmed up in %.0f ms", (time.perf_counter() - started) * 1000)
        except BaseException as exc:
            await retriever.aclose()
            if isinstance(exc, RetrievalError) and not isinstance(exc, IndexUnavailableError):
                raise _unavailable(exc) from exc
            raise
        opened.append(retriever)
        return retriever

    retriever: RetrieverLike | None = None
    unavailable: IndexUnavailableError | None = None
    try:
        retriever = await opener()
    except IndexUnavailableError as exc:
        unavailable = exc
        _log.warning("%s; %s", exc.message, exc.hint or "run `signaldesk index`")
    try:
        status = None
        if retriever is not None:
            try:
                status = await retriever.status()
            except RetrievalError as exc:
                _log.warning("index status unavailable: %s", exc.message)
        server = build_server(
            retriever,
            vault=vault,
            settings=settings,
            status=status,
            opener=opener,
            unavailable=unavailable,
            layout=layout,
        )
        if retriever is not None:
            await _warm_tools(server)
        yield server
    finally:
        with anyio.CancelScope(shield=True):
            for item in opened:
                await item.aclose()


@asynccontextmanager
async def prepared_team_servers(
    index: IndexSettings,
    search: SearchSettings,
    settings: McpSettings,
    postgres: PostgresSettings,
    principals: Sequence[Principal] = (),
    layout: SignalLayout = DEFAULT_LAYOUT,
) -> AsyncIterator[list[tuple[Principal | None, MCPServer]]]:
    """Team mode: a server per principal over the shared index, each confined to the
    principal's vaults (no principals: one server over every vault), sharing one pool of
    connections and one model; warmed up.

    :raises PostgresError: the team database cannot be reached.
    """
    from signaldesk.retrieval.pg_retriever import PgRetriever

    shared = await PgRetriever.connect(postgres, index, search, LazyEmbedder(index))
    try:
        try:
            await shared.warm_up()
        except IndexUnavailableError as exc:
            # No index yet: the tools say so (and what to run) until one is written.
            _log.warning("%s; %s", exc.message, exc.hint or "run `signaldesk index`")
        servers: list[tuple[Principal | None, MCPServer]] = []
        for principal in principals or (None,):
            scoped = (
                shared
                if principal is None or principal.vaults is None
                else shared.confined(principal.vaults)
            )
            server = await build_team_server(TeamView(scoped), settings=settings, layout=layout)
            await _warm_tools(server)
            servers.append((principal, server))
        yield servers
    finally:
        with anyio.CancelScope(shield=True):
            await shared.aclose()


def _unavailable(exc: RetrievalError) -> IndexUnavailableError:
    """The index cannot be searched for a reason other than "not there": the server
    starts anyway and tells the client what to run (SPEC: the vault is the source of
    truth, so `signaldesk index` rebuilds whatever is wrong with the file)."""
    return IndexUnavailableError(
        f"the index cannot be searched: {exc.message}",
        hint=exc.hint or "run `signaldesk index` to rebuild it from the vault",
    )


async def _warm_tools(server: MCPServer) -> None:
    """Call the busiest tools once, so the SDK's per-tool validators and the output
    scrubbing are built before the first client call rather than during it."""
    started = time.perf_counter()
    for name, args in (
        ("search", {"query": "warm up", "limit": 1}),
        ("get_context", {"topic": "warm up", "max_tokens": 100}),
        ("list_notes", {"limit": 1}),
    ):
        result = await server.call_tool(name, args)
        if getattr(result, "is_error", False):
            _log.debug("warm-up call %s answered with an error", name)
    _log.info("tools warmed up in %.0f ms", (time.perf_counter() - started) * 1000)


async def run_stdio(
    vault: Path,
    index: IndexSettings,
    search: SearchSettings,
    settings: McpSettings,
    layout: SignalLayout = DEFAULT_LAYOUT,
    postgres: PostgresSettings | None = None,
) -> None:
    """Serve over stdin/stdout until the client closes the pipe. Logs go to stderr only.

    :param postgres: the team database, used when ``index.backend`` is ``postgres``
        (every vault in it is served).
    """
    async with AsyncExitStack() as stack:
        # stdout is the protocol: anything a library prints while the model and the index
        # load goes to stderr instead. (While serving, the SDK diverts fd 1 itself.)
        with contextlib.redirect_stdout(sys.stderr):
            if index.backend == "postgres":
                teams = await stack.enter_async_context(
                    prepared_team_servers(
                        index, search, settings, postgres or PostgresSettings(), layout=layout
                    )
                )
                server = teams[0][1]
            else:
                server = await stack.enter_async_context(
                    prepared_server(vault, index, search, settings, layout)
                )
        _log.info("MCP server ready on stdio for %s", vault)
        await server.run_stdio_async()


async def run_http(
    vault: Path,
    index: IndexSettings,
    search: SearchSettings,
    settings: McpSettings,
    *,
    host: str | None = None,
    port: int | None = None,
    principals: Sequence[Principal] = (),
    vault_name: str | None = None,
    on_ready: Callable[[HttpEndpoint], None] | None = None,
    layout: SignalLayout = DEFAULT_LAYOUT,
    postgres: PostgresSettings | None = None,
) -> None:
    """Serve streamable HTTP until SIGINT/SIGTERM.

    :param host: overrides ``settings.host``; a non-loopback address needs a token.
    :param port: overrides ``settings.port`` (0: any free port).
    :param principals: the tokens that may call (:func:`mcp_server.tokens.load_principals`);
        none: no token is asked for (loopback only).
    :param vault_name: this vault's name, which every principal must be allowed.
    :param on_ready: called once requests are accepted, with the real URL.
    :param postgres: the team database, used when ``index.backend`` is ``postgres``: each
        principal then gets a server of its own, confined to its vaults.
    :raises TransportConfigError: unsafe binding, a token not allowed this vault, or the
        port is taken.
    """
    host = settings.host if host is None else host
    port = settings.port if port is None else port
    # Refuse an unsafe binding, or a token that could read nothing, before the warm-up.
    check_binding(host, guarded=bool(principals))
    async with AsyncExitStack() as stack:
        if index.backend == "postgres":
            servers = await stack.enter_async_context(
                prepared_team_servers(
                    index, search, settings, postgres or PostgresSettings(), principals, layout
                )
            )
            app = (
                build_team_app(
                    [(p, server) for p, server in servers if p is not None],
                    host=host,
                    port=port,
                    settings=settings,
                )
                if principals
                else build_http_app(servers[0][1], host=host, port=port, settings=settings)
            )
        else:
            _check_vault_allowed(principals, vault_name or vault.name)
            server = await stack.enter_async_context(
                prepared_server(vault, index, search, settings, layout)
            )
            app = build_http_app(
                server, host=host, port=port, settings=settings, principals=principals
            )
        async with anyio.create_task_group() as tg:
            endpoint: HttpEndpoint = await tg.start(
                functools.partial(serve_http, app, host=host, port=port, settings=settings)
            )
            if on_ready is not None:
                on_ready(endpoint)


def _check_vault_allowed(principals: Sequence[Principal], name: str) -> None:
    """One vault served: a token that may not read it is a configuration mistake."""
    for principal in principals:
        if not principal.allows(name):
            raise TransportConfigError(
                f"MCP token {principal.name!r} is not allowed vault {name!r}, the one this "
                "server serves",
                hint=f'add "{name}" to its vaults, or remove the token',
            )
