"""Feed parsing (sources.feed_parse) on the real-world and feedparser corpora, JSON Feed,
and the feed-content HTML -> markdown converter."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from signaldesk.items import Item
from signaldesk.sources.errors import FeedParseError
from signaldesk.sources.feed_parse import parse_feed
from signaldesk.sources.html_markdown import html_to_markdown, html_to_text

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "feeds"
RSS_PARSER = DATA / "rss-parser_tests"
FEEDPARSER = DATA / "feedparser_tests"
URL = "http://example.com/feed.xml"


def _files(folder: Path, pattern: str) -> list[Path]:
    return sorted(folder.glob(pattern)) if folder.is_dir() else []


def _header_content_type(data: bytes) -> str | None:
    """feedparser's test files simulate HTTP headers in their leading comment."""
    head = data[:1000].decode("latin-1")
    match = re.search(r"^Header:\s*Content-type:\s*(.+?)\s*$", head, re.MULTILINE | re.IGNORECASE)
    return match.group(1) if match else None


def _check_items(items: tuple[Item, ...]) -> None:
    for item in items:
        assert item.source_kind == "rss"
        assert item.source_id == URL
        assert item.title
        assert item.guid
        assert item.published is None or item.published.tzinfo is not None


RSS_PARSER_INPUTS = _files(RSS_PARSER / "input", "*")


@pytest.mark.parametrize("path", RSS_PARSER_INPUTS, ids=lambda p: p.name)
def test_real_world_feeds_parse(shared_data: Path, path: Path) -> None:
    data = path.read_bytes()
    if path.name == "unrecognized.rss":  # an HTML "document moved" page: must fail clearly
        with pytest.raises(FeedParseError, match="not a readable feed"):
            parse_feed(data, url=URL)
        return
    parsed = parse_feed(data, url=URL)
    # incomplete-fields.atom holds one entry with nothing in it, missing-fields.atom one
    # with only an id (no title, text or link): nothing to make an item of.
    assert parsed.items or path.name in {"incomplete-fields.atom", "missing-fields.atom"}
    _check_items(parsed.items)


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


@pytest.mark.parametrize(
    "name", ["guardian", "heise", "reddit", "feedburner", "rss-1", "craigslist", "narro"]
)
def test_matches_rss_parser_expected_output(shared_data: Path, name: str) -> None:
    source = next((RSS_PARSER / "input").glob(f"{name}.*"))
    expected = json.loads((RSS_PARSER / "expected_output" / f"{name}.json").read_text())["feed"]
    parsed = parse_feed(source.read_bytes(), url=URL)
    assert len(parsed.items) == len(expected["items"])
    assert [i.url for i in parsed.items] == [e.get("link") for e in expected["items"]]
    # rss-parser leaves entities and tags in titles (craigslist's "&#x0024;", "<sup>");
    # compare the visible text.
    assert [_norm(i.title) for i in parsed.items] == [
        _norm(html_to_text(e.get("title") or "")) for e in expected["items"]
    ]
    assert _norm(parsed.title) == _norm(expected.get("title"))


WELLFORMED = [
    p
    for folder in ("rss", "atom10", "rdf", "itunes", "media-rss", "cdf")
    for p in _files(FEEDPARSER / "wellformed" / folder, "*.xml")
]


