"""Read-only IMAP transport for newsletters (stdlib ``imaplib`` over SSL, blocking).

Run it in a worker thread (``sources.newsletter.fetch_imap`` does). The folder is selected
read-only and bodies are fetched with ``BODY.PEEK[]``, so no flag (not even \\Seen) changes
on the server; which messages are new is decided by Message-ID, by the caller.
"""

from __future__ import annotations

import datetime as dt
import imaplib
import logging
import os
import re
import ssl
from collections.abc import Container
from dataclasses import dataclass

from signaldesk.sources.email_parse import normalise_message_id
from signaldesk.sources.errors import SourceError
from signaldesk.sources.settings import NewsletterSettings

__all__ = ["ImapCredentials", "ImapError", "credentials_from_env", "fetch_raw_messages"]

logger = logging.getLogger(__name__)

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_UID = re.compile(rb"UID (\d+)")
_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")


class ImapError(SourceError):
    """The IMAP mailbox could not be read (configuration, login, network or protocol)."""


@dataclass(frozen=True, slots=True)
class ImapCredentials:
    """User and password, read from the environment at call time; never stored in config."""

    user: str
    password: str

    def __repr__(self) -> str:
        return f"ImapCredentials(user={self.user!r}, password='***')"


def credentials_from_env(
    settings: NewsletterSettings, environ: dict[str, str] | None = None
) -> ImapCredentials:
    """Read the IMAP credentials from the environment variables the settings name.

    :raises ImapError: IMAP is not configured or a variable is missing or empty.
    """
    env = os.environ if environ is None else environ
    if not settings.imap_host.strip():
        raise ImapError("IMAP is not configured", hint="set [newsletter] imap_host in the config")
    missing = [
        name for name in (settings.imap_user_env, settings.imap_password_env) if not env.get(name)
    ]
    if missing:
        raise ImapError(
            f"IMAP credentials missing: environment variable(s) {', '.join(missing)} not set",
            hint="export them before running; credentials are never read from the config file",
        )
    return ImapCredentials(env[settings.imap_user_env], env[settings.imap_password_env])


def _imap_date(day: dt.date) -> str:
    # strftime("%b") follows the locale; IMAP wants English month names.
    return f"{day.day:02d}-{_MONTHS[day.month - 1]}-{day.year}"


def _quote(folder: str) -> str:
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _check(typ: str, data: object, what: str) -> None:
    if typ != "OK":
        raise ImapError(f"IMAP {what} failed: {data!r}")


def fetch_raw_messages(
    settings: NewsletterSettings,
    credentials: ImapCredentials,
    *,
    seen: Container[str] = frozenset(),
    today: dt.date | None = None,
) -> list[tuple[str, bytes]]:
    """Fetch raw messages received since ``settings.imap_since_days`` that are not ``seen``.

    Returns ``(location, raw_bytes)`` pairs, newest ``settings.imap_max_messages`` at most;
    messages over ``settings.max_message_bytes`` are left on the server and logged.
    Blocking: call it from a worker thread.

    :raises ImapError: on connection, login or protocol failure.
    """
    since = (today or dt.date.today()) - dt.timedelta(days=settings.imap_since_days)
    context = ssl.create_default_context()
    try:
        with imaplib.IMAP4_SSL(
            settings.imap_host,
            settings.imap_port,
            ssl_context=context,
            timeout=settings.imap_timeout,
        ) as conn:
            conn.login(credentials.user, credentials.password)
            typ, data = conn.select(_quote(settings.imap_folder), readonly=True)
            _check(typ, data, f"SELECT {settings.imap_folder}")
            typ, data = conn.uid("SEARCH", "SINCE", _imap_date(since))
            _check(typ, data, "SEARCH")
            first = data[0] if data else None
            uids = (first if isinstance(first, bytes) else b"").split()
            uids = uids[-settings.imap_max_messages :]
            if not uids:
                return []
            wanted = _new_uids(conn, uids, seen, settings.max_message_bytes)
            messages: list[tuple[str, bytes]] = []
            for uid in wanted:
                typ, data = conn.uid("FETCH", uid.decode(), "(BODY.PEEK[])")
                _check(typ, data, f"FETCH {uid!r}")
                parts: list[object] = list(data or ())
                raw = next((p[1] for p in parts if isinstance(p, tuple) and len(p) > 1), None)
                if isinstance(raw, bytes):
                    location = (
                        f"imap://{settings.imap_host}/{settings.imap_folder};UID={uid.decode()}"
                    )
                    messages.append((location, raw))
            return messages
    except imaplib.IMAP4.error as exc:
        raise ImapError(f"IMAP error from {settings.imap_host}: {exc}") from exc
    except (OSError, ssl.SSLError) as exc:
        raise ImapError(
            f"cannot reach IMAP server {settings.imap_host}:{settings.imap_port}: {exc}",
            hint="check imap_host/imap_port and the network",
        ) from exc


def _new_uids(
    conn: imaplib.IMAP4, uids: list[bytes], seen: Container[str], max_bytes: int
) -> list[bytes]:
    """UIDs whose Message-ID is not in ``seen`` and whose size is under the cap."""
    typ, data = conn.uid(
        "FETCH", b",".join(uids).decode(), "(UID RFC822.SIZE BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])"
    )
    _check(typ, data, "FETCH headers")
    wanted: list[bytes] = []
    for part in data:
        if not isinstance(part, tuple):
            continue
        meta, header = part[0], part[1]
        uid_match, size_match = _UID.search(meta), _SIZE.search(meta)
        if uid_match is None:
            continue
        text = header.decode("ascii", "replace") if isinstance(header, bytes) else ""
        message_id = normalise_message_id(text.partition(":")[2]) if ":" in text else None
        if message_id is not None and message_id in seen:
            continue
        if size_match is not None and int(size_match.group(1)) > max_bytes:
            logger.warning("IMAP UID %s is larger than %d bytes; skipped", uid_match[1], max_bytes)
            continue
        wanted.append(uid_match.group(1))
    return wanted
