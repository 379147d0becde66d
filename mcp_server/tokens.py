"""Who may call the HTTP server: bearer tokens, each allowed a set of vaults.

A token is held as its SHA-256 only. A request's token is hashed once and compared
with every known digest in constant time, so neither the answer nor its timing says
which token was close. Kept free of the MCP SDK (like :mod:`mcp_server.binding`) so
the command line can refuse a bad token set before anything heavy loads.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from signaldesk.mcp_server.binding import read_token
from signaldesk.mcp_server.errors import TransportConfigError
from signaldesk.mcp_server.settings import McpSettings, McpToken

__all__ = [
    "ALL_VAULTS",
    "Principal",
    "find_principal",
    "load_principals",
    "new_token",
    "token_digest",
]

ALL_VAULTS = "*"


@dataclass(frozen=True, slots=True)
class Principal:
    """A token's holder and what it may read.

    :param vaults: the vault names it may read; ``None``: every vault.
    """

    name: str
    vaults: frozenset[str] | None
    digest: bytes

    def allows(self, vault: str) -> bool:
        return self.vaults is None or vault in self.vaults

    def confine(self, served: Iterable[str]) -> frozenset[str]:
        """The served vaults this principal may read."""
        served = frozenset(served)
        return served if self.vaults is None else served & self.vaults


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def new_token() -> tuple[str, str]:
    """A new random token and its SHA-256 in hex (for ``token_sha256``)."""
    token = secrets.token_urlsafe(32)
    return token, token_digest(token).hex()


def _vaults(entry: McpToken) -> frozenset[str] | None:
    names = {name.strip() for name in entry.vaults}
    return None if ALL_VAULTS in names else frozenset(names)


def load_principals(
    settings: McpSettings,
    *,
    token_env: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Principal]:
    """Every principal the configuration names: the single ``token_env`` token (every
    vault) and each ``[[mcp.tokens]]`` entry. Empty: no token is configured.

    :param token_env: overrides ``settings.token_env`` (``--token-env``).
    :raises TransportConfigError: a token variable is unset or too short, or two entries
        share a token or a name.
    """
    env = os.environ if environ is None else environ
    single_env = token_env if token_env is not None else settings.token_env
    principals: list[Principal] = []
    single = read_token(single_env, env)
    if single is not None:
        principals.append(Principal(f"${single_env}", None, token_digest(single)))
    for entry in settings.tokens:
        if entry.token_env is not None:
            token = read_token(entry.token_env, env)
            assert token is not None  # the variable is named, so read_token returns or raises
            digest = token_digest(token)
        else:
            assert entry.token_sha256 is not None  # the settings model checks one is given
            digest = bytes.fromhex(entry.token_sha256)
        principals.append(Principal(entry.name, _vaults(entry), digest))
    _check_unique(principals)
    return principals


def _check_unique(principals: Sequence[Principal]) -> None:
    names: set[str] = set()
    digests: set[bytes] = set()
    for principal in principals:
        if principal.name in names:
            raise TransportConfigError(
                f"two MCP tokens are named {principal.name!r}",
                hint="give each [[mcp.tokens]] entry its own name",
            )
        if principal.digest in digests:
            raise TransportConfigError(
                f"MCP token {principal.name!r} is the same token as another entry",
                hint="give each holder a token of their own (`signaldesk mcp --new-token NAME`)",
            )
        names.add(principal.name)
        digests.add(principal.digest)


def find_principal(principals: Sequence[Principal], given: str) -> Principal | None:
    """The principal whose token is ``given``, comparing against every digest."""
    digest = token_digest(given)
    found: Principal | None = None
    for principal in principals:
        # No early exit: every request costs the same whichever token it carries.
        if hmac.compare_digest(digest, principal.digest):
            found = principal
    return found
