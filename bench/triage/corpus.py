"""The triage evaluation set: labels from ``labels.jsonl``, texts from where their licence lets
them live, each item presented to the scorer the way the pipeline would present it.

Where each item's page comes from (``source``):

- ``articles``: a real page of the Zyte article-extraction benchmark, raw HTML read from
  ``shared/data/articles/html`` (present in CI);
- ``feeds``: an entry of a real feed in ``shared/data/feeds``, parsed by signaldesk's own feed
  parser (present in CI);
- ``repo``: a post or doc page of a public project, whose markdown source was rendered to the
  page's HTML by ``python -m bench.triage.build_cache``; only the reference (repository,
  commit, path, URL, title, a sha256) is committed, the page sits in the local cache;
- ``pages``: a stored web page (the search corpus's copy of the page's beginning), likewise
  cached locally, never committed.

Two modes, as the issue's table measured them:

- ``feed``: an RSS entry carrying a teaser, whose full text is fetched from the linked page:
  :func:`sources.fulltext.extract_article` (trafilatura) on the page HTML, merged into the
  entry by :func:`sources.fulltext.merge_article`, then :func:`pipeline.intake.stages.normalise`;
- ``clipper``: a Web Clipper note in ``Clippings/`` (its frontmatter as the clipper writes it,
  the extracted article as its body) read by :func:`sources.clipper.clipping_to_item`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

from signaldesk.items import Item
from signaldesk.pipeline.intake.stages import normalise
from signaldesk.sources.clipper import clipping_to_item
from signaldesk.sources.fulltext import extract_article, merge_article

__all__ = [
    "CACHE_ENV",
    "LABELS",
    "MODES",
    "SETS",
    "Example",
    "cache_dir",
    "load_examples",
    "page_path",
    "split_of",
]

Mode = Literal["feed", "clipper"]
MODES: tuple[Mode, ...] = ("feed", "clipper")
# The labelled sets, oldest first: each was labelled, by LABELLING.md, after the figures of
# the ones before it were known, from sources they do not use, and is split on its own.
SETS = (
    "first",
    "fresh",
    "fresh2",
    "fresh3",
    "fresh4",
    "fresh5",
    "fresh6",
    "fresh7",
    "fresh8",
    "fresh9",
)
LABELS = Path(__file__).resolve().parent / "labels.jsonl"
CACHE_ENV = "SIGNALDESK_BENCH_CACHE"
_REPO = Path(__file__).resolve().parents[2]
_DEFAULT_SHARED = _REPO.parent / "shared" / "data"
_TEASER_WORDS = 45
_CLIPPED_AT = "2026-01-05T09:00:00+00:00"


def cache_dir() -> Path:
    """Where locally cached pages live (``$SIGNALDESK_BENCH_CACHE`` or ``~/.cache/...``)."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "signaldesk-bench" / "triage"


def page_path(item_id: str) -> Path:
    """The cached page HTML of a ``repo`` or ``pages`` item."""
    return cache_dir() / "pages" / f"{item_id}.html"


@dataclass(frozen=True, slots=True)
class Example:
    """One labelled item, ready to score in either mode."""

    id: str
    domain: str
    file: bool
    why: str
    split: str
    source: str
    licence: str
    items: dict[str, Item]
    site: str | None = None

    def item(self, mode: Mode) -> Item:
        return self.items[mode]


@cache
def _ground_truth(shared: Path) -> dict[str, dict[str, str]]:
    data: dict[str, dict[str, str]] = json.loads(
        (shared / "articles" / "ground-truth.json").read_text(encoding="utf-8")
    )
    return data


@cache
def _feed(path: Path, url: str) -> tuple[Item, ...]:
    from signaldesk.sources.feed_parse import parse_feed

    return parse_feed(path.read_bytes(), url=url).items


def _teaser(text: str, words: int = _TEASER_WORDS) -> str:
    """What a feed's description usually holds: the opening words of the article."""
    plain = re.sub(r"[#*_`>|\[\]]+", " ", text)
    parts = plain.split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def _page_html(row: dict[str, Any], shared: Path | None) -> bytes | None:
    source = row["source"]
    if source == "articles":
        if shared is None:
            return None
        path = shared / "articles" / "html" / f"{row['ref']['id']}.html.gz"
        return gzip.decompress(path.read_bytes()) if path.is_file() else None
    path = page_path(row["id"])
    if not path.is_file():
        return None
    data = path.read_bytes()
    expected = row.get("sha256")
    if expected and hashlib.sha256(data).hexdigest() != expected:
        return None  # a cache built from other versions of the pages: not this set
    return data


