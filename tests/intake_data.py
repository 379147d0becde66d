"""Real-shaped intake inputs for tests and the intake bench: generated RSS feeds whose
entries link to article pages on the local :class:`~tests.feedserver.FeedServer`,
conditional GET (ETag / 304) included, plus a clipping and a newsletter .eml of a page.

Article texts are random sequences from a fixed vocabulary, seeded per article, so
every article is distinct to simhash while runs are reproducible.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from html import escape
from pathlib import Path

from tests.feedserver import FeedServer, RecordedRequest, Reply

__all__ = [
    "FeedSet",
    "article_html",
    "article_text",
    "clipping_note",
    "newsletter_eml",
    "rss_document",
    "serve_feeds",
]

_VOCAB = [
    "system",
    "latency",
    "cache",
    "index",
    "query",
    "vector",
    "token",
    "model",
    "kernel",
    "thread",
    "async",
    "stream",
    "buffer",
    "pipeline",
    "schema",
    "ledger",
    "backoff",
    "retry",
    "socket",
    "server",
    "client",
    "request",
    "response",
    "header",
    "parser",
    "compiler",
    "runtime",
    "memory",
    "allocation",
    "garbage",
    "collector",
    "process",
    "signal",
    "handler",
    "timeout",
    "deadline",
    "scheduler",
    "worker",
    "queue",
    "batch",
    "shard",
    "replica",
    "consensus",
    "leader",
    "follower",
    "snapshot",
    "checkpoint",
    "journal",
    "commit",
    "rollback",
    "transaction",
    "isolation",
    "lock",
    "mutex",
    "semaphore",
    "barrier",
    "channel",
    "actor",
    "message",
    "event",
    "callback",
    "future",
    "promise",
    "coroutine",
    "generator",
    "iterator",
    "closure",
    "lambda",
    "function",
    "module",
    "package",
    "library",
    "framework",
    "plugin",
    "extension",
    "interface",
    "protocol",
    "adapter",
    "facade",
    "proxy",
    "gateway",
    "router",
    "balancer",
    "firewall",
    "certificate",
    "encryption",
    "signature",
    "hash",
    "digest",
    "entropy",
    "random",
    "benchmark",
    "profile",
    "trace",
    "metric",
    "counter",
    "gauge",
    "histogram",
    "alert",
    "incident",
    "outage",
    "recovery",
    "backup",
    "archive",
    "storage",
    "volume",
    "block",
    "page",
    "file",
    "directory",
    "inode",
    "mount",
    "network",
    "packet",
    "frame",
    "route",
]

_EPOCH = datetime(2026, 11, 1, tzinfo=UTC)


def article_text(seed: int, paragraphs: int = 6, words: int = 60) -> str:
    """A distinct, reproducible article body: ``paragraphs`` paragraphs of ``words`` words."""
    rng = random.Random(seed)
    paras = []
    for _ in range(paragraphs):
        sentence = " ".join(rng.choice(_VOCAB) for _ in range(words))
        paras.append(sentence[0].upper() + sentence[1:] + ".")
    return "\n\n".join(paras)


def article_html(title: str, body: str) -> bytes:
    """A plain article page trafilatura can extract."""
    paras = "".join(f"<p>{escape(p)}</p>\n" for p in body.split("\n\n"))
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><meta property='og:site_name' content='Local Bench'>"
        "</head><body><nav><a href='/'>Home</a> <a href='/about'>About</a></nav>"
        f"<article><h1>{escape(title)}</h1>{paras}</article>"
        "<footer>Copyright Local Bench. All rights reserved.</footer></body></html>"
    ).encode()


@dataclass(frozen=True, slots=True)
class Entry:
    guid: str
    title: str
    link: str
    description: str
    published: datetime


def rss_document(title: str, link: str, entries: list[Entry]) -> bytes:
    """An RSS 2.0 document."""
    items = "".join(
        "<item>"
        f"<title>{escape(e.title)}</title><link>{escape(e.link)}</link>"
        f"<guid isPermaLink='false'>{escape(e.guid)}</guid>"
        f"<pubDate>{format_datetime(e.published)}</pubDate>"
        f"<description>{escape(e.description)}</description>"
        "</item>"
        for e in entries
    )
    return (
        "<?xml version='1.0' encoding='utf-8'?><rss version='2.0'><channel>"
        f"<title>{escape(title)}</title><link>{escape(link)}</link>"
        f"<description>generated</description>{items}</channel></rss>"
    ).encode()


@dataclass(frozen=True, slots=True)
class FeedSet:
    """Feeds served by a FeedServer: their URLs and every entry GUID they hold."""

    urls: tuple[str, ...]
    guids: frozenset[str]
    article_paths: tuple[str, ...]


def serve_feeds(
    server: FeedServer,
    feeds: int,
    entries: int,
    *,
    teaser_every: int = 0,
    prefix: str = "",
) -> FeedSet:
    """Serve ``feeds`` RSS feeds of ``entries`` entries each, with ETag/304 support.

    Every entry links to its own article page on the server; every ``teaser_every``-th
    entry (0: none) carries only a teaser in the feed, so intake fetches its page.
    """
    urls: list[str] = []
    guids: set[str] = set()
    article_paths: list[str] = []

    def entry_of(f: int, e: int) -> Entry:
        seed = f * 100_000 + e
        path = f"/{prefix}articles/{f}/{e}"
        body = article_text(seed)
        teaser = teaser_every and e % teaser_every == 0
        return Entry(
            guid=f"urn:signaldesk-test:{prefix}{f}:{e}",
            title=f"Feed {f} entry {e}: {body.split()[0]} {body.split()[1]}",
            link=server.url(path),
            description=(body.split("\n\n")[0][:160] + " …") if teaser else body,
            published=_EPOCH + timedelta(hours=f + e),
        )

    @functools.cache
    def feed_body(f: int) -> bytes:
        return rss_document(
            f"Feed {f}", server.url(f"/{prefix}site/{f}"), [entry_of(f, e) for e in range(entries)]
        )

    def feed_route(f: int) -> object:
        etag = f'"feed-{prefix}{f}-v1"'

        def handler(request: RecordedRequest) -> Reply:
            if request.headers.get("if-none-match") == etag:
                return Reply(status=304, headers={"ETag": etag}, content_type=None)
            return Reply(
                body=feed_body(f), headers={"ETag": etag}, content_type="application/rss+xml"
            )

        return handler

    def article_route(f: int, e: int) -> object:
        def handler(request: RecordedRequest) -> Reply:
            entry = entry_of(f, e)
            return Reply(
                body=article_html(entry.title, article_text(f * 100_000 + e)),
                content_type="text/html; charset=utf-8",
            )

        return handler

    for f in range(feeds):
        path = f"/{prefix}feeds/{f}.xml"
        server.route(path, feed_route(f))  # type: ignore[arg-type]
        urls.append(server.url(path))
        for e in range(entries):
            guids.add(f"urn:signaldesk-test:{prefix}{f}:{e}")
            if teaser_every and e % teaser_every == 0:
                apath = f"/{prefix}articles/{f}/{e}"
                server.route(apath, article_route(f, e))  # type: ignore[arg-type]
                article_paths.append(apath)
    return FeedSet(tuple(urls), frozenset(guids), tuple(article_paths))


def clipping_note(folder: Path, name: str, *, title: str, source: str, body: str) -> Path:
    """A Web Clipper note (its frontmatter shape) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(
        "---\n"
        f'title: "{title}"\n'
        f'source: "{source}"\n'
        'author:\n  - "[[Ada Writer]]"\n'
        "published: 2026-11-20\n"
        "created: 2026-11-21\n"
        'description: "A clipped article."\n'
        "tags:\n  - clippings\n"
        "---\n\n" + body + "\n",
        encoding="utf-8",
    )
    return path


