"""Read one raw e-mail defensively: headers decoded right, bodies found even in broken MIME.

The stdlib parser does the MIME work (``email.policy.default``); this module adds what real
mail needs on top: charset labels that lie (GBK sent as "gb2312", UTF-8 sent as "us-ascii"),
raw 8-bit headers, a multipart whose declared boundary never occurs, and the decision whether
a message is a newsletter at all.
"""

from __future__ import annotations

import datetime as dt
import email
import email.errors
import email.header
import email.message
import email.parser
import email.policy
import email.utils
import logging
import re
from dataclasses import dataclass

from signaldesk.sources.decoding import decode_bytes

__all__ = [
    "MailHeaders",
    "classify_message",
    "clean_subject",
    "decode_header_value",
    "find_bodies",
    "forwarded_message",
    "is_newsletter",
    "normalise_message_id",
    "not_a_message",
    "read_headers",
    "read_message",
    "walk_parts",
]

logger = logging.getLogger(__name__)

# Headers that only bulk senders and their services add (lower-cased names).
_ESP_HEADERS: tuple[str, ...] = (
    "x-mailchimp-campaign",
    "x-mc-user",
    "x-campaign",
    "x-campaignid",
    "x-csa-complaints",
    "x-sg-eid",
    "x-mailgun-tag",
    "x-mailgun-variables",
    "x-ses-outgoing",
    "x-sfmc-stack",
    "x-mailjet-campaign",
    "x-newsletter",
    "x-substack-post-id",
    "x-beehiiv-type",
    "x-convertkit-subscriber",
)
_ESP_MAILER = re.compile(
    r"mailchimp|substack|sendinblue|brevo|mailerlite|convertkit|buttondown|beehiiv|"
    r"campaign monitor|constant ?contact|hubspot|klaviyo|mailjet|sendgrid|ghost|revue|"
    r"acymailing|phplist|mailpoet|listmonk|sympa|mailman",
    re.IGNORECASE,
)
_BOUNCE_SUBJECT = re.compile(
    r"delivery (status notification|failure|has failed)|undeliver|returned mail|"
    r"mail delivery (failed|subsystem)|failure notice|non[- ]?delivery",
    re.IGNORECASE,
)
_DAEMON = re.compile(r"^(mailer-daemon|postmaster|mail-daemon)@", re.IGNORECASE)
_ANGLE_ADDR = re.compile(r"^(.*?)<\s*([^<>\s@]+@[^<>\s]+)\s*>\s*$", re.DOTALL)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)
_BOUNDARY_LINE = re.compile(r"^--([^\s]{4,200})\s*$\n(?=[\w-]+:)", re.MULTILINE)
# Real newsletters nest multiparts three or four deep; a thousand-deep one is hostile
# (Message.walk() recurses per level and would hit Python's recursion limit).
_MAX_PART_DEPTH = 40
_MAX_PARTS = 2_000


@dataclass(frozen=True, slots=True)
class MailHeaders:
    """The headers intake needs, decoded to clean text."""

    message_id: str | None
    subject: str
    from_name: str | None
    from_address: str | None
    date: dt.datetime | None
    list_id: str | None
    list_name: str | None
    unsubscribe: tuple[str, ...]


# Reply and forward markers mail clients put before a subject (English, German, French,
# Spanish, Italian, Scandinavian, Portuguese), optionally counted: "Re[2]:", "Fwd:".
_REPLY_PREFIX = re.compile(
    r"^\s*(?:re|fwd?|aw|wg|tr|sv|vs|rv|enc|antw|rif)\s*(?:\[\d+\]|\(\d+\))?\s*[:\uff1a]\s*",
    re.IGNORECASE,
)
_SUBJECT_TAG = re.compile(r"^\s*\[([^\[\]]{1,60})\]\s*")
# Headers any real message has at least one of; a file with none is not mail.
_MAIL_HEADERS = frozenset(
    ("from", "subject", "date", "message-id", "to", "received", "mime-version", "content-type")
)


def not_a_message(data: bytes) -> str | None:
    """Why ``data`` is not an e-mail message at all (empty, or no mail header), else ``None``.

    Trigger: an empty ``.eml`` or a binary file saved under that name used to be reported
    as "no newsletter headers; set accept_all = true", advice that cannot help.
    """
    if not data.strip():
        return "the file is empty, not an e-mail message"
    head = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(data[:65536])
    if not any(key.lower() in _MAIL_HEADERS for key in head):
        return "not an e-mail message (no From, Subject, Date or other mail header)"
    return None


