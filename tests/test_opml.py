"""OPML import/export: nesting, categories, real-world sloppiness, hostile XML, round trip."""

from __future__ import annotations

import pytest

from signaldesk.sources.errors import OpmlError
from signaldesk.sources.opml import OpmlFeed, export_opml, parse_opml

READER_EXPORT = b"""<?xml version="1.0" encoding="UTF-8"?>
<opml version="1.0">
  <head><title>My subscriptions</title></head>
  <body>
    <outline text="Tech" title="Tech">
      <outline text="Security">
        <outline type="rss" text="Krebs" title="Krebs on Security"
                 xmlUrl="https://krebsonsecurity.com/feed/" htmlUrl="https://krebsonsecurity.com"/>
      </outline>
      <outline type="rss" text="LWN" xmlurl="https://lwn.net/headlines/rss"/>
    </outline>
    <outline type="rss" text="Top level" XMLURL="https://example.com/feed.xml"
             category="/News/World,/Other"/>
    <outline type="rss" text="Duplicate" xmlUrl="https://lwn.net/headlines/rss"/>
    <outline text="Empty folder"/>
    <outline type="rss" text="Blank url" xmlUrl="  "/>
  </body>
</opml>"""


def test_parse_nested_outlines_and_categories() -> None:
    feeds = parse_opml(READER_EXPORT)
    assert feeds == [
        OpmlFeed(
            url="https://krebsonsecurity.com/feed/",
            title="Krebs on Security",
            html_url="https://krebsonsecurity.com",
            category="Tech/Security",
        ),
        OpmlFeed(url="https://lwn.net/headlines/rss", title="LWN", category="Tech"),
        OpmlFeed(url="https://example.com/feed.xml", title="Top level", category="News/World"),
    ]


def test_tolerates_unescaped_ampersands() -> None:
    sloppy = (
        b'<opml version="2.0"><body><outline text="Q&A" '
        b'xmlUrl="https://example.com/feed?a=1&b=2"/></body></opml>'
    )
    feeds = parse_opml(sloppy)
    assert len(feeds) == 1
    assert feeds[0].url.startswith("https://example.com/feed?a=1")


def test_entities_are_not_expanded() -> None:
    laughs = b"""<?xml version="1.0"?>
<!DOCTYPE opml [
  <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
  <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
  <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
  <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
  <!ENTITY xxe SYSTEM "file:///etc/passwd">
]>
<opml version="2.0"><body>
  <outline text="&d;" xmlUrl="https://example.com/a"/>
  <outline text="&xxe;" xmlUrl="https://example.com/b"/>
</body></opml>"""
    feeds = parse_opml(laughs)
    assert [f.url for f in feeds] == ["https://example.com/a", "https://example.com/b"]
    for feed in feeds:
        assert feed.title is None or len(feed.title) < 100
        assert "root:" not in (feed.title or "")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not xml",
        b"<rss version='2.0'><channel/></rss>",
        b"<opml version='2.0'><head/></opml>",
    ],
    ids=["empty", "text", "rss", "no-body"],
)
def test_not_opml_raises(data: bytes) -> None:
    with pytest.raises(OpmlError):
        parse_opml(data)


def test_round_trip() -> None:
    feeds = [
        OpmlFeed(url="https://a.example/feed", title="A & B <news>", category="Tech/Security"),
        OpmlFeed(url="https://b.example/rss?x=1&y=2", html_url="https://b.example/"),
        OpmlFeed(url="https://c.example/atom", title="C", category="Tech"),
        OpmlFeed(url="https://d.example/feed.json", title="Ünïcödé", category="Tech/Security"),
    ]
    data = export_opml(feeds)
    assert data.startswith(b"<?xml version='1.0' encoding='UTF-8'?>")
    back = parse_opml(data)
    assert sorted(back, key=lambda f: f.url) == sorted(
        [f if f.title else OpmlFeed(url=f.url, title=f.url, html_url=f.html_url) for f in feeds],
        key=lambda f: f.url,
    )
    # Folders are shared, not repeated.
    assert data.count(b'text="Security"') == 1