@pytest.mark.parametrize("path", WELLFORMED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_feedparser_wellformed_files_parse(shared_data: Path, path: Path) -> None:
    data = path.read_bytes()
    parsed = parse_feed(data, url=URL, content_type=_header_content_type(data))
    _check_items(parsed.items)


ILLFORMED_AND_ENCODING = [
    *_files(FEEDPARSER / "illformed", "**/*.xml"),
    *_files(FEEDPARSER / "encoding", "*.xml"),
]


@pytest.mark.parametrize("path", ILLFORMED_AND_ENCODING, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_feedparser_illformed_and_encoding_files_never_crash(shared_data: Path, path: Path) -> None:
    data = path.read_bytes()
    try:
        parsed = parse_feed(data, url=URL, content_type=_header_content_type(data))
    except FeedParseError as exc:
        assert "not a readable feed" in exc.message
        return
    _check_items(parsed.items)


ENCODING_EXPECTATIONS = [
    (p, m.group(1))
    for p in _files(FEEDPARSER / "encoding", "http_*.xml")
    if (m := re.search(r"Expect:\s*not bozo and encoding == '([^']+)'", p.read_text("latin-1")))
]


@pytest.mark.parametrize(
    ("path", "encoding"), ENCODING_EXPECTATIONS, ids=lambda v: getattr(v, "name", v)
)
def test_http_charset_reaches_the_parser(shared_data: Path, path: Path, encoding: str) -> None:
    # The Content-Type charset must win over the XML declaration, per feedparser's rules.
    data = path.read_bytes()
    content_type = _header_content_type(data)
    assert content_type is not None
    try:
        parsed = parse_feed(data, url=URL, content_type=content_type)
    except FeedParseError:
        pytest.fail(f"{path.name} should parse (expected encoding {encoding})")
    assert (parsed.encoding or "").lower() == encoding.lower()


def test_header_charset_disagreeing_with_declaration() -> None:
    # Latin-1 bytes under a declaration that claims UTF-8: the HTTP charset is right.
    body = (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>'
        "<title>Caf\u00e9 na\u00efve</title><item><title>Cr\u00e8me br\u00fbl\u00e9e</title>"
        "<link>http://e/1</link></item></channel></rss>"
    ).encode("latin-1")
    parsed = parse_feed(body, url=URL, content_type="application/rss+xml; charset=iso-8859-1")
    assert parsed.encoding == "iso-8859-1"
    assert parsed.warning is None
    assert parsed.title == "Caf\u00e9 na\u00efve"
    assert parsed.items[0].title == "Cr\u00e8me br\u00fbl\u00e9e"
    # Without the header the declaration is wrong and the parser says so (bozo warning).
    assert parse_feed(body, url=URL).warning


def test_entry_fields_map_onto_item() -> None:
    body = b"""<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"
     xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel><title>Example Blog</title><link>http://example.com/</link><ttl>90</ttl>
<item>
  <title>Release 2.0 &amp; more</title>
  <link>http://example.com/posts/2</link>
  <guid isPermaLink="false">post-2</guid>
  <pubDate>Tue, 03 Mar 2026 10:00:00 +0100</pubDate>
  <dc:creator>Ada Lovelace</dc:creator>
  <category>python</category><category>release</category>
  <description>Short teaser.</description>
  <content:encoded><![CDATA[<h2>What's new</h2><p>Body with <a href="/docs">docs</a>.</p>
  <ul><li>one</li><li>two</li></ul>]]></content:encoded>
</item>
<item><title>No guid</title><link>http://example.com/posts/1</link></item>
<item><title>Neither guid nor link</title><pubDate>Mon, 02 Mar 2026 10:00:00 GMT</pubDate></item>
</channel></rss>"""
    parsed = parse_feed(body, url=URL, content_type="application/rss+xml")
    assert parsed.title == "Example Blog"
    assert parsed.ttl_seconds == 90 * 60
    first, second, third = parsed.items
    assert first.title == "Release 2.0 & more"
    assert first.guid == "post-2"
    assert first.url == "http://example.com/posts/2"
    assert first.published == datetime(2026, 3, 3, 9, 0, tzinfo=UTC)
    assert first.author == "Ada Lovelace"
    assert first.tags == ("python", "release")
    assert first.site_name == "Example Blog"
    assert first.summary == "Short teaser."
    assert first.text.startswith("## What's new")
    assert "[docs](http://example.com/docs)" in first.text
    assert "- one\n- two" in first.text
    assert second.guid == "http://example.com/posts/1"
    assert third.guid is not None and third.guid.startswith("sha256:")
    assert parse_feed(body, url=URL).items[2].guid == third.guid  # stable


def test_bozo_feed_with_entries_is_a_warning() -> None:
    body = b"""<rss version="2.0"><channel><title>Broken</title>
<item><title>Tom & Jerry</title><link>http://e/1</link></item>
<item><title>Two</title><link>http://e/2</link></item></channel>"""
    parsed = parse_feed(body, url=URL, content_type="application/rss+xml")
    assert parsed.warning
    assert [i.url for i in parsed.items] == ["http://e/1", "http://e/2"]


@pytest.mark.parametrize(
    "body",
    [b"", b"<html><body><p>Hello</p></body></html>", b"not xml at all", b"{}"],
    ids=["empty", "html", "text", "json"],
)
def test_not_a_feed_raises(body: bytes) -> None:
    with pytest.raises(FeedParseError):
        parse_feed(body, url=URL)


def test_body_naming_a_local_file_is_not_read(tmp_path: Path) -> None:
    # feedparser.parse(bytes) would try the bytes as a file name: a hostile server could
    # make us read local files into the vault.
    secret = tmp_path / "secret.xml"
    secret.write_bytes(b'<rss version="2.0"><channel><title>SECRET</title></channel></rss>')
    with pytest.raises(FeedParseError):
        parse_feed(str(secret).encode(), url=URL)


def test_rss_labelled_as_json_is_still_read() -> None:
    body = (
        b'<rss version="2.0"><channel><title>T</title><item><title>x</title></item></channel></rss>'
    )
    assert parse_feed(body, url=URL, content_type="application/json").title == "T"


def test_json_feed() -> None:
    doc = {
        "version": "https://jsonfeed.org/version/1.1",
        "title": "JSON Blog",
        "home_page_url": "https://example.org/",
        "authors": [{"name": "Feed Author"}],
        "items": [
            {
                "id": "2",
                "url": "https://example.org/2",
                "title": "Second",
                "content_html": "<p>Hello <strong>world</strong></p>",
                "summary": "Hi",
                "date_published": "2026-02-01T10:00:00Z",
                "tags": ["a", "b"],
                "authors": [{"name": "Grace"}],
            },
            {
                "id": 1,
                "content_text": "A title-less micro post about things",
                "url": "https://example.org/1",
            },
        ],
    }
    parsed = parse_feed(json.dumps(doc).encode(), url=URL, content_type="application/feed+json")
    assert parsed.title == "JSON Blog"
    assert parsed.version == "json1.1"
    first, second = parsed.items
    assert first.guid == "2" and first.url == "https://example.org/2"
    assert first.text == "Hello **world**"
    assert first.summary == "Hi"
    assert first.published == datetime(2026, 2, 1, 10, 0, tzinfo=UTC)
    assert first.tags == ("a", "b")
    assert first.author == "Grace"
    assert first.site_name == "JSON Blog"
    assert second.guid == "1"
    assert second.author == "Feed Author"
    assert second.title.startswith("A title-less micro post")
    # Sniffed without a JSON content type, too (servers often say text/plain).
    assert parse_feed(json.dumps(doc).encode(), url=URL, content_type="text/plain").items


def test_json_that_is_not_a_json_feed() -> None:
    with pytest.raises(FeedParseError, match="not a JSON Feed"):
        parse_feed(b'{"version": "2", "items": []}', url=URL, content_type="application/json")


# -- HTML -> markdown ---------------------------------------------------------------


def test_markdown_structure() -> None:
    html = """<h1>Title</h1>
    <p>Some <em>emphasis</em>, <b>bold</b> and <code>x_y</code>.<br>Next line</p>
    <blockquote><p>Quoted</p></blockquote>
    <ol><li>first</li><li>second <ul><li>nested</li></ul></li></ol>
    <pre><code class="language-python">def f():\n    return 1</code></pre>
    <table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>
    <p><img src="/pic.png" alt="A pic"><img src="http://t/p.gif" width="1" height="1"></p>
    <script>alert(1)</script><p>2 * 3 = 6</p>"""
    md = html_to_markdown(html, base_url="http://example.com/post")
    assert md.splitlines()[0] == "# Title"
    assert "Some *emphasis*, **bold** and `x_y`.\nNext line" in md
    assert "> Quoted" in md
    assert "1. first\n2. second\n   - nested" in md
    assert "```python\ndef f():\n    return 1\n```" in md
    assert "| a | b |\n| --- | --- |\n| 1 | 2 |" in md
    assert "![A pic](http://example.com/pic.png)" in md
    assert "t/p.gif" not in md  # tracking pixel dropped
    assert "alert" not in md
    assert "2 \\* 3 = 6" in md


def test_markdown_of_plain_text_and_entities() -> None:
    assert html_to_markdown("") == ""
    assert html_to_markdown("Just text &amp; more") == "Just text & more"
    assert html_to_text("<p>Tom &amp; <b>Jerry</b></p>") == "Tom & Jerry"


def test_markdown_link_forms() -> None:
    md = html_to_markdown(
        '<p><a href="http://a.example/x">http://a.example/x</a> '
        '<a href="http://b.example/(y)">why</a> <a href="#top">top</a></p>'
    )
    assert md == "<http://a.example/x> [why](<http://b.example/(y)>) top"


def test_plain_text_titles_keep_their_angle_brackets() -> None:
    # Trigger: an RSS title "Caf&#233; &lt;script&gt; tags &#x2014; a guide" came out as
    # "Café": feedparser hands plain text over decoded, and reading it as HTML again
    # dropped the "element" and everything after it.
    rss = b"""<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0"><channel><title>Web &lt;dev&gt; notes</title><link>http://example.com/</link>
<description>d</description>
<item><title>Caf&#233; &lt;script&gt; tags &#x2014; a guide</title>
<link>http://example.com/1</link><description>x</description></item>
<item><title>Rust&amp;#8217;s &lt;b&gt;async&lt;/b&gt; traits &amp;amp; you</title>
<link>http://example.com/2</link><description>y</description></item>
</channel></rss>"""
    parsed = parse_feed(rss, url="http://example.com/feed.xml")
    assert [i.title for i in parsed.items] == [
        "Café <script> tags — a guide",
        "Rust\u2019s async traits & you",  # escaped HTML is still HTML
    ]
    atom = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom</title><id>urn:a</id>
<updated>2026-11-30T10:00:00Z</updated>
<entry><title type="text">The &lt;dialog&gt; element,   explained</title>
<link href="http://example.com/d"/><id>urn:a:1</id><updated>2026-11-30T10:00:00Z</updated>
<summary type="text">Use &lt;dialog open&gt; for a modal.</summary></entry>
<entry><title type="html">Styling &lt;code&gt;::backdrop&lt;/code&gt;</title>
<link href="http://example.com/b"/><id>urn:a:2</id><updated>2026-11-30T10:00:00Z</updated>
<summary>s</summary></entry>
</feed>"""
    items = parse_feed(atom, url="http://example.com/atom.xml").items
    assert [i.title for i in items] == ["The <dialog> element, explained", "Styling ::backdrop"]
    assert items[0].summary == "Use <dialog open> for a modal."


def test_an_entry_id_is_not_taken_for_its_link() -> None:
    # Trigger: entries without a <link> were filed with `source: urn:uuid:6f1c...`
    # (feedparser hands the id over as the link), and their "page" was fetched.
    rss = b"""<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0"><channel><title>Releases</title><link>http://example.com/</link>
<description>d</description>
<item><title>Release 2.2</title><guid>urn:uuid:6f1c2b1e-2.2</guid>
<description>a</description></item>
<item><title>Release 2.3</title><guid isPermaLink="true">https://example.com/r/2.3</guid>
<description>b</description></item>
<item><title>Release 2.4</title><guid>tag:example.com,2026:2.4</guid>
<link>https://example.com/r/2.4</link><description>c</description></item>
</channel></rss>"""
    items = parse_feed(rss, url="http://example.com/feed.xml").items
    assert [(i.url, i.guid) for i in items] == [
        (None, "urn:uuid:6f1c2b1e-2.2"),
        ("https://example.com/r/2.3", "https://example.com/r/2.3"),
        ("https://example.com/r/2.4", "tag:example.com,2026:2.4"),
    ]
