"""E-mail newsletters: a drop folder of .eml files, Maildirs and mboxes; optionally IMAP.

Everything is read-only: messages are never moved, flagged or deleted (IMAP uses BODY.PEEK),
so the same mailbox can be read by a mail client too. The pipeline dedupes by Message-ID
(``MailResult.message_id`` / ``Item.guid``).
"""

from __future__ import annotations

import email.message
import hashlib
import logging
import mailbox
from collections.abc import Container, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

from signaldesk.items import Item
from signaldesk.sources.decoding import read_capped, walk_files
from signaldesk.sources.email_parse import (
    classify_message,
    clean_subject,
    find_bodies,
    forwarded_message,
    is_newsletter,
    not_a_message,
    read_headers,
    read_message,
)
from signaldesk.sources.errors import SourceError
from signaldesk.sources.html_clean import strip_tags
from signaldesk.sources.imap import credentials_from_env, fetch_raw_messages
from signaldesk.sources.mail_forward import split_forward
from signaldesk.sources.newsletter_body import (
    html_newsletter_to_markdown,
    plain_newsletter_to_markdown,
)
from signaldesk.sources.settings import NewsletterSettings

__all__ = [
    "MailResult",
    "fetch_imap",
    "is_newsletter",
    "parse_email",
    "parse_email_detailed",
    "read_mail_sources",
]

logger = logging.getLogger(__name__)

# Reasons from classify_message that even accept_all does not override.
_NEVER_INGESTED = ("delivery report", "bounce", "automatic reply", "Precedence: junk")

# Below this much text the HTML part is taken to be image-only and the text part wins.
_MIN_HTML_TEXT = 80


@dataclass(frozen=True, slots=True)
class MailResult:
    """One message seen in the drop folder.

    :param location: where it was found: ``file.eml``, ``box.mbox#3``, ``Maildir/cur/<name>``
        (relative to the drop folder).
    :param item: the newsletter, or ``None`` (skipped or unreadable).
    :param error: why it could not be read, if it could not.
    :param message_id: the normalised Message-ID, when the headers could be read.
    :param skipped: why a readable message was not taken (a bounce, no newsletter headers).
    """

    location: str
    item: Item | None
    error: str | None
    message_id: str | None
    skipped: str | None = None


def parse_email_detailed(
    data: bytes, *, location: str = "", accept_all: bool = False
) -> tuple[Item | None, str | None, str | None]:
    """Parse raw message bytes: ``(item, message_id, skip_reason)``. Never raises on bad mail.

    :param accept_all: take every message that is not a bounce or auto-reply, with or without
        newsletter headers (for a drop folder a person fills by hand).
    """
    return _from_message(read_message(data), location=location, accept_all=accept_all)


def _from_message(
    msg: email.message.EmailMessage, *, location: str, accept_all: bool, nested: bool = False
) -> tuple[Item | None, str | None, str | None]:
    headers = read_headers(msg)
    newsletter, reason = classify_message(msg)
    hard_no = reason.startswith(_NEVER_INGESTED)
    inner = None if hard_no or nested else forwarded_message(msg)
    if inner is not None and not _has_own_text(msg):
        # Trigger: a newsletter forwarded "as attachment" (message/rfc822) with no text of
        # its own was parked as "empty item". The attached mail is the newsletter: its
        # subject, sender, date and Message-ID (so it dedupes with the original) are used.
        logger.debug("%s forwards a message as an attachment; reading that", location)
        return _from_message(
            inner, location=location, accept_all=accept_all or newsletter, nested=True
        )
    if not newsletter and (hard_no or not accept_all):
        logger.info("skipped %s: %s", location or headers.message_id or "message", reason)
        return None, headers.message_id, reason
    html, plain = find_bodies(msg)
    text, url, pixels = "", None, 0
    if html:
        text, url, pixels = html_newsletter_to_markdown(html)
    if plain and len(text) < _MIN_HTML_TEXT:
        plain_text, plain_url = plain_newsletter_to_markdown(plain)
        if len(plain_text) > len(text):
            text = plain_text
        url = url or plain_url
    forward = split_forward(text)
    if forward is not None:
        text = forward.text
    identity = headers.message_id or _synthetic_id(headers.from_address, headers.subject, text)
    subject = (forward.subject if forward else None) or headers.subject
    from_name = forward.from_name if forward and forward.from_address else headers.from_name
    from_address = (forward.from_address if forward else None) or headers.from_address
    source_id = headers.list_id or from_address or "unknown-sender"
    extra: dict[str, Any] = {
        "list_id": headers.list_id,
        "from_address": from_address,
        "unsubscribe": list(headers.unsubscribe),
        "newsletter_reason": reason,
        "tracking_pixels_removed": pixels,
        "location": location,
    }
    if forward is not None:
        extra["forwarded_by"] = headers.from_address
    item = Item(
        source_kind="newsletter",
        source_id=source_id,
        title=clean_subject(subject, list_id=headers.list_id, list_name=headers.list_name)
        or "(no subject)",
        text=text,
        guid=identity,
        url=url,
        author=from_name,
        published=(forward.date if forward else None) or headers.date,
        site_name=from_name or headers.list_name or from_address,
        extra=extra,
    )
    return item, headers.message_id, None


def _has_own_text(msg: email.message.Message) -> bool:
    html, plain = find_bodies(msg)
    own = " ".join(f"{strip_tags(html) if html else ''} {plain or ''}".split())
    return len(own) >= _MIN_HTML_TEXT