def _tag_key(text: str) -> str:
    return re.sub(r"[\W_]+", "", text).lower()


def clean_subject(subject: str, *, list_id: str | None, list_name: str | None) -> str:
    """The subject without "Re:"/"Fwd:" markers and the list's own ``[tag]``.

    A bracketed tag goes only when it names the list (its List-Id's first label or the
    list's name: ``[Python-pt]`` for ``python-pt.python.org``); other tags carry meaning
    (``[SECURITY]``) and stay. A subject that would end up empty is kept as it was.
    """
    keys = {_tag_key(k) for k in (list_name or "", (list_id or "").split(".")[0]) if k}
    keys.discard("")
    text = subject
    while True:
        stripped = _REPLY_PREFIX.sub("", text, count=1)
        tag = _SUBJECT_TAG.match(stripped)
        if tag is not None and _tag_key(tag.group(1)) in keys:
            stripped = stripped[tag.end() :]
        if stripped == text:
            break
        text = stripped
    return text.strip() or subject


def read_message(data: bytes) -> email.message.EmailMessage:
    """Parse raw bytes into a message; a multipart whose boundary is wrong is re-cut.

    Trigger: ``mail_malformed_3`` declares one boundary and uses another, so the parser sees
    no parts at all. Outcome: the boundary actually used is found in the payload and the
    message re-parsed with it, so its HTML part is still read.

    A message nested too deeply for the stdlib parser (it recurses once per multipart
    level) is read for its headers only: its body is lost, the rest of the scan is not.
    """
    try:
        msg = email.message_from_bytes(data, policy=email.policy.default)
        assert isinstance(msg, email.message.EmailMessage)
        if msg.get_content_maintype() == "multipart" and not msg.is_multipart():
            recovered = _recut_multipart(msg)
            if recovered is not None:
                return recovered
    except RecursionError:
        logger.info("message nested too deeply; reading its headers only")
        head = email.parser.BytesParser(policy=email.policy.default).parsebytes(
            data, headersonly=True
        )
        assert isinstance(head, email.message.EmailMessage)
        head.set_payload("")
        return head
    return msg


def _recut_multipart(msg: email.message.EmailMessage) -> email.message.EmailMessage | None:
    payload = msg.get_payload()
    if not isinstance(payload, str):
        return None
    match = _BOUNDARY_LINE.search(payload)
    if match is None:
        return None
    boundary = match.group(1)
    head = f'Content-Type: multipart/mixed; boundary="{boundary}"\nMIME-Version: 1.0\n\n'
    # utf-8 + surrogateescape gives back the original bytes for both undecodable bytes
    # (kept as surrogates by the parser) and text the parser already decoded.
    raw = (head + payload).encode("utf-8", "surrogateescape")
    inner = email.message_from_bytes(raw, policy=email.policy.default)
    if not isinstance(inner, email.message.EmailMessage) or not inner.is_multipart():
        return None
    logger.debug("re-cut multipart with boundary %r found in the body", boundary)
    msg.set_payload(inner.get_payload())
    return msg


def _raw_header(msg: email.message.Message, name: str) -> str | None:
    """The header as it was on the wire (encoded words intact), unfolded; first one wins.

    Raw 8-bit bytes (which the parser keeps as lone surrogates) are decoded here, so no
    header value that leaves this module can fail to encode later (a Message-ID with a
    stray byte once stopped every scan in the ledger's identity hash).
    """
    wanted = name.lower()
    for key, value in msg.raw_items():
        if key.lower() == wanted:
            return _readable(re.sub(r"\r?\n[ \t]+", " ", str(value)).strip())
    return None


def _readable(text: str) -> str:
    """``text`` with any lone surrogates (undecodable raw bytes) decoded as real text."""
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    return (
        decode_bytes(text.encode("utf-8", "surrogateescape"))[0]
        .encode("utf-8", "replace")
        .decode("utf-8")
    )


