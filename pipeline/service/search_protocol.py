"""What a one-shot `signaldesk search` and a running `serve` say over the search socket.

One JSON request line, one JSON reply line, over ``<vault>/.signaldesk/search.sock``.
The request::

    {"protocol": 1, "version": "0.1.0", "vault": "/abs/vault",
     "config": {"path": "/abs/signaldesk.toml" | null, "stamp": [mtime_ns, size] | null},
     "search": {"query": ..., "limit": ..., "mode": ..., "folder": ..., "type": ...,
                "domain": ..., "tags": [...], "status": ..., "since": "YYYY-MM-DD" | null,
                "until": ..., "max_tokens": ...}}

The reply is one of ``{"ok": true, "stdout": TEXT}`` (what ``search --json`` prints),
``{"ok": false, "error": {"message", "hint"}}`` (the query itself was refused, as it
would be in-process) or ``{"ok": false, "declined": REASON}`` (the client searches
in-process instead). A server answers only a client of its own protocol and version
that resolved the same vault and the same, unchanged, config file.

Light on purpose (no pydantic, no click): the client imports it before anything else.
"""

from __future__ import annotations

import os
from pathlib import Path

from signaldesk._version import __version__
from signaldesk.vault import STATE_DIR

__all__ = [
    "MAX_REPLY_BYTES",
    "MAX_REQUEST_BYTES",
    "PROTOCOL",
    "SOCKET_NAME",
    "VERSION",
    "socket_path",
    "socket_path_fits",
]

PROTOCOL = 1
VERSION = __version__
SOCKET_NAME = "search.sock"

MAX_REQUEST_BYTES = 64 * 1024
"""A request is a query and a few options: anything longer is refused unread."""
MAX_REPLY_BYTES = 64 * 1024 * 1024

# sun_path holds 108 bytes on Linux (104 on the BSDs), the terminating NUL included.
_SUN_PATH_MAX = 104 if os.uname().sysname != "Linux" else 108


def socket_path(vault: Path) -> Path:
    """The search socket of ``vault``, in its state dir (``<vault>/.signaldesk``)."""
    return vault / STATE_DIR / SOCKET_NAME


def socket_path_fits(path: Path) -> bool:
    """Whether ``path`` fits in an ``AF_UNIX`` address (a deep vault's may not)."""
    return len(os.fsencode(path)) < _SUN_PATH_MAX
