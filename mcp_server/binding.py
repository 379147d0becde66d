"""Where the HTTP transport may listen, and the token that guards it.

Kept free of the MCP SDK so that the command line can refuse an unsafe binding
at once, before the SDK, the model and the index are loaded.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping

from signaldesk.mcp_server.errors import TransportConfigError

__all__ = ["MIN_TOKEN_CHARS", "check_binding", "is_loopback", "read_token"]

MIN_TOKEN_CHARS = 16


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def read_token(env_name: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The bearer token from the environment variable ``env_name`` (``None`` if unnamed).

    :raises TransportConfigError: the variable is named but unset, empty or too short.
    """
    if not env_name:
        return None
    env = os.environ if environ is None else environ
    token = env.get(env_name, "").strip()
    if not token:
        raise TransportConfigError(
            f"the token variable {env_name} is not set",
            hint=f"export {env_name}=<a long random string> before starting the server",
        )
    if len(token) < MIN_TOKEN_CHARS:
        raise TransportConfigError(
            f"the token in {env_name} is too short (under {MIN_TOKEN_CHARS} characters)",
            hint="use a long random value, e.g. the output of "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`",
        )
    return token


def check_binding(host: str, *, guarded: bool) -> None:
    """Refuse to serve a non-loopback address without a token (``guarded``: one is set).

    :raises TransportConfigError: with the setting that fixes it.
    """
    if not is_loopback(host) and not guarded:
        raise TransportConfigError(
            f"refusing to listen on {host} without a token: only loopback addresses are "
            "served without one",
            hint="set mcp.token_env (or pass --token-env) to the name of an environment "
            "variable holding a long random token, or add [[mcp.tokens]], or bind 127.0.0.1",
        )