def decode_header_value(raw: str) -> str:
    """Decode RFC 2047 encoded words and raw 8-bit bytes in a header value; never raises."""
    raw = _readable(raw)
    if "=?" not in raw:
        return " ".join(raw.split())
    try:
        parts = email.header.decode_header(raw)
    except (email.errors.HeaderParseError, ValueError, LookupError):
        return " ".join(raw.split())
    out: list[str] = []
    for chunk, charset in parts:
        if isinstance(chunk, bytes):
            out.append(decode_bytes(chunk, charset)[0])
        else:
            out.append(chunk)
    return " ".join("".join(out).split())


def normalise_message_id(value: str | None) -> str | None:
    """``<abc@host>`` -> ``abc@host``: brackets, folding and spaces gone; ``None`` if empty."""
    if not value:
        return None
    text = "".join(value.split())
    match = re.search(r"<([^<>]+)>", text)
    ident = match.group(1) if match else text.strip("<>")
    return ident or None


def _parse_from(raw: str | None) -> tuple[str | None, str | None]:
    if not raw:
        return None, None
    match = _ANGLE_ADDR.match(raw)
    if match is not None:
        name_raw, address = match.group(1).strip(), match.group(2)
    else:
        pairs = email.utils.getaddresses([raw])
        name_raw, address = pairs[0] if pairs else ("", "")
    name = decode_header_value(name_raw).strip().strip('"').strip() if name_raw else ""
    return name or None, (address.strip().lower() or None) if address else None


def _parse_date(raw: str | None) -> dt.datetime | None:
    if not raw:
        return None
    try:
        value = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def _parse_list_id(raw: str | None) -> tuple[str | None, str | None]:
    if not raw:
        return None, None
    text = decode_header_value(raw)
    match = re.search(r"<([^<>]+)>", text)
    ident = (match.group(1) if match else text).strip()
    name = text[: match.start()].strip().strip('"').strip() if match else ""
    return ident or None, name or None


def read_headers(msg: email.message.Message) -> MailHeaders:
    """Decode the headers intake uses, tolerating every malformation seen in the test mails."""
    from_name, from_address = _parse_from(_raw_header(msg, "From"))
    list_id, list_name = _parse_list_id(_raw_header(msg, "List-Id"))
    unsubscribe = tuple(re.findall(r"<([^<>]+)>", _raw_header(msg, "List-Unsubscribe") or ""))
    return MailHeaders(
        message_id=normalise_message_id(_raw_header(msg, "Message-ID")),
        subject=decode_header_value(_raw_header(msg, "Subject") or ""),
        from_name=from_name,
        from_address=from_address,
        date=_parse_date(_raw_header(msg, "Date")),
        list_id=list_id,
        list_name=list_name,
        unsubscribe=unsubscribe,
    )


def walk_parts(msg: email.message.Message) -> list[email.message.Message]:
    """The message and its parts, depth first, at most ``_MAX_PART_DEPTH`` levels and
    ``_MAX_PARTS`` parts (iterative: a hostile nesting cannot exhaust the stack)."""
    found: list[email.message.Message] = []
    stack: list[tuple[email.message.Message, int]] = [(msg, 0)]
    while stack and len(found) < _MAX_PARTS:
        part, depth = stack.pop()
        found.append(part)
        payload = part.get_payload() if part.is_multipart() else None
        if isinstance(payload, list) and depth < _MAX_PART_DEPTH:
            children = [p for p in payload if isinstance(p, email.message.Message)]
            stack.extend((child, depth + 1) for child in reversed(children))
    return found


