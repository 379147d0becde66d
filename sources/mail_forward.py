"""A newsletter forwarded inline: the original sender, date and subject from the forward block.

Mail clients put the forwarded message under a marker and a small header block::

    ---------- Forwarded message ---------      (Gmail; Thunderbird: "-------- Forwarded
    From: This Week in Rust <twir@...>           Message --------"; Apple Mail: "Begin
    Date: Wed, Sep 27, 2023 at 6:00 AM           forwarded message:")
    Subject: This Week in Rust 514
    To: <me@example.net>

Trigger: such a mail became a note titled "Fwd: ..." by the person who forwarded it, dated
the day of the forward, with the header block at the top of its content. Outcome: the block
is read for the original sender, date and subject and left out of the text.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from dataclasses import dataclass

__all__ = ["Forwarded", "split_forward"]

_MARKER = re.compile(
    r"^[ \t>]*(?:-{2,} *(?:forwarded message|original message|forwarded e-?mail"
    r"|message transf[ée]r[ée]|mensaje reenviado|mensagem encaminhada|messaggio inoltrato"
    r"|weitergeleitete nachricht|urspr[üu]ngliche nachricht) *-{2,}"
    r"|begin forwarded message:|d[ée]but du message r[ée]exp[ée]di[ée] ?:"
    r"|_{20,})[ \t]*$",  # Outlook: a rule of underscores, then From/Sent/To/Subject
    re.IGNORECASE | re.MULTILINE,
)
_FIELDS = {
    "from": "from",
    "de": "from",
    "von": "from",
    "da": "from",
    "date": "date",
    "sent": "date",
    "datum": "date",
    "gesendet": "date",
    "fecha": "date",
    "enviado": "date",
    "envoyé": "date",
    "data": "date",
    "inviato": "date",
    "subject": "subject",
    "objet": "subject",
    "betreff": "subject",
    "asunto": "subject",
    "assunto": "subject",
    "oggetto": "subject",
}
# Zero-width: the From line itself is read as the block's first field.
_BARE_FROM = re.compile(r"(?:\A|\n\n)(?=(?:From|De|Von|Da)[ \t]*:)")
_FIELD = re.compile(r"^[ \t>]*([A-Za-zÀ-ÿ-]{1,12})[ \t]*:[ \t]*(.*)$")
# Only a forward near the top is this mail's own; one quoted deep in a newsletter is not.
_MAX_OFFSET = 2000
_ADDRESS = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_MD_LINK = re.compile(r"\[([^\]]*)\]\((?:mailto:)?[^)]*\)")
_DATE_FORMATS = (
    "%a, %b %d, %Y at %I:%M %p",  # Gmail
    "%a, %b %d, %Y at %I:%M:%S %p",
    "%a, %b %d, %Y",
    "%B %d, %Y at %I:%M:%S %p",  # Apple Mail (a zone suffix follows)
    "%B %d, %Y at %I:%M %p",
    "%A, %B %d, %Y %I:%M %p",  # Outlook
    "%A, %B %d, %Y",
    "%d/%m/%Y %H:%M",
    "%Y-%m-%d %H:%M",
)


@dataclass(frozen=True, slots=True)
class Forwarded:
    """What the forward block said, and the text without it."""

    text: str
    from_name: str | None
    from_address: str | None
    date: dt.datetime | None
    subject: str | None


def _plain(value: str) -> str:
    """A header value as written in markdown: links, escapes and emphasis removed."""
    value = _MD_LINK.sub(r"\1", value)
    value = value.replace("\\", "").replace("**", "").replace("__", "")
    return " ".join(value.split())


def _parse_date(value: str) -> dt.datetime | None:
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        parsed = None
    if parsed is None:
        cleaned = value.replace("\u202f", " ")  # Gmail puts a narrow space before "AM"
        cleaned = re.sub(r"\s+(?:(?:GMT|UTC)(?:[+-]\d{1,4}(?::\d\d)?)?|[+-]\d{4})$", "", cleaned)
        for fmt in _DATE_FORMATS:
            try:
                parsed = dt.datetime.strptime(cleaned, fmt)
                break
            except ValueError:
                continue
    if parsed is None:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def _sender(value: str) -> tuple[str | None, str | None]:
    address_match = _ADDRESS.search(value)
    address = address_match.group(0).lower() if address_match else None
    name = _ADDRESS.sub("", value).replace("<>", "").replace("mailto:", "")
    name = name.strip(" <>\"'()[]").strip()
    return name or None, address


def split_forward(text: str) -> Forwarded | None:
    """The forward block at the top of ``text`` (markdown or plain), or ``None``.

    The block needs a marker line and a From or Subject field under it; what the person
    wrote above the marker stays in the text.
    """
    marker = _MARKER.search(text)
    if marker is None:
        # Outlook's rule of underscores does not survive as text: a block that starts a
        # paragraph with From, then has a date and a subject, is a forward too.
        marker = _BARE_FROM.search(text)
        bare = True
    else:
        bare = False
    if marker is None or marker.start() > _MAX_OFFSET:
        return None
    fields: dict[str, str] = {}
    lines = text[marker.end() :].split("\n")
    consumed = 0
    for index, line in enumerate(lines):
        if not line.strip():
            consumed = index + 1
            if fields:
                break  # the block ends at its first blank line
            continue
        match = _FIELD.match(line)
        if match is None:
            break
        key = _FIELDS.get(match.group(1).lower())
        if key is not None and key not in fields:
            fields[key] = _plain(match.group(2))
        consumed = index + 1
    if "from" not in fields and "subject" not in fields:
        return None
    if bare and not {"from", "date", "subject"} <= fields.keys():
        return None
    before = text[: marker.start()].rstrip()
    after = "\n".join(lines[consumed:]).strip()
    name, address = _sender(fields.get("from", ""))
    return Forwarded(
        text="\n\n".join(p for p in (before, after) if p),
        from_name=name,
        from_address=address,
        date=_parse_date(fields["date"]) if fields.get("date") else None,
        subject=fields.get("subject") or None,
    )
