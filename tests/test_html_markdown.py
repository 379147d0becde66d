"""The one HTML -> markdown converter: what both profiles keep, and where they differ."""

from __future__ import annotations

import pytest

from signaldesk.sources.html_markdown import FEED, MAIL, HtmlProfile, html_to_markdown


@pytest.mark.parametrize("profile", [FEED, MAIL], ids=lambda p: p.name)
def test_pre_with_br_keeps_its_lines(profile: HtmlProfile) -> None:
    html = (
        "<pre><span>// Subtract discount</span><br />price = n * p;<br />"
        "    total = price - 1;</pre>"
    )
    md = html_to_markdown(html, profile=profile)
    assert md == "```\n// Subtract discount\nprice = n * p;\n    total = price - 1;\n```"


def test_pre_inside_a_span_inside_a_list_stays_a_code_block() -> None:
    # Pasted Google Docs markup: the table of code sits inside nested <span>s in an <li>.
    html = (
        "<ul><li><span><span>Introduce a variable.</span><table><tr><td><pre>a = 1<br />"
        "b = 2</pre></td><td><pre>c = 3<br />d = 4</pre></td></tr></table></span></li></ul>"
    )
    md = html_to_markdown(html, profile=FEED)
    assert md == (
        "- Introduce a variable.\n  ```\n  a = 1\n  b = 2\n  ```\n  ```\n  c = 3\n  d = 4\n  ```"
    )


@pytest.mark.parametrize("profile", [FEED, MAIL], ids=lambda p: p.name)
def test_links_keep_the_spaces_around_them(profile: HtmlProfile) -> None:
    # Blogger's feed export drops the newline between a word and a link.
    html = (
        '<p>Recent <a href="https://a.example/s">stories</a>confirm that errors like'
        '<a href="https://a.example/b">buffer overflow</a> and<a href="https://a.example/u">'
        'use-after-free</a>, a <a href="https://a.example/20">20%</a>share; we '
        '<a href="https://a.example/x">announced</a><a href="https://a.example/o">OSS-Fuzz</a>.</p>'
    )
    md = html_to_markdown(html, profile=profile)
    assert md == (
        "Recent [stories](https://a.example/s) confirm that errors like "
        "[buffer overflow](https://a.example/b) and [use-after-free](https://a.example/u), "
        "a [20%](https://a.example/20) share; we [announced](https://a.example/x) "
        "[OSS-Fuzz](https://a.example/o)."
    )


def test_links_in_cjk_text_are_not_spaced_out() -> None:
    md = html_to_markdown('<p>点击<a href="https://a.example/c">这里</a>查看</p>')
    assert md == "点击[这里](https://a.example/c)查看"


def test_a_link_inside_a_word_keeps_its_punctuation_neighbours() -> None:
    md = html_to_markdown(
        '<p>(<a href="https://a.example/r">Reuters</a>), "<a href="https://a.example/q">quoted</a>".</p>'
    )
    assert md == '([Reuters](https://a.example/r)), "[quoted](https://a.example/q)".'


def test_font_size_lines_are_headings_and_do_not_run_into_the_text() -> None:
    html = (
        "After <b>November 2016</b>, releases need Java 7.<br /><br /> "
        '<font size="4">Why this change is happening</font><br />The primary reasons are:'
        '<p style="font-size: 22px">Styled as a heading</p><span style="font-size:13pt">'
        "small text stays text</span>"
    )
    md = html_to_markdown(html, profile=FEED)
    assert md.split("\n\n") == [
        "After **November 2016**, releases need Java 7.",
        "### Why this change is happening",
        "The primary reasons are:",
        "## Styled as a heading",
        "small text stays text",
    ]


def test_headings_lose_wrapping_bold_and_keep_links() -> None:
    md = html_to_markdown(
        '<h2><b>Bold title</b></h2><a href="https://a.example/p"><h3>Card title</h3></a>'
    )
    assert md == "## Bold title\n\n### [Card title](https://a.example/p)"


def test_nested_tables_are_not_duplicated() -> None:
    html = (
        "<table><tr><td>outer cell</td><td><table><tr><td>inner a</td><td>inner b</td></tr>"
        "<tr><td>inner c</td><td>inner d</td></tr></table></td></tr></table>"
    )
    for profile in (FEED, MAIL):
        md = html_to_markdown(html, profile=profile)
        for text in ("outer cell", "inner a", "inner b", "inner c", "inner d"):
            assert md.count(text) == 1, (profile.name, md)


