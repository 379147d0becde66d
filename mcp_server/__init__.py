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

from mcp_server.settings import McpSettings

if typing.TYPE_CHECKING:
    from mcp_server.backend import RetrieverLike, RetrieverSlot
    from mcp_server.binding import is_loopback
    from mcp_server.client_config import ClientSnippet, client_config
    from mcp_server.errors import (
        InvalidArgumentError,
        McpServerError,
        NoteNotFoundError,
        PathRefusedError,
        TransportConfigError,
    )
    from mcp_server.http import HttpEndpoint, build_http_app, serve_http
    from mcp_server.paths import ResolvedNote, resolve_note_path
    from mcp_server.runner import prepared_server, run_http, run_stdio
    from mcp_server.server import SERVER_NAME, TOOL_NAMES, build_server

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
    "RetrieverLike": "mcp_server.backend",
    "RetrieverSlot": "mcp_server.backend",
    "ClientSnippet": "mcp_server.client_config",
    "client_config": "mcp_server.client_config",
    "InvalidArgumentError": "mcp_server.errors",
    "McpServerError": "mcp_server.errors",
    "NoteNotFoundError": "mcp_server.errors",
    "PathRefusedError": "mcp_server.errors",
    "TransportConfigError": "mcp_server.errors",
    "HttpEndpoint": "mcp_server.http",
    "build_http_app": "mcp_server.http",
    "is_loopback": "mcp_server.binding",
    "serve_http": "mcp_server.http",
    "ResolvedNote": "mcp_server.paths",
    "resolve_note_path": "mcp_server.paths",
    "prepared_server": "mcp_server.runner",
    "run_http": "mcp_server.runner",
    "run_stdio": "mcp_server.runner",
    "SERVER_NAME": "mcp_server.server",
    "TOOL_NAMES": "mcp_server.server",
    "build_server": "mcp_server.server",
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
