"""Ready-to-paste MCP client configuration for Claude Code, Codex CLI and Cursor."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

__all__ = ["CLIENTS", "ClientName", "ClientSnippet", "client_config"]

ClientName = Literal["claude", "codex", "cursor"]
CLIENTS: tuple[str, ...] = get_args(ClientName)

SERVER_KEY = "signaldesk"


@dataclass(frozen=True, slots=True)
class ClientSnippet:
    """A configuration file's content, where it goes, and a note for the person.

    ``text`` is valid JSON or TOML on its own (so it can be redirected into the file);
    ``note`` says where to put it and any alternative (such as a ``claude mcp add`` line).
    """

    text: str
    where: str
    note: str


def _toml_string(value: str) -> str:
    # json.dumps yields a valid TOML basic string (same escapes for these characters).
    return json.dumps(value, ensure_ascii=False)


def _toml_array(values: Sequence[str]) -> str:
    return "[" + ", ".join(_toml_string(v) for v in values) + "]"


def client_config(
    client: ClientName,
    *,
    command: Sequence[str],
    vault: str,
    url: str | None = None,
    token_env: str | None = None,
) -> ClientSnippet:
    """The configuration snippet for ``client``.

    :param command: how to run signaldesk on this machine, e.g. ``["/usr/bin/signaldesk"]``
        or ``[sys.executable, "-m", "signaldesk"]`` (absolute paths).
    :param vault: the absolute vault path passed as ``--vault``.
    :param url: configure the streamable HTTP endpoint instead of a stdio command.
    :param token_env: the environment variable holding the HTTP bearer token; the
        snippet refers to the variable, never to the token.
    """
    program, *prefix = command
    args = [*prefix, "--vault", vault, "mcp"]
    if client == "claude":
        return _claude(program, args, url, token_env)
    if client == "codex":
        return _codex(program, args, url, token_env)
    return _cursor(program, args, url, token_env)


def _claude(program: str, args: list[str], url: str | None, token_env: str | None) -> ClientSnippet:
    entry: dict[str, object]
    if url is None:
        entry = {"type": "stdio", "command": program, "args": args, "env": {}}
        add = f"claude mcp add --scope user {SERVER_KEY} -- {shlex.join([program, *args])}"
    else:
        entry = {"type": "http", "url": url}
        add = f"claude mcp add --scope user --transport http {SERVER_KEY} {url}"
        if token_env:
            # Claude Code expands ${VAR} in .mcp.json; the shell expands it in the command.
            entry["headers"] = {"Authorization": f"Bearer ${{{token_env}}}"}
            add += f' --header "Authorization: Bearer ${token_env}"'
    body = json.dumps({"mcpServers": {SERVER_KEY: entry}}, indent=2, ensure_ascii=False)
    return ClientSnippet(
        text=body + "\n",
        where=".mcp.json at the project root (Claude Code, project scope)",
        note=f"or, for every project, run once:\n  {add}",
    )


def _codex(program: str, args: list[str], url: str | None, token_env: str | None) -> ClientSnippet:
    lines = [f"[mcp_servers.{SERVER_KEY}]"]
    if url is None:
        lines += [f"command = {_toml_string(program)}", f"args = {_toml_array(args)}"]
        # The first start loads the embedding model and the index before it answers.
        lines += ["startup_timeout_sec = 60"]
    else:
        lines += [f"url = {_toml_string(url)}"]
        if token_env:
            lines += [f"bearer_token_env_var = {_toml_string(token_env)}"]
    lines += ["tool_timeout_sec = 60"]
    return ClientSnippet(
        text="\n".join(lines) + "\n",
        where="~/.codex/config.toml (Codex CLI; or .codex/config.toml in a trusted project)",
        note="append it to the file; `codex mcp list` should then show signaldesk",
    )


def _cursor(program: str, args: list[str], url: str | None, token_env: str | None) -> ClientSnippet:
    entry: dict[str, object]
    if url is None:
        entry = {"command": program, "args": args}
    else:
        entry = {"url": url}
        if token_env:
            entry["headers"] = {"Authorization": f"Bearer ${{env:{token_env}}}"}
    body = json.dumps({"mcpServers": {SERVER_KEY: entry}}, indent=2, ensure_ascii=False)
    return ClientSnippet(
        text=body + "\n",
        where=".cursor/mcp.json in a project (or ~/.cursor/mcp.json for every project)",
        note="merge the mcpServers entry into the file if it already exists",
    )
