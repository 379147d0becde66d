"""Obsidian Web Clipper drops: notes in ``Clippings/`` (and ``Clippings/<site>/``) become items.

Intake only reads: a clipping is something a person chose to save, so it is never modified,
moved or deleted here (the pipeline files a copy; SPEC section 3).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from signaldesk.frontmatter import (
    as_aware_datetime,
    as_str_list,
    as_tags,
    first_heading,
    parse_note,
)
from signaldesk.items import Item
from signaldesk.sources.decoding import decode_bytes, looks_binary, read_capped, walk_files
from signaldesk.sources.errors import SourceError
from signaldesk.sources.settings import ClipperSettings
from signaldesk.sources.tracking import strip_tracking_params

__all__ = ["ClippingResult", "clipping_to_item", "scan_clippings"]

logger = logging.getLogger(__name__)

_WIKILINK = re.compile(r"\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|[^\]]*)?\]\]")


@dataclass(frozen=True, slots=True)
class ClippingResult:
    """One file seen in the clipper folder.

    :param path: vault-relative POSIX path of the note.
    :param item: the item, or ``None`` when the file could not be read.
    :param error: why it could not be read.
    :param fingerprint: sha256 of the file bytes, so an edited clipping can be told apart.
    """

    path: str
    item: Item | None
    error: str | None
    fingerprint: str


def scan_clippings(vault: Path, settings: ClipperSettings) -> Iterator[ClippingResult]:
    """Yield a result for every ``.md`` file under ``<vault>/<settings.folder>``, recursively.

    Hidden files, temporary files and symlinks are skipped; a file over
    ``settings.max_bytes``, binary junk or unreadable bytes give a result with ``error``
    and the scan goes on. Nothing is ever written.
    """
    root = vault / settings.folder
    for path in walk_files(root):
        if path.suffix.lower() not in (".md", ".markdown"):
            continue
        rel = path.relative_to(vault).as_posix()
        try:
            data = read_capped(path, settings.max_bytes)
        except (OSError, SourceError) as exc:
            logger.warning("clipping %s not read: %s", rel, exc)
            yield ClippingResult(rel, None, str(exc), "")
            continue
        fingerprint = hashlib.sha256(data).hexdigest()
        if looks_binary(data):
            yield ClippingResult(rel, None, "binary content, not a markdown note", fingerprint)
            continue
        text, _ = decode_bytes(data)
        try:
            item = clipping_to_item(rel, text)
        except Exception as exc:  # one odd note must not stop the scan; report it instead
            logger.info("clipping %s not parsed: %r", rel, exc)
            logger.debug("clipping %s not parsed", rel, exc_info=True)
            yield ClippingResult(rel, None, f"could not parse: {exc}", fingerprint)
            continue
        yield ClippingResult(rel, item, None, fingerprint)


def _authors(value: Any) -> list[str]:
    names: list[str] = []
    for entry in as_str_list(value):
        links = _WIKILINK.findall(entry)
        for name in links or [entry]:
            name = name.strip().strip('"').strip()
            if name and name not in names:
                names.append(name)
    return names


def _url(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    candidate = value.strip().strip("<>")
    scheme = urlsplit(candidate).scheme.lower() if candidate else ""
    return strip_tracking_params(candidate) if scheme in ("http", "https") else None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text or None


def clipping_to_item(rel_path: str, text: str) -> Item:
    """Turn one clipping's text into an :class:`Item` (``source_kind="clipper"``).

    Identity is the note's path (``guid = "clipper:" + rel_path``): the same page clipped
    twice is two notes a person made, and the pipeline still matches either to a feed item
    through ``url`` (the frontmatter ``source``, tracking stripped). Notes without Web Clipper
    frontmatter still become items, titled from their first H1 or file name, with
    ``extra["clipper_frontmatter"] = False``; YAML that does not parse is recovered line by line
    and noted in ``extra["frontmatter_error"]``.
    """
    note = parse_note(text)
    meta = note.frontmatter
    body = note.body.strip()
    url = _url(meta.get("source") or meta.get("url"))
    tags = as_tags(meta.get("tags"))
    is_clipper = url is not None or "clippings" in tags
    stem = PurePosixPath(rel_path).stem
    title = _text(meta.get("title")) or first_heading(body) or stem
    authors = _authors(meta.get("author") or meta.get("authors"))
    published = as_aware_datetime(meta.get("published"))
    created = as_aware_datetime(meta.get("created"))
    folder = PurePosixPath(rel_path).parent
    extra: dict[str, Any] = {"clipper_frontmatter": is_clipper}
    if created is not None:
        extra["clipped_at"] = created.isoformat()
    if note.error is not None:
        extra["frontmatter_error"] = note.error
    site = _text(meta.get("site") or meta.get("site_name"))
    if site is None and len(folder.parts) > 1:
        # Newer Web Clipper versions file clippings under Clippings/<site>/.
        site = folder.name
    return Item(
        source_kind="clipper",
        source_id=folder.parts[0] if folder.parts else rel_path,
        title=title[:500],
        text=body,
        guid=f"clipper:{rel_path}",
        url=url,
        summary=_text(meta.get("description")),
        author=", ".join(authors) or None,
        published=published,
        tags=tags,
        site_name=site,
        origin_path=rel_path,
        extra=extra,
    )