def _clipping(item_id: str, meta: dict[str, Any], body: str) -> Item:
    """A Web Clipper note as the clipper writes it, read back by the clipper adapter."""
    front = yaml.safe_dump(
        {k: v for k, v in meta.items() if v not in (None, [], "")},
        sort_keys=False,
        allow_unicode=True,
    )
    note = f"---\n{front}---\n\n{body.strip()}\n"
    return normalise(clipping_to_item(f"Clippings/{item_id}.md", note))


def _from_page(row: dict[str, Any], html: bytes) -> dict[str, Item] | None:
    url = row.get("url")
    article = extract_article(html, url)
    if article is None:
        return None
    title = article.title or str(row.get("title") or url)
    entry = Item(
        source_kind="rss",
        source_id=str(row.get("feed") or url),
        guid=url,
        url=url,
        title=title,
        text=_teaser(article.text_markdown),
        site_name=row.get("site"),
    )
    feed = normalise(merge_article(entry, article) or entry)
    clip = _clipping(
        row["id"],
        {
            "title": title,
            "source": url,
            "author": [f"[[{a.strip()}]]" for a in (article.author or "").split(";") if a.strip()],
            "published": article.published.date().isoformat() if article.published else None,
            "created": _CLIPPED_AT,
            "description": _teaser(article.text_markdown, 30),
            "tags": ["clippings"],
        },
        article.text_markdown,
    )
    return {"feed": feed, "clipper": clip}


def _from_feed(row: dict[str, Any], shared: Path | None) -> dict[str, Item] | None:
    if shared is None:
        return None
    ref = row["ref"]
    path = shared / "feeds" / ref["file"]
    if not path.is_file():
        return None
    entry = _feed(path, str(ref["feed_url"]))[int(ref["entry"])]
    feed = normalise(entry)
    clip = _clipping(
        row["id"],
        {
            "title": entry.title,
            "source": entry.url,
            "author": [f"[[{a.strip()}]]" for a in (entry.author or "").split(",") if a.strip()],
            "published": entry.published.date().isoformat() if entry.published else None,
            "created": _CLIPPED_AT,
            "description": entry.summary,
            "tags": ["clippings"],
        },
        entry.text,
    )
    return {"feed": feed, "clipper": clip}


def _article_for_row(row: dict[str, Any], shared: Path | None) -> dict[str, Item] | None:
    if row["source"] == "feeds":
        return _from_feed(row, shared)
    html = _page_html(row, shared)
    return _from_page(row, html) if html is not None else None


def load_examples(
    labels: Path = LABELS,
    shared: Path | None = _DEFAULT_SHARED,
    sets: tuple[str, ...] = ("first",),
) -> tuple[list[Example], list[str]]:
    """Every labelled item of ``sets`` whose text can be had here, and the ids of those that
    cannot.

    :param shared: ``shared/data`` (``None`` or missing: the ``articles`` and ``feeds`` items
        are skipped).
    :param sets: which labelled sets to read: ``first`` (rows without a ``set``) and/or
        ``fresh``, the second set (labelled after the first one's figures were known, from
        other sources, and split once on its own), and/or ``fresh2``, the third (likewise,
        from sources neither earlier set uses).
    """
    if shared is not None and not shared.is_dir():
        shared = None
    examples: list[Example] = []
    missing: list[str] = []
    for line in labels.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row: dict[str, Any] = json.loads(line)
        if row.get("set", "first") not in sets:
            continue
        items = _article_for_row(row, shared)
        if items is None:
            missing.append(row["id"])
            continue
        examples.append(
            Example(
                id=row["id"],
                domain=row["domain"],
                file=bool(row["file"]),
                why=row["why"],
                split=row["split"],
                source=row["source"],
                licence=row["licence"],
                items=items,
                site=row.get("site"),
            )
        )
    return examples, missing


def split_of(examples: Sequence[Example], split: str) -> list[Example]:
    """The examples of one half (``tuning`` or ``heldout``)."""
    return [x for x in examples if x.split == split]
