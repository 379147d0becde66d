"""The MCP server: a thin, read-only layer over ``retrieval``.

Build it from a retriever (:func:`build_server`), or let :func:`run_stdio` /
:func:`run_http` open, warm up and serve a vault's index.

The names below are loaded on first use: ``pipeline.config`` imports
:class:`McpSettings` on every command, and importing the MCP SDK costs a
second or more that only ``signaldesk mcp`` should pay.
"""

from __future__ import annotations

import importlib
import typing

from signaldesk.mcp_server.settings import McpSettings

if typing.TYPE_CHECKING:
    from signaldesk.mcp_server.backend import RetrieverLike, RetrieverSlot
    from signaldesk.mcp_server.binding import is_loopback
    from signaldesk.mcp_server.client_config import ClientSnippet, client_config
    from signaldesk.mcp_server.errors import (
        InvalidArgumentError,
        McpServerError,
        NoteNotFoundError,
        PathRefusedError,
        TransportConfigError,
        UnknownToolError,
    )
    from signaldesk.mcp_server.http import HttpEndpoint, build_http_app, serve_http
    from signaldesk.mcp_server.paths import ResolvedNote, resolve_note_path
    from signaldesk.mcp_server.runner import prepared_server, run_http, run_stdio
    from signaldesk.mcp_server.server import SERVER_NAME, TOOL_NAMES, build_server

__all__ = [
    "SERVER_NAME",
    "TOOL_NAMES",
    "ClientSnippet",
    "HttpEndpoint",
    "InvalidArgumentError",
    "McpServerError",
    "McpSettings",
    "NoteNotFoundError",
    "PathRefusedError",
    "ResolvedNote",
    "RetrieverLike",
    "RetrieverSlot",
    "TransportConfigError",
    "UnknownToolError",
    "build_http_app",
    "build_server",
    "client_config",
    "is_loopback",
    "prepared_server",
    "resolve_note_path",
    "run_http",
    "run_stdio",
    "serve_http",
]

_LAZY: dict[str, str] = {
    "RetrieverLike": "signaldesk.mcp_server.backend",
    "RetrieverSlot": "signaldesk.mcp_server.backend",
    "ClientSnippet": "signaldesk.mcp_server.client_config",
    "client_config": "signaldesk.mcp_server.client_config",
    "InvalidArgumentError": "signaldesk.mcp_server.errors",
    "McpServerError": "signaldesk.mcp_server.errors",
    "NoteNotFoundError": "signaldesk.mcp_server.errors",
    "PathRefusedError": "signaldesk.mcp_server.errors",
    "TransportConfigError": "signaldesk.mcp_server.errors",
    "UnknownToolError": "signaldesk.mcp_server.errors",
    "HttpEndpoint": "signaldesk.mcp_server.http",
    "build_http_app": "signaldesk.mcp_server.http",
    "is_loopback": "signaldesk.mcp_server.binding",
    "serve_http": "signaldesk.mcp_server.http",
    "ResolvedNote": "signaldesk.mcp_server.paths",
    "resolve_note_path": "signaldesk.mcp_server.paths",
    "prepared_server": "signaldesk.mcp_server.runner",
    "run_http": "signaldesk.mcp_server.runner",
    "run_stdio": "signaldesk.mcp_server.runner",
    "SERVER_NAME": "signaldesk.mcp_server.server",
    "TOOL_NAMES": "signaldesk.mcp_server.server",
    "build_server": "signaldesk.mcp_server.server",
}


def __getattr__(name: str) -> typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_server' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
