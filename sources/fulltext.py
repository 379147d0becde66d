"""Full text: fetch an article page and extract the article with trafilatura.

Used for feed entries that carry only a teaser (:func:`sources.rss.is_teaser`).
:func:`extract_article` is pure (bytes in, article out) for the benchmark and tests;
:func:`fetch_article` adds the capped fetch; :func:`with_full_text` swaps an item's
teaser for the article and falls back to the feed's own content when anything fails.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

import anyio.to_thread
import httpx
import trafilatura
from lxml.etree import _Element, strip_tags
from lxml.html import HtmlElement
from trafilatura.htmlprocessing import build_html_output
from trafilatura.settings import Document
from trafilatura.utils import load_html

from signaldesk.items import Item
from signaldesk.sources.errors import FetchError
from signaldesk.sources.html_markdown import FEED, html_to_markdown
from signaldesk.sources.http import (
    HostBreaker,
    HostLimiter,
    fetch,
    is_transient_status,
    page_timeout,
)
from signaldesk.sources.settings import HttpSettings

__all__ = [
    "Article",
    "ExtractionMode",
    "extract_article",
    "fetch_article",
    "merge_article",
    "with_full_text",
]

logger = logging.getLogger(__name__)

# Trigger: a scan's extract workers ([pipeline] extract_concurrency) run
# trafilatura in several threads at once.
# Why: trafilatura keeps one lxml HTML parser and its compiled XPath expressions at
# module level and every call shares them; lxml releases the GIL while it parses and
# evaluates, and sharing them between threads corrupts libxml2's memory. Measured
# in the kill -9 matrix (bench/kill_matrix.py): 5 of 130 scans died with "free():
# invalid pointer", "double free", "munmap_chunk()" or a segfault, and in every
# stack the faulting thread was inside trafilatura.
# Outcome: one extraction at a time in this process; the fetches stay concurrent.
_TRAFILATURA_LOCK = threading.Lock()

ExtractionMode = Literal["balanced", "precision", "recall"]

_ACCEPT_HTML = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"


@dataclass(frozen=True, slots=True)
class Article:
    """An article extracted from a web page.

    :param url: the page's URL (after redirects when fetched).
    :param text_markdown: the article body as markdown (no metadata header).
    :param published: the page's publication date (midnight UTC when only a day is known).
    """

    url: str | None
    title: str | None
    text_markdown: str
    author: str | None = None
    published: datetime | None = None
    site_name: str | None = None


def extract_article(
    html: bytes | str,
    url: str | None = None,
    *,
    mode: ExtractionMode = "precision",
) -> Article | None:
    """Extract the main article of an HTML page.

    ``mode`` picks trafilatura's trade-off. Measured on the 181-page Zyte benchmark
    (``python -m bench.extraction --mode ...``, shingle F1): precision 0.963,
    balanced 0.957, recall 0.957 — precision also runs about twice as fast, hence the
    default. Comments are left out.

    :returns: ``None`` when the page yields no article text.
    """
    if not html:
        return None
    # The whole extraction, trafilatura's HTML rendering and the markdown conversion
    # (its own module-level lxml parser) included, under the one lock.
    with _TRAFILATURA_LOCK:
        return _extract(html, url, mode)


def _extract(html: bytes | str, url: str | None, mode: ExtractionMode) -> Article | None:
    try:
        tree = load_html(html)
        if tree is None:
            return None
        _unmark_links_in_sentences(tree)
        document = trafilatura.bare_extraction(
            tree,
            url=url,
            with_metadata=True,
            include_comments=False,
            include_formatting=True,
            include_links=True,
            include_tables=True,
            include_images=False,
            favor_precision=mode == "precision",
            favor_recall=mode == "recall",
        )
    except Exception as exc:  # trafilatura is lxml underneath: odd pages raise odd things
        logger.info("extraction failed for %s: %r", url, exc)
        return None
    if not isinstance(document, Document):
        return None
    text = _markdown(document, url)
    if not text:
        return None
    return Article(
        url=document.url or url,
        title=document.title or None,
        text_markdown=text,
        author=document.author or None,
        published=_date(document.date),
        site_name=document.sitename or None,
    )


# An inline wrapper in running text whose class says "link" (CBS Sports: <span class="link">).
_LINK_WRAPPERS = "|".join(
    f"//p//{tag}[contains(@class, 'link')][.//a]" for tag in ("span", "em", "strong", "b", "i")
)
_LINK_TOKEN = re.compile(r"(?:^|\s)link(?=\s|$)")


def _unmark_links_in_sentences(tree: HtmlElement) -> None:
    """Take the class ``link`` off inline wrappers of links inside paragraphs, in place.

    Why: in precision mode trafilatura drops every element of class ``link`` (on menus
    it is boilerplate), and CBS Sports wraps each link of its running text in a
    ``<span class="link">``: "has reported that <span class="link"><a>the NFL will fine
    Rudolph</a></span> for his role" was filed as "has reported that for his role".
    Inside a paragraph such a wrapper is part of a sentence.
    """
    for el in tree.xpath(_LINK_WRAPPERS):
        classes = el.get("class") or ""
        if _LINK_TOKEN.search(classes):
            el.set("class", _LINK_TOKEN.sub(" ", classes).strip())


def _markdown(document: Document, url: str | None) -> str:
    """The article as markdown, rendered from trafilatura's HTML by the one converter.

    Why: trafilatura finds the article, but its own markdown turns some headings into
    plain lines and glues links to their neighbours; the converter renders pages by the
    same rules as feed content (``python -m bench.fidelity --corpus articles``).
    trafilatura's text is kept when the conversion comes out empty.
    """
    markdown = ""
    if document.body is not None:
        try:
            _keep_code_and_order(document.body)
            markdown = html_to_markdown(build_html_output(document), profile=FEED, base_url=url)
        except Exception as exc:  # lxml underneath: an odd tree must not lose the article
            logger.info("article HTML not converted for %s: %r", url, exc)
    return markdown.strip() or (document.text or "").strip()


# trafilatura's elements that hold running text: a <code> inside one is a word of it.
_RUNNING_TEXT = frozenset({"p", "item", "cell", "head", "hi", "ref", "quote"})


def _keep_code_and_order(body: _Element) -> None:
    """Mark in trafilatura's tree what its HTML rendering would lose, in place.

    Why: ``build_html_output`` renders every ``<code>`` as ``<pre>`` and every list as
    ``<ul>``, so "wraps the standard <code>tarfile</code> module" came out as three
    code blocks in a note (and depth and actionability counted them as code blocks),
    and numbered steps lost their numbers. A ``<code>`` in running text, on one line,
    becomes ``<tt>`` (inline code to the converter, left alone by trafilatura's
    rendering); the inner ``<code>`` of a ``<pre><code>`` pair is merged into the outer
    one, so the block is one block, its text the element's own (an element child would
    be indented by the rendering's pretty-printing); an ordered list becomes ``<ol>``.
    """
    for el in list(body.iter("code", "list")):
        if el.tag == "list":
            if el.get("rend") == "ol":
                el.tag = "ol"
            continue
        parent = el.getparent()
        if parent is None:
            continue  # an inner <code> merged into its block already
        if next(el.iterdescendants("code"), None) is not None:
            strip_tags(el, "code")
        if parent.tag in _RUNNING_TEXT and "\n" not in el.xpath("string()"):
            el.tag = "tt"


def _date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


async def fetch_article(
    client: httpx.AsyncClient,
    url: str,
    *,
    http: HttpSettings,
    limiter: HostLimiter | None = None,
    breaker: HostBreaker | None = None,
) -> Article | None:
    """Fetch ``url`` (capped, with the page timeouts of ``[http]``) and extract its article.

    Extraction runs in a worker thread: it is CPU work of tens of milliseconds.

    :param breaker: shared by a scan's fetches: a host that did not answer is not
        asked again in the same scan.
    :returns: ``None`` when the page has no extractable article.
    :raises FetchError: the page could not be fetched (``transient`` says whether
        trying later may help; ``cause`` says why, for grouping), or is not a web page.
    """
    response = await fetch(
        client,
        url,
        settings=http,
        limiter=limiter,
        headers={"Accept": _ACCEPT_HTML},
        max_redirects=http.max_redirects,
        breaker=breaker,
        timeout=page_timeout(http),
        deadline=http.page_total_timeout,
    )
    if not 200 <= response.status < 300:
        raise FetchError(
            f"HTTP {response.status} fetching article {response.url}",
            transient=is_transient_status(response.status),
            url=url,
            status=response.status,
        )
    mime = (response.content_type or "text/html").split(";")[0].strip().lower()
    if mime not in {"text/html", "application/xhtml+xml", "text/plain", ""}:
        raise FetchError(
            f"not a web page ({mime}) at {response.url}",
            transient=False,
            url=url,
            cause="not a web page",
        )
    return await anyio.to_thread.run_sync(extract_article, response.body, response.url)


async def with_full_text(
    client: httpx.AsyncClient,
    item: Item,
    *,
    http: HttpSettings,
    limiter: HostLimiter | None = None,
) -> Item:
    """``item`` with its body replaced by the linked article's full text, when one can be had.

    Falls back to the item as it came from the feed when the page cannot be fetched
    (``teaser`` set: the text is the feed's own, though the article was wanted) or
    yields less text than the feed already had; ``extra["full_text"]`` records which
    happened (``"fetched"``, or why not) so later stages can tell.
    """
    if not item.url:
        return item
    try:
        article = await fetch_article(client, item.url, http=http, limiter=limiter)
    except FetchError as exc:
        logger.info("full text for %s failed: %s", item.url, exc.message)
        return replace(
            item, teaser=True, extra={**item.extra, "full_text": f"failed: {exc.message}"}
        )
    merged = merge_article(item, article) if article is not None else None
    if merged is None:
        return replace(item, extra={**item.extra, "full_text": "not better than the feed"})
    return merged


def merge_article(item: Item, article: Article) -> Item | None:
    """``item`` with the article's text, or ``None`` when the feed already had as much.

    The feed's own text becomes the summary when it had none; author, date, site and
    title fill gaps only, so what the feed said wins.
    """
    if len(article.text_markdown.strip()) <= len(item.text.strip()):
        return None
    return replace(
        item,
        text=article.text_markdown,
        summary=item.summary or (item.text or None),
        author=item.author or article.author,
        published=item.published or article.published,
        site_name=item.site_name or article.site_name,
        title=item.title or article.title or "",
        teaser=False,
        extra={**item.extra, "full_text": "fetched"},
    )
