"""Turn what `signaldesk score` is given (a file or a URL) into an :class:`Item` to score.

A markdown note or clipping is read the way the Web Clipper adapter reads
clippings, an ``.eml`` the way the newsletter adapter reads mail (any message,
newsletter headers or not), text and JSON, and anything in the tool-output drop folder,
the way tool output is read; a URL is fetched with the product's HTTP client and its
article extracted.
"""

from __future__ import annotations

from pathlib import Path

from signaldesk.errors import SignaldeskError
from signaldesk.items import Item
from signaldesk.pipeline.errors import PipelineError
from signaldesk.pipeline.intake.stages import normalise
from signaldesk.sources.clipper import clipping_to_item
from signaldesk.sources.decoding import decode_bytes
from signaldesk.sources.errors import FetchError
from signaldesk.sources.fulltext import fetch_article
from signaldesk.sources.http import build_client
from signaldesk.sources.newsletter import parse_email
from signaldesk.sources.settings import HttpSettings
from signaldesk.sources.tool_output import parse_drop

__all__ = ["ScoreInputError", "is_url", "item_from_file", "item_from_url"]

_MAX_BYTES = 25_000_000


class ScoreInputError(PipelineError):
    """What was given to `signaldesk score` cannot be read as an item."""


def is_url(target: str) -> bool:
    """Whether ``target`` is an http(s) URL rather than a path."""
    return target.lower().startswith(("http://", "https://"))


def item_from_file(path: Path, vault: Path | None = None, *, drops: Path | None = None) -> Item:
    """Read ``path`` as an item (markdown, ``.eml``, text or JSON).

    :param drops: the tool-output drop folder: a file in it is read as the tool output
        it is (a captured answer is no clipping, and intake does not score it as one).
    :raises ScoreInputError: the file is missing, too big, or not something that reads as one.
    """
    try:
        size = path.stat().st_size
        if size > _MAX_BYTES:
            raise ScoreInputError(f"{path} is too big to score ({size:,} bytes)")
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise ScoreInputError(
            f"no such file: {path}", hint="give a path or an http(s) URL"
        ) from exc
    except OSError as exc:
        raise ScoreInputError(f"cannot read {path}: {exc}") from exc
    suffix = path.suffix.lower()
    dropped = _relative(path, drops) if drops is not None else None
    if dropped is not None and suffix != ".eml":
        return _drop(path, dropped, data)
    if suffix in (".md", ".markdown"):
        rel = path.name
        if vault is not None:
            try:
                rel = path.resolve().relative_to(vault.resolve()).as_posix()
            except ValueError:
                rel = path.name
        text, _ = decode_bytes(data)
        return normalise(clipping_to_item(rel, text))
    if suffix == ".eml":
        item = parse_email(data, location=str(path), accept_all=True)
        if item is None:
            raise ScoreInputError(f"{path} is a bounce or an auto-reply, not something to score")
        return normalise(item)
    return _drop(path, path.name, data)


def _relative(path: Path, folder: Path) -> str | None:
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        return None


def _drop(path: Path, name: str, data: bytes) -> Item:
    """``data`` read as a tool-output drop named ``name`` (as intake reads one)."""
    try:
        return normalise(parse_drop(name, data))
    except SignaldeskError:
        raise
    except Exception as exc:
        raise ScoreInputError(
            f"cannot read {path} as an item: {exc}",
            hint="score a .md note or clipping, an .eml, a .txt or .json file, or a URL",
        ) from exc


async def item_from_url(url: str, http: HttpSettings) -> Item:
    """Fetch ``url`` and extract its article (trafilatura) as an item.

    :raises ScoreInputError: the page could not be fetched, or has no article text.
    """
    try:
        async with build_client(http) as client:
            article = await fetch_article(client, url, http=http)
    except FetchError as exc:
        # The fetch's own message names no address ("connection refused: All
        # connection attempts failed"): a person scoring one URL is told which.
        named = exc.message if url in exc.message else f"cannot fetch {url}: {exc.message}"
        raise ScoreInputError(
            named,
            hint=exc.hint
            or "check the address and the network (HTTP_PROXY / HTTPS_PROXY are used when "
            "set), or save the page and score the file",
        ) from exc
    if article is None or not article.text_markdown.strip():
        raise ScoreInputError(f"no article text could be extracted from {url}")
    item = Item(
        source_kind="clipper",
        source_id=url,
        title=article.title or url,
        text=article.text_markdown,
        url=article.url or url,
        author=article.author,
        published=article.published,
        site_name=article.site_name,
    )
    return normalise(item)