def test_data_tables_stay_tables_in_feeds_and_unwrap_in_mail() -> None:
    html = "<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2 | 3</td></tr></table>"
    assert html_to_markdown(html, profile=FEED) == "| a | b |\n| --- | --- |\n| 1 | 2 \\| 3 |"
    assert html_to_markdown(html, profile=MAIL) == "a\n\nb\n\n1\n\n2 | 3"
    # In mail only a header row of <th> cells marks a table as data (layout tables have none).
    headed = html.replace("<td>a</td><td>b</td>", "<th>a</th><th>b</th>")
    assert html_to_markdown(headed, profile=MAIL) == "| a | b |\n| --- | --- |\n| 1 | 2 \\| 3 |"


@pytest.mark.parametrize("profile", [FEED, MAIL], ids=lambda p: p.name)
def test_hidden_preheaders_and_pixels_are_dropped(profile: HtmlProfile) -> None:
    html = (
        '<span class="mcnPreviewText" style="display:none; font-size:0px">Preheader text</span>'
        '<div hidden>also hidden</div><p>Visible <img src="https://t.example/o.gif" width="1" '
        'height="1"></p>'
    )
    assert html_to_markdown(html, profile=profile) == "Visible"


def test_profiles_differ_on_images_and_tracking() -> None:
    html = (
        '<p><a href="https://a.example/p?utm_source=x&id=2">post</a> '
        '<img src="https://a.example/i.png"> <img src="https://a.example/j.png" alt="chart"></p>'
    )
    assert html_to_markdown(html, profile=FEED) == (
        "[post](https://a.example/p?utm_source=x&id=2) ![](https://a.example/i.png) "
        "![chart](https://a.example/j.png)"
    )
    assert html_to_markdown(html, profile=MAIL) == (
        "[post](https://a.example/p?id=2) ![chart](https://a.example/j.png)"
    )


def test_text_that_reads_as_markup_is_escaped() -> None:
    md = html_to_markdown("<p>1. not a list</p><p># not a heading</p><p>a * b &lt;div&gt;</p>")
    assert md == "1\\. not a list\n\n\\# not a heading\n\na \\* b \\<div>"


def test_hostile_input_does_not_raise() -> None:
    deep = "<div>" * 50_000 + "deep text" + "</div>" * 50_000
    assert "deep text" in html_to_markdown(deep)
    assert "deep" in html_to_markdown("<pre>" + "<span>" * 5_000 + "deep" + "</pre>")
    assert html_to_markdown("text with a NUL \x00 and \ud800 a surrogate") != ""


def test_line_breaks_in_a_table_cell_are_kept() -> None:
    # Trigger: the Google Ads Developer Blog's table (rss-parser's feedburner.atom) has
    # cells of two lines, "<b>Text ads</b>: ...<br /><br /><b>Lightbox ads</b>: ...";
    # the note ran them into one line.
    html = (
        "<table><tr><th>Field</th><th>v201509</th></tr>"
        "<tr><td><code>Clicks</code></td><td><b>Text ads</b>: clickthrough<br /><br />"
        "<b>Lightbox ads</b>: hover<br></td></tr>"
        "<tr><td>a | b</td><td><a href='http://e.com/x'>one<br>two</a></td></tr></table>"
    )
    assert html_to_markdown(html, profile=FEED).splitlines() == [
        "| Field | v201509 |",
        "| --- | --- |",
        "| `Clicks` | **Text ads**: clickthrough<br>**Lightbox ads**: hover |",
        "| a \\| b | [one two](http://e.com/x) |",  # a link stays on one line
    ]


def test_an_image_is_set_apart_from_words_not_from_punctuation() -> None:
    # Trigger: a feed entry's "and <img alt='Latency chart'>." was filed as
    # "and ![Latency chart](...) .", a stray full stop after every inline image.
    src = "http://e.com/chart.png"
    cases = {
        f"<p>See <img src='{src}' alt='Latency chart'>.</p>": f"See ![Latency chart]({src}).",
        f"<p>See<img src='{src}' alt='x'>and</p>": f"See ![x]({src}) and",
        f"<p>(<img src='{src}' alt='x'>)</p>": f"(![x]({src}))",
        f"<p><img src='{src}' alt='a'><img src='{src}' alt='b'></p>": f"![a]({src}) ![b]({src})",
    }
    for html, markdown in cases.items():
        assert html_to_markdown(html, profile=FEED) == markdown, html