def newsletter_eml(folder: Path, name: str, *, subject: str, view_online: str, body: str) -> Path:
    """A newsletter .eml (List-Unsubscribe, List-Id, HTML with a "view online" link)."""
    folder.mkdir(parents=True, exist_ok=True)
    msg = EmailMessage()
    msg["From"] = "Weekly Digest <digest@news.example.org>"
    msg["To"] = "reader@example.net"
    msg["Subject"] = subject
    msg["Date"] = format_datetime(_EPOCH)
    msg["Message-ID"] = make_msgid(domain="news.example.org")
    msg["List-Id"] = "Weekly Digest <digest.news.example.org>"
    msg["List-Unsubscribe"] = "<https://news.example.org/unsubscribe?u=1>"
    paras = "".join(f"<p>{escape(p)}</p>" for p in body.split("\n\n"))
    msg.set_content("View this email in your browser: " + view_online + "\n\n" + body)
    msg.add_alternative(
        "<html><body>"
        f"<p><a href='{escape(view_online)}'>View this email in your browser</a></p>"
        f"<h1>{escape(subject)}</h1>{paras}"
        "<p><a href='https://news.example.org/unsubscribe?u=1'>Unsubscribe</a></p>"
        "</body></html>",
        subtype="html",
    )
    path = folder / name
    path.write_bytes(bytes(msg))
    return path