def _synthetic_id(sender: str | None, subject: str, text: str) -> str:
    """A stable identity for a message without Message-ID (the same mail in .eml and mbox)."""
    digest = hashlib.sha256(f"{sender}\n{subject}\n{text}".encode()).hexdigest()[:32]
    return f"sha256:{digest}"


def parse_email(data: bytes, *, location: str = "", accept_all: bool = False) -> Item | None:
    """Parse one raw e-mail into a newsletter :class:`Item`, or ``None`` when it is not one.

    ``None`` (logged with the reason) for bounces, auto-replies and, unless ``accept_all``,
    messages without newsletter headers. The body is the HTML part as markdown (links kept,
    tracking stripped, pixels and unsubscribe footer removed) or the text part; the "view
    online" link becomes ``url``.
    """
    return parse_email_detailed(data, location=location, accept_all=accept_all)[0]


def _result(location: str, data: bytes, settings: NewsletterSettings) -> MailResult:
    try:
        not_mail = not_a_message(data)
        if not_mail is not None:
            return MailResult(location, None, not_mail, None)
        item, message_id, skipped = parse_email_detailed(
            data, location=location, accept_all=settings.accept_all
        )
    except Exception as exc:  # hostile input must not stop the scan: report it instead
        logger.info("message %s not parsed: %r", location, exc)
        logger.debug("message %s not parsed", location, exc_info=True)
        return MailResult(location, None, f"could not parse: {exc!r}", None)
    return MailResult(location, item, None, message_id, skipped)


def _is_mbox(path: Path) -> bool:
    if path.suffix.lower() in (".mbox", ".mbx"):
        return True
    if path.suffix:
        return False
    try:
        with path.open("rb") as handle:
            return handle.read(5) == b"From "
    except OSError:
        return False


def _maildir_roots(root: Path) -> set[Path]:
    """Folders holding ``cur`` and ``new``; hidden ones (Maildir++ ``.Trash``) are skipped."""
    return {
        p.parent
        for p in root.rglob("cur")
        if p.is_dir()
        and (p.parent / "new").is_dir()
        and not p.is_symlink()
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


def read_mail_sources(settings: NewsletterSettings, vault: Path) -> Iterator[MailResult]:
    """Yield a result for every message in the drop folder (``settings.drop_folder``).

    ``*.eml`` files, Maildir folders (their ``cur`` and ``new``; ``tmp`` holds messages
    still being delivered) and mbox files (``*.mbox`` or extension-less files that start
    with ``From ``), searched recursively. Symlinks, hidden files and temporary files are
    skipped; a message over ``settings.max_message_bytes`` or one that cannot be parsed
    yields a result with ``error``. Nothing is modified.
    """
    root = Path(settings.drop_folder)
    root = root if root.is_absolute() else vault / root
    if not root.is_dir():
        logger.debug("newsletter drop folder %s does not exist", root)
        return
    maildirs = _maildir_roots(root)
    for path in walk_files(root):
        rel = path.relative_to(root).as_posix()
        if any(path.is_relative_to(m) for m in maildirs):
            continue  # read through mailbox.Maildir below
        if path.suffix.lower() == ".eml":
            try:
                data = read_capped(path, settings.max_message_bytes)
            except (OSError, SourceError) as exc:
                yield MailResult(rel, None, str(exc), None)
                continue
            yield _result(rel, data, settings)
        elif _is_mbox(path):
            yield from _read_mailbox(mailbox.mbox(path, create=False), rel, settings)
    for maildir in sorted(maildirs):
        rel = maildir.relative_to(root).as_posix()
        yield from _read_mailbox(mailbox.Maildir(maildir, create=False), rel, settings)


def _read_mailbox(
    box: mailbox.Mailbox[Any], rel: str, settings: NewsletterSettings
) -> Iterator[MailResult]:
    try:
        keys = sorted(box.iterkeys(), key=str)
    except (OSError, mailbox.Error) as exc:
        yield MailResult(rel, None, f"mailbox not readable: {exc}", None)
        return
    for key in keys:
        location = f"{rel}#{key}"
        try:
            data = box.get_bytes(key)
        except (OSError, KeyError, mailbox.Error) as exc:
            yield MailResult(location, None, f"message not readable: {exc}", None)
            continue
        if len(data) > settings.max_message_bytes:
            yield MailResult(
                location, None, f"larger than {settings.max_message_bytes} bytes; not read", None
            )
            continue
        yield _result(location, data, settings)
    box.close()


async def fetch_imap(
    settings: NewsletterSettings,
    *,
    seen: Container[str] = frozenset(),
    environ: dict[str, str] | None = None,
) -> list[Item]:
    """Fetch newsletters from the configured IMAP folder, read-only, in a worker thread.

    Credentials come only from the environment variables named by ``imap_user_env`` and
    ``imap_password_env``. Messages whose Message-ID is in ``seen`` are not downloaded; the
    returned items carry their Message-ID as ``guid`` for the caller to remember. Each
    network step is bounded by ``imap_timeout``.

    :raises sources.imap.ImapError: IMAP not configured, credentials missing, or the server
        could not be read.
    """
    credentials = credentials_from_env(settings, environ)
    # Abandoned on cancel so a caller's fail_after returns at once; the thread itself ends
    # within imap_timeout, since every socket operation is bounded by it.
    raw = await anyio.to_thread.run_sync(
        lambda: fetch_raw_messages(settings, credentials, seen=seen), abandon_on_cancel=True
    )
    items: list[Item] = []
    for location, data in raw:
        result = _result(location, data, settings)
        if result.item is not None:
            items.append(result.item)
        elif result.error is not None:
            logger.warning("IMAP message %s: %s", location, result.error)
    return items
