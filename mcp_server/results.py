"""Tool results: the success shape (scrubbed text and structured content, capped) and
the error shape (``isError`` with code, message and what to do), and the guard that
turns every failure of a tool into the latter.

An error result carries *no* structured content. Each tool declares an output schema
for its success shape, and clients check structured content against it: the MCP
Inspector and the TypeScript SDK 1.x do so even when ``isError`` is set, and refused the
old ``{"error": {...}}`` payload with "Structured content does not match the tool's
output schema", so the hint never reached the model. Every client accepts an error
result without structured content, so the message and the hint travel as its text,
and the same facts, for programs, under ``_meta`` (:data:`ERROR_META_KEY`), which no
client validates.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import ParamSpec, Protocol, TypeVar, cast

import anyio
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel

from signaldesk.errors import SignaldeskError
from signaldesk.mcp_server.budget import cap_text
from signaldesk.mcp_server.commands import for_vault
from signaldesk.mcp_server.errors import McpServerError
from signaldesk.mcp_server.models import ErrorInfo
from signaldesk.mcp_server.rendering import render_error
from signaldesk.mcp_server.scrubbing import scrub_data, scrub_text
from signaldesk.mcp_server.settings import McpSettings
from signaldesk.retrieval.errors import (
    IndexLockedError,
    IndexUnavailableError,
    ModelError,
    QueryError,
    RetrievalError,
)

__all__ = [
    "ERROR_META_KEY",
    "NO_INDEX_HINT",
    "error_info",
    "error_result",
    "guarded",
    "success_result",
]

_log = logging.getLogger(__name__)

_P = ParamSpec("_P")
_M = TypeVar("_M", bound=BaseModel)

NO_INDEX_HINT = "run `signaldesk index` to build the index, then call this tool again"
_DOCTOR_HINT = "try again; if it keeps failing, run `signaldesk doctor`"
# Where an error result carries its code, message and hint for programs (a `_meta` key:
# a name prefix, a slash, a name, as the protocol asks of implementation-defined keys).
ERROR_META_KEY = "signaldesk/error"


class _Configured(Protocol):
    settings: McpSettings
    vault: Path | None


def _error_info(exc: BaseException) -> ErrorInfo:
    if isinstance(exc, McpServerError):
        return ErrorInfo(code=exc.code, message=exc.message, hint=exc.hint)
    if isinstance(exc, IndexUnavailableError):
        return ErrorInfo(
            code="index_unavailable", message=exc.message, hint=exc.hint or NO_INDEX_HINT
        )
    if isinstance(exc, IndexLockedError):
        return ErrorInfo(
            code="index_busy", message=exc.message, hint=exc.hint or "try again shortly"
        )
    if isinstance(exc, QueryError):
        return ErrorInfo(
            code="invalid_query", message=exc.message, hint=exc.hint or "rephrase the query"
        )
    # Every error says what to do, even when the layer that raised it did not.
    if isinstance(exc, ModelError):
        return ErrorInfo(
            code="model_unavailable", message=exc.message, hint=exc.hint or _DOCTOR_HINT
        )
    if isinstance(exc, RetrievalError | SignaldeskError):
        return ErrorInfo(code="retrieval_error", message=exc.message, hint=exc.hint or _DOCTOR_HINT)
    return ErrorInfo(
        code="internal_error",
        message="the server failed unexpectedly; the details are in its log",
        hint=_DOCTOR_HINT,
    )


def error_result(exc: BaseException, vault: Path | None = None) -> CallToolResult:
    """An ``isError`` result for ``exc``, scrubbed (an error message may quote a note):
    the message and the hint as text, the same as :class:`ErrorInfo` under ``_meta``.

    :param vault: the vault served, named in the commands the hint gives (see
        :func:`~mcp_server.commands.for_vault`).
    """
    info = _error_info(exc)
    if vault is not None and info.hint:
        info = info.model_copy(update={"hint": for_vault(info.hint, vault)})
    info = ErrorInfo.model_validate(scrub_data(info.model_dump(mode="json")))
    return CallToolResult(
        content=[TextContent(type="text", text=render_error(info))],
        is_error=True,
        _meta={ERROR_META_KEY: info.model_dump(mode="json")},
    )


def error_info(result: CallToolResult) -> ErrorInfo | None:
    """The :class:`ErrorInfo` an error result carries (``None`` for a success)."""
    raw = (result.meta or {}).get(ERROR_META_KEY) if result.is_error else None
    return ErrorInfo.model_validate(raw) if isinstance(raw, dict) else None


def success_result(model: _M, render: Callable[[_M], str], max_chars: int) -> CallToolResult:
    """The text rendering and structured content of ``model``, both scrubbed; the text capped."""
    clean = type(model).model_validate(scrub_data(model.model_dump(mode="json")))
    text = cap_text(scrub_text(render(clean)), max_chars)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=clean.model_dump(mode="json"),
    )


def guarded(
    fn: Callable[_P, Awaitable[CallToolResult]],
) -> Callable[_P, Awaitable[CallToolResult]]:
    """Run a tool under its timeout and turn every failure into an error result."""

    @functools.wraps(fn)
    async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> CallToolResult:
        # Tools are methods of an object carrying the settings (the Toolbox).
        toolbox = cast(_Configured, args[0])
        timeout = toolbox.settings.tool_timeout_seconds
        vault = toolbox.vault
        try:
            with anyio.fail_after(timeout):
                return await fn(*args, **kwargs)
        except SignaldeskError as exc:
            # The message may quote what the client sent (a path, a query): scrubbed.
            _log.info("tool %s refused: %s", fn.__name__, scrub_text(exc.message))
            return error_result(exc, vault)
        except TimeoutError:
            _log.warning("tool %s timed out", fn.__name__)
            return error_result(
                McpServerError(
                    f"{fn.__name__} took longer than {timeout:g} s",
                    hint="try a smaller limit or max_tokens, or try again",
                ),
                vault,
            )
        except Exception as exc:
            _log.exception("tool %s failed", fn.__name__)
            return error_result(exc, vault)

    return wrapper