def classify_message(msg: email.message.Message) -> tuple[bool, str]:
    """Decide whether ``msg`` is a newsletter; returns ``(yes, reason)`` for the log."""
    content_type = msg.get_content_type()
    raw_from = _raw_header(msg, "From") or ""
    _, address = _parse_from(raw_from)
    subject = decode_header_value(_raw_header(msg, "Subject") or "")
    if content_type == "multipart/report" or any(
        part.get_content_type() == "message/delivery-status" for part in walk_parts(msg)
    ):
        return False, "delivery report (bounce)"
    if (address and _DAEMON.match(address)) or (
        (_raw_header(msg, "Return-Path") or "").strip() == "<>" and _BOUNCE_SUBJECT.search(subject)
    ):
        return False, "bounce from a mail daemon"
    auto = (_raw_header(msg, "Auto-Submitted") or "no").lower()
    if auto.startswith("auto-replied") or _raw_header(msg, "X-Autoreply") is not None:
        return False, "automatic reply"
    precedence = (_raw_header(msg, "Precedence") or "").lower()
    if precedence == "junk":
        return False, "Precedence: junk (auto-responder or spam test)"
    if _raw_header(msg, "List-Unsubscribe"):
        return True, "List-Unsubscribe header"
    if _raw_header(msg, "List-Id"):
        return True, "List-Id header"
    if precedence in ("bulk", "list"):
        return True, f"Precedence: {precedence}"
    names = {key.lower() for key in msg}
    esp = next((h for h in _ESP_HEADERS if h in names), None)
    if esp is not None:
        return True, f"{esp} header"
    mailer = _raw_header(msg, "X-Mailer") or ""
    if _ESP_MAILER.search(mailer):
        return True, f"sent by a mailing service ({mailer[:40]})"
    return False, "no newsletter headers (List-Unsubscribe, List-Id, Precedence: bulk)"


def is_newsletter(msg: email.message.Message) -> bool:
    """True for bulk mail a person subscribed to: list headers, Precedence: bulk, ESP headers.

    Bounces, auto-replies and ``Precedence: junk`` are never newsletters.
    """
    return classify_message(msg)[0]


def _part_text(
    part: email.message.Message, *, html: bool, others: tuple[str, ...] = ()
) -> str | None:
    try:
        payload = part.get_payload(decode=True)
    except (ValueError, LookupError, AssertionError):
        return None
    if not isinstance(payload, bytes) or not payload.strip():
        return None
    try:
        declared = part.get_content_charset()
    except (ValueError, LookupError):
        declared = None
    hints: tuple[str | None, ...] = ()
    if html:
        meta = _META_CHARSET.search(payload[:4096])
        hints = (meta.group(1).decode("ascii", "replace"),) if meta else ()
    # Trigger: mail_test_2's HTML part declares no charset while its text part says
    # iso-8859-1; guessed alone, "martedì" came out as "marted" + a combining accent
    # (cp1258). The same mailer wrote both parts, so the sibling's label is the better hint.
    return decode_bytes(payload, declared, hints=(*hints, *others))[0]


def _declared_charsets(msg: email.message.Message) -> tuple[str, ...]:
    found: list[str] = []
    for part in walk_parts(msg):
        if part.get_content_maintype() != "text":
            continue
        try:
            charset = part.get_content_charset()
        except (ValueError, LookupError):
            continue
        if charset and charset not in found:
            found.append(charset)
    return tuple(found)


def forwarded_message(msg: email.message.Message) -> email.message.EmailMessage | None:
    """The first message attached whole (``message/rfc822``, "forward as attachment")."""
    for part in walk_parts(msg):
        if part is msg or part.get_content_type() != "message/rfc822":
            continue
        payload = part.get_payload()
        inner = payload[0] if isinstance(payload, list) and payload else None
        if isinstance(inner, email.message.EmailMessage):
            return inner
    return None


def find_bodies(msg: email.message.Message) -> tuple[str | None, str | None]:
    """The first inline text/html and text/plain bodies, decoded: ``(html, plain)``.

    Attachments and anything inside an attached message (a bounce's returned mail, a
    forwarded message) are not the body.
    """
    html: str | None = None
    plain: str | None = None
    others = _declared_charsets(msg)
    stack: list[tuple[email.message.Message, int]] = [(msg, 0)]
    seen = 0
    while stack and (html is None or plain is None) and seen < _MAX_PARTS:
        part, depth = stack.pop(0)
        seen += 1
        content_type = part.get_content_type()
        if content_type.startswith("message/") and part is not msg:
            continue
        if part.is_multipart():
            payload = part.get_payload()
            if isinstance(payload, list) and depth < _MAX_PART_DEPTH:
                children = [p for p in payload if isinstance(p, email.message.Message)]
                stack[:0] = [(child, depth + 1) for child in children]
            continue
        disposition = (part.get("Content-Disposition") or "").split(";")[0].strip().lower()
        if disposition == "attachment":
            continue
        if content_type == "text/html" and html is None:
            html = _part_text(part, html=True, others=others)
        elif content_type == "text/plain" and plain is None:
            plain = _part_text(part, html=False, others=others)
    return html, plain
