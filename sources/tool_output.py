"""Output of AI tools and scripts: a drop folder of .md/.txt/.json files, and `capture`.

The capture command is the write path MCP deliberately does not offer (SPEC section 3):
:func:`write_capture` puts a markdown drop file in the folder, and the next scan picks it up
like any other drop. Identity is the content hash, so the same output dropped twice (or
captured and dropped) is one item.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from signaldesk.frontmatter import as_tags, first_heading, parse_note, render_note
from signaldesk.items import Item
from signaldesk.sources.decoding import (
    DEFAULT_MAX_BYTES,
    decode_bytes,
    looks_binary,
    read_capped,
    walk_files,
)
from signaldesk.sources.errors import SourceError
from signaldesk.sources.tracking import strip_tracking_params
from signaldesk.vault import write_new_file

__all__ = [
    "DROP_SUFFIXES",
    "DropParseError",
    "DropResult",
    "parse_drop",
    "scan_drop_folder",
    "write_capture",
]

logger = logging.getLogger(__name__)

DROP_SUFFIXES: tuple[str, ...] = (".md", ".markdown", ".txt", ".json")
_SOURCE_ID = "tool-output"
_TEXT_KEYS = ("text", "content", "output", "body", "markdown", "result")


class DropParseError(SourceError):
    """A drop file is not text signaldesk can read."""


@dataclass(frozen=True, slots=True)
class DropResult:
    """One file seen in the drop folder.

    :param path: POSIX path relative to the drop folder.
    :param item: the item, or ``None`` when the file could not be read.
    :param error: why it could not be read.
    :param fingerprint: sha256 of the file bytes.
    """

    path: str
    item: Item | None
    error: str | None
    fingerprint: str


def scan_drop_folder(folder: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Iterator[DropResult]:
    """Yield a result for every ``.md``, ``.markdown``, ``.txt`` and ``.json`` file in ``folder``.

    Recursive; dotfiles, ``*.tmp`` and symlinks are skipped (:func:`write_capture` writes a
    hidden temporary file and renames it, so a half-written capture is never seen). Files over
    ``max_bytes``, binary junk and unparsable files yield a result with ``error``.
    """
    for path in walk_files(folder):
        if path.suffix.lower() not in DROP_SUFFIXES:
            continue
        rel = path.relative_to(folder).as_posix()
        try:
            data = read_capped(path, max_bytes)
        except (OSError, SourceError) as exc:
            logger.warning("drop file %s not read: %s", rel, exc)
            yield DropResult(rel, None, str(exc), "")
            continue
        fingerprint = hashlib.sha256(data).hexdigest()
        try:
            item = parse_drop(rel, data)
        except SourceError as exc:
            yield DropResult(rel, None, exc.message, fingerprint)
            continue
        except Exception as exc:  # one odd file must not stop the scan; report it instead
            logger.info("drop file %s not parsed: %r", rel, exc)
            logger.debug("drop file %s not parsed", rel, exc_info=True)
            yield DropResult(rel, None, f"could not parse: {exc!r}", fingerprint)
            continue
        yield DropResult(rel, item, None, fingerprint)


def _url(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    candidate = value.strip()
    if urlsplit(candidate).scheme.lower() in ("http", "https") and urlsplit(candidate).netloc:
        return strip_tracking_params(candidate)
    return None


def _one_line(value: Any, limit: int = 200) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    text = " ".join(str(value).split())
    return text[:limit] or None


def _first_line(text: str) -> str | None:
    for line in text.split("\n"):
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:200]
    return None


def parse_drop(name: str, data: bytes) -> Item:
    """Turn one drop file into an :class:`Item` (``source_kind="tool_output"``).

    ``.md``: optional frontmatter (``title``, ``source``, ``tags``, ``tool``); title from it,
    else the first H1, else the file name. ``.txt``: title is the first line. ``.json``: an
    object with ``title`` and ``text``/``content``/``output`` (plus optional ``source``,
    ``tags``, ``tool``), or any other JSON, shown pretty-printed in a fenced block.

    :raises DropParseError: binary data, or a suffix that is not a drop file.
    """
    if looks_binary(data):
        raise DropParseError(f"{name}: binary content, not text")
    text, _ = decode_bytes(data)
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    suffix = PurePosixPath(name).suffix.lower()
    stem = PurePosixPath(name).stem
    meta: dict[str, Any] = {}
    extra: dict[str, Any] = {"drop_file": name}
    if suffix in (".md", ".markdown"):
        note = parse_note(text)
        meta, body = note.frontmatter, note.body.strip()
        if note.error is not None:
            extra["frontmatter_error"] = note.error
        title = _one_line(meta.get("title")) or first_heading(body) or stem
    elif suffix == ".txt":
        body = text.strip()
        title = _first_line(body) or stem
    elif suffix == ".json":
        meta, body, title = _parse_json(text, stem)
        extra["format"] = "json"
    else:
        raise DropParseError(f"{name}: not a drop file (expected one of {DROP_SUFFIXES})")
    tool = _one_line(meta.get("tool"))
    if tool:
        extra["tool"] = tool
    captured = meta.get("captured")
    if captured is not None:
        extra["captured"] = str(captured)
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return Item(
        source_kind="tool_output",
        source_id=_SOURCE_ID,
        title=title,
        text=body,
        guid=f"tool:{digest}",
        url=_url(meta.get("source") or meta.get("url")),
        summary=_one_line(meta.get("summary") or meta.get("description"), 500),
        author=_one_line(meta.get("author")),
        tags=as_tags(meta.get("tags")),
        extra=extra,
    )


def _parse_json(text: str, stem: str) -> tuple[dict[str, Any], str, str]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DropParseError(f"{stem}.json: invalid JSON ({exc.msg}, line {exc.lineno})") from exc
    if isinstance(value, dict):
        body_value = next((value[k] for k in _TEXT_KEYS if isinstance(value.get(k), str)), None)
        if body_value is not None:
            title = _one_line(value.get("title")) or _first_line(body_value) or stem
            return value, body_value.strip(), title
        title = _one_line(value.get("title")) or stem
        meta = {k: value[k] for k in ("source", "url", "tags", "tool") if k in value}
        return meta, _json_block(value), title
    return {}, _json_block(value), stem


def _json_block(value: Any) -> str:
    return "```json\n" + json.dumps(value, indent=2, ensure_ascii=False) + "\n```"


def _slug(title: str, limit: int = 60) -> str:
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")
    return slug[:limit].rstrip("-") or "capture"


def write_capture(
    folder: Path,
    text: str,
    *,
    title: str | None = None,
    tags: Sequence[str] = (),
    source: str | None = None,
    tool: str | None = None,
    now: dt.datetime | None = None,
) -> Path:
    """Write ``text`` as a markdown drop file in ``folder`` and return its path.

    The name is ``<YYYYmmdd-HHMMSS>-<slug>.md`` (``-2``, ``-3``, ... when taken). The file is
    written to a hidden temporary file, fsynced, then hard-linked to its final name, which
    fails instead of replacing when the name exists: a capture never overwrites a file,
    even one created by a concurrent capture in the same second.

    :raises SourceError: ``text`` is empty or the folder cannot be written.
    """
    if not text.strip():
        raise SourceError("nothing to capture: the text is empty", hint="pass text or pipe it in")
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    title = " ".join((title or _first_line(text) or "capture").split())[:200]
    meta: dict[str, Any] = {"title": title, "captured": moment.isoformat()}
    if tags:
        meta["tags"] = [t.lstrip("#") for t in tags if t.strip()]
    if source:
        meta["source"] = source
    if tool:
        meta["tool"] = tool
    content = render_note(meta, text)
    stamp = moment.strftime("%Y%m%d-%H%M%S")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return write_new_file(folder, f"{stamp}-{_slug(title)}", ".md", content.encode("utf-8"))
    except OSError as exc:
        raise SourceError(
            f"cannot write the capture to {folder}: {exc}", hint="check the drop folder setting"
        ) from exc
