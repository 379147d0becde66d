"""A one-shot `signaldesk search QUERY --json`, handed to a running `signaldesk serve`.

Why: Python's start-up and the search stack's imports (pydantic, numpy, the model)
cost a new process more than the search itself (issue 15); `serve`, which a daily user
keeps running, holds a warm retriever and answers over ``<vault>/.signaldesk/search.sock``
(:mod:`pipeline.service.search_socket`). This module runs before the click CLI is
invoked and imports only click, the search options and the protocol's constants.

Anything short of a reply from a serve of the same version, for the same vault and the
same unchanged config file, gives ``None``: the command runs in-process as it always
did (with ``-vv`` a DEBUG line says why). So a command line the socket cannot take
(``--explain``, ``--batch``, a table, ``--help``, a bad option) is left to click.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from signaldesk.errors import SignaldeskError
from signaldesk.pipeline.cli._search_options import search_parameters
from signaldesk.pipeline.config_location import config_stamp, locate
from signaldesk.pipeline.service.search_protocol import (
    MAX_REPLY_BYTES,
    PROTOCOL,
    VERSION,
    socket_path,
    socket_path_fits,
)

__all__ = ["REPLY_TIMEOUT", "forward_search"]

logger = logging.getLogger(__name__)

REPLY_TIMEOUT = 1.0
"""Seconds for the whole exchange; a serve busier than that is searched around."""

_NOT_HANDED_OVER = frozenset({"-h", "--help", "--version"})


class _InProcess(Exception):
    """Why this search runs in-process (a DEBUG line at ``-vv``)."""


def _noop(**_: Any) -> None:  # the probe commands only parse
    return None


def forward_search(
    group: click.Group, args: Sequence[str], setup_logging: Callable[[int], None]
) -> int | None:
    """Hand ``args`` (``signaldesk``'s command line) to a running serve when it is a
    ``search QUERY --json`` it can answer: the exit code, with the output printed; or
    ``None`` to run the command in-process.

    :param setup_logging: configures logging for a ``-v`` count (the DEBUG line).
    :raises SignaldeskError: serve refused the query itself (an empty query, say),
        as the in-process search would have.
    """
    if "search" not in args or "--json" not in args or not _NOT_HANDED_OVER.isdisjoint(args):
        return None
    options: dict[str, Any] = {}
    try:
        options = _global_options(group, args)
        vault, request = _request(options)
        return _answer(vault, request)
    except _InProcess as why:
        verbose = int(options.get("verbose") or 0)
        if verbose >= 2:
            setup_logging(verbose)
            logger.debug("search runs in-process: %s", why)
        return None


def _global_options(group: click.Group, args: Sequence[str]) -> dict[str, Any]:
    """The group's own options, parsed as click parses them; the verb and its arguments
    are left over, in ``"rest"``."""
    rest = click.Argument(["rest"], nargs=-1)
    probe = click.Command("signaldesk", params=[*group.params, rest], add_help_option=False)
    probe.allow_interspersed_args = False
    try:
        with probe.make_context("signaldesk", list(args)) as top:
            return dict(top.params)
    except click.ClickException as exc:
        raise _InProcess(f"the command line does not parse ({exc.format_message()})") from exc


def _request(options: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    """The vault and the request for the verb's part of the command line, parsed with
    the options `search` itself declares."""
    rest_args = list(options["rest"])
    if rest_args[:1] != ["search"]:
        raise _InProcess("not a search")
    try:
        verb = click.command("search", add_help_option=False)(search_parameters(_noop))
        with verb.make_context("search", rest_args[1:]) as sub:
            params = dict(sub.params)
    except click.ClickException as exc:
        raise _InProcess(f"the command line does not parse ({exc.format_message()})") from exc
    if not params["as_json"] or params["explain"] or params["batch"] is not None:
        raise _InProcess("only `search QUERY --json` is handed to serve")
    if params["query"] is None:
        raise _InProcess("no QUERY")
    vault, config = locate(options.get("vault"), options.get("config_path"))
    if vault is None:
        raise _InProcess("no vault given")
    vault = vault.expanduser().resolve()
    stamp = config_stamp(config)
    if config is not None and stamp is None:
        raise _InProcess(f"cannot read the config file {config}")
    request = {
        "protocol": PROTOCOL,
        "version": VERSION,
        "vault": str(vault),
        "config": {
            "path": os.path.realpath(config) if config is not None else None,
            "stamp": list(stamp) if stamp is not None else None,
        },
        "search": {
            "query": params["query"],
            "limit": params["limit"],
            "mode": params["mode"],
            "folder": params["folder"],
            "type": params["note_type"],
            "domain": params["domain"],
            "tags": list(params["tags"]),
            "status": params["status"],
            "since": _day(params["since"]),
            "until": _day(params["until"]),
            "max_tokens": params["max_tokens"],
        },
    }
    return vault, request


def _day(value: datetime | None) -> str | None:
    return value.date().isoformat() if value is not None else None


def _answer(vault: Path, request: dict[str, Any]) -> int:
    path = socket_path(vault)
    if not socket_path_fits(path):
        raise _InProcess(f"the socket path is too long for AF_UNIX: {path}")
    if not path.is_socket():
        raise _InProcess(f"no socket {path} (serve is not running)")
    line = json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n"
    try:
        reply = json.loads(_exchange(path, line, REPLY_TIMEOUT))
    except (OSError, ValueError) as exc:  # refused, timed out, closed, not JSON
        raise _InProcess(f"{path}: {type(exc).__name__}: {exc}") from exc
    if not isinstance(reply, dict):
        raise _InProcess("a malformed reply")
    if reply.get("ok") is True and isinstance(reply.get("stdout"), str):
        sys.stdout.write(reply["stdout"])
        sys.stdout.flush()
        return 0
    error = reply.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        hint = error.get("hint")
        raise SignaldeskError(error["message"], hint=hint if isinstance(hint, str) else None)
    raise _InProcess(f"serve declined: {reply.get('declined', 'a malformed reply')}")


def _exchange(path: Path, line: bytes, timeout: float) -> bytes:
    """Send ``line``, return the reply line; the whole exchange within ``timeout``."""
    import socket  # here: a search with no serve to hand it to never opens one

    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(os.fspath(path))
        # A serve that refuses this peer replies without reading: its reason is still
        # there to read after a broken pipe.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(line)
        received = bytearray()
        while b"\n" not in received:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no reply within {timeout:g} s")
            sock.settimeout(remaining)
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("serve closed the connection before replying")
            received += chunk
            if len(received) > MAX_REPLY_BYTES:
                raise ValueError("the reply is too long")
        return bytes(received[: received.index(b"\n")])
