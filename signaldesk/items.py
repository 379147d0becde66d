"""The record that crosses layers: one incoming signal, normalised.

Sources produce it, the pipeline ledger stores it, scoring reads it. It knows
nothing about where it will be filed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

SourceKind = Literal["rss", "clipper", "newsletter", "tool_output"]


@dataclass(frozen=True, slots=True)
class Item:
    """One normalised incoming signal.

    :param source_kind: which adapter produced it.
    :param source_id: the subscription it came from (feed URL, drop folder, mailbox).
    :param guid: the source's own identity (feed GUID, Message-ID, vault path of a clipping).
    :param url: the canonical link to the original, when there is one.
    :param title: a one-line title.
    :param text: the body as markdown (full text when it could be had).
    :param summary: the source's own short summary or teaser, if any.
    :param author: author names joined by ", ", if known.
    :param published: when the source says it was published (timezone-aware).
    :param tags: tags the source carried.
    :param site_name: the publishing site's name, if known.
    :param origin_path: vault-relative path of the note it came from (clippings, inbox).
    :param teaser: ``text`` is only the feed's own teaser: the linked page's full text
        was wanted but could not be had (yet). Intake fetches the page again in later
        scans; triage marks such a card "scored on the feed's teaser" and scores the
        item again once the full text replaces it.
    :param extra: adapter-specific metadata that later stages may show but never need.
    """

    source_kind: SourceKind
    source_id: str
    title: str
    text: str
    guid: str | None = None
    url: str | None = None
    summary: str | None = None
    author: str | None = None
    published: datetime | None = None
    tags: tuple[str, ...] = ()
    site_name: str | None = None
    origin_path: str | None = None
    teaser: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
