"""Full-text extraction: a real article page served on 127.0.0.1, and the pure extractor."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from signaldesk.items import Item
from signaldesk.sources.errors import FetchError
from signaldesk.sources.fulltext import extract_article, fetch_article, with_full_text
from signaldesk.sources.http import build_client
from signaldesk.sources.settings import HttpSettings
from tests.feedserver import FeedServer, Reply, feed_server

__all__ = ["feed_server"]

HTTP = HttpSettings(total_timeout=5.0, connect_timeout=1.0)
# A WSJ-style news page of the Zyte benchmark with a human-checked article body.
PAGE_ID = "042bb7b5fedab6eac7db576522b89b93904c237d344bcbe14a6a5ab7f7335856"

PARAGRAPHS = "".join(
    f"<p>Paragraph {i} of the article explains how the release changes the build, "
    f"which commands to run, and why the old configuration stops working after the upgrade.</p>"
    for i in range(8)
)
SMALL_PAGE = f"""<!doctype html><html><head><title>Release notes | Example Site</title>
<meta name="author" content="Jane Doe">
<meta property="og:site_name" content="Example Site">
<meta property="article:published_time" content="2026-02-03T08:00:00+00:00">
</head><body><nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article><h1>Release notes</h1>{PARAGRAPHS}</article>
<footer>Copyright Example Site. All rights reserved. Subscribe to our newsletter.</footer>
</body></html>"""


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _page(shared_data: Path) -> tuple[bytes, str]:
    folder = shared_data / "articles"
    html = gzip.decompress((folder / "html" / f"{PAGE_ID}.html.gz").read_bytes())
    truth = json.loads((folder / "ground-truth.json").read_text())[PAGE_ID]["articleBody"]
    return html, truth


def _recall(extracted: str, truth: str) -> float:
    got = set(_words(extracted))
    wanted = _words(truth)
    return sum(w in got for w in wanted) / len(wanted)


def test_extract_article_from_benchmark_page(shared_data: Path) -> None:
    html, truth = _page(shared_data)
    article = extract_article(html, "https://www.wsj.com/articles/example")
    assert article is not None
    assert article.title
    assert _recall(article.text_markdown, truth) > 0.9
    first_sentence = " ".join(truth.split()[:12])
    assert first_sentence in " ".join(article.text_markdown.split())
    assert not article.text_markdown.startswith("---")  # no metadata header in the body


def test_extract_article_metadata() -> None:
    article = extract_article(SMALL_PAGE, "https://example.com/release")
    assert article is not None
    assert article.author == "Jane Doe"
    assert article.site_name == "Example Site"
    assert article.published == datetime(2026, 2, 3, tzinfo=UTC)
    assert "Paragraph 7 of the article" in article.text_markdown
    assert "All rights reserved" not in article.text_markdown
    assert "About" not in article.text_markdown


def test_extract_article_keeps_inline_code_blocks_and_numbered_steps() -> None:
    """trafilatura renders every <code> as <pre> and every list as <ul>: a word of code
    in a sentence must stay in its sentence, and numbered steps keep their numbers."""
    page = (
        "<html><head><title>Advisory</title></head><body><article><h1>Path traversal</h1>"
        "<p>tarsafe wraps the standard <code>tarfile</code> module to extract untrusted "
        "archives, and every release before 3.2.4 is affected by this bug.</p>"
        "<h2>Am I affected?</h2><p>You are if you call <code>tarsafe.extract_all()</code> "
        "on archives you did not create. Check the installed version:</p>"
        "<pre><code>python -m pip show tarsafe\npip-audit -r requirements.txt</code></pre>"
        "<h2>What to do</h2><ol><li>Upgrade: <code>pip install 'tarsafe&gt;=3.2.4'</code>."
        "</li><li>Or pass <code>follow_links=False</code> until you can upgrade.</li></ol>"
        "<p>The fix resolves each member's final path before it writes anything at all.</p>"
        "</article></body></html>"
    )
    article = extract_article(page, "https://example.com/advisory")
    assert article is not None
    text = article.text_markdown
    assert "wraps the standard `tarfile` module" in text
    assert "if you call `tarsafe.extract_all()` on archives" in text
    assert "```\npython -m pip show tarsafe\npip-audit -r requirements.txt\n```" in text
    assert text.count("```") == 2  # one block, nothing else fenced
    assert "1. Upgrade: `pip install 'tarsafe>=3.2.4'`." in text
    assert "2. Or pass `follow_links=False` until" in text


def test_links_wrapped_in_a_link_class_stay_in_their_sentence(shared_data: Path) -> None:
    # Trigger: a CBS Sports page (Zyte benchmark 08f79376...) wraps each link of its
    # text in <span class="link">, which trafilatura's precision mode drops: "has
    # reported that the NFL will fine Rudolph for his role" lost its middle.
    name = "08f793762792bd252c75fb57544cdf506ffcc04785136cb87503f02364b82b56"
    html = gzip.decompress((shared_data / "articles/html" / f"{name}.html.gz").read_bytes())
    article = extract_article(html, "https://www.cbssports.com/nfl/news/x/")
    assert article is not None
    text = re.sub(r"\]\([^)]*\)", "", article.text_markdown).replace("[", "")
    assert "has reported that the NFL will fine Rudolph for his role in the fight" in text
    assert "the NFL decided to move the teams' Week 13 rematch in Pittsburgh" in text
    menu = (
        "<html><body><article><p>" + "A sentence of the article body. " * 30 + "</p>"
        "<p>It cites <span class='link'><a href='https://e.com/s'>the study</a></span>.</p>"
        "</article><div class='link'><a href='/a'>Home</a> <a href='/b'>Sports</a></div>"
        "</body></html>"
    )
    kept = extract_article(menu, "https://e.com/p", mode="precision")
    assert kept is not None and "It cites [the study](https://e.com/s)." in kept.text_markdown
    assert "Sports" not in kept.text_markdown  # a class="link" block is still boilerplate


@pytest.mark.parametrize("html", ["", "<html><body></body></html>", b"\x00\x01\x02"])
def test_extract_article_gives_none_on_nothing(html: str | bytes) -> None:
    assert extract_article(html, None) is None


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with build_client(HTTP) as c:
        yield c


@pytest.mark.anyio
async def test_fetch_article_over_http(
    shared_data: Path, feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    html, truth = _page(shared_data)
    feed_server.route("/story", Reply.redirect(301, "/articles/story"))
    feed_server.route(
        "/articles/story", Reply(body=html, gzip=True, content_type="text/html; charset=utf-8")
    )
    article = await fetch_article(client, feed_server.url("/story"), http=HTTP)
    assert article is not None
    assert _recall(article.text_markdown, truth) > 0.9
    assert "text/html" in feed_server.requests_for("/articles/story")[0].headers["accept"]


@pytest.mark.anyio
async def test_fetch_article_errors(feed_server: FeedServer, client: httpx.AsyncClient) -> None:
    feed_server.route("/missing", Reply(status=404, content_type="text/html"))
    feed_server.route("/busy", Reply(status=503, content_type="text/html"))
    feed_server.route("/file.pdf", Reply(body=b"%PDF-1.4", content_type="application/pdf"))
    with pytest.raises(FetchError) as info:
        await fetch_article(client, feed_server.url("/missing"), http=HTTP)
    assert not info.value.transient and info.value.status == 404
    with pytest.raises(FetchError) as info:
        await fetch_article(client, feed_server.url("/busy"), http=HTTP)
    assert info.value.transient and info.value.cause == "HTTP 503"
    with pytest.raises(FetchError) as info:
        await fetch_article(client, feed_server.url("/file.pdf"), http=HTTP)
    assert not info.value.transient and info.value.cause == "not a web page"


@pytest.mark.anyio
async def test_with_full_text_replaces_teaser_or_falls_back(
    feed_server: FeedServer, client: httpx.AsyncClient
) -> None:
    feed_server.route("/post", Reply(body=SMALL_PAGE.encode(), content_type="text/html"))
    teaser = Item(
        source_kind="rss",
        source_id="http://e/feed",
        title="Release notes",
        text="A short teaser [...]",
        url=feed_server.url("/post"),
    )
    full = await with_full_text(client, teaser, http=HTTP)
    assert "Paragraph 7 of the article" in full.text
    assert full.summary == "A short teaser [...]"
    assert full.author == "Jane Doe" and full.site_name == "Example Site"
    assert full.extra["full_text"] == "fetched"

    broken = Item(
        source_kind="rss",
        source_id="http://e/feed",
        title="t",
        text="teaser",
        url=feed_server.url("/nowhere"),
    )
    kept = await with_full_text(client, broken, http=HTTP)
    assert kept.text == "teaser"
    assert str(kept.extra["full_text"]).startswith("failed: HTTP 404")
