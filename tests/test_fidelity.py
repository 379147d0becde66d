"""Filed notes keep what the source had, on real material (``bench.fidelity`` has the figures).

Over every entry of the shared feeds, every shared article page and every shared mail:
code blocks keep their lines, links keep the spaces around them, headings stay
headings, and no text comes out twice. The checks read the source on their own
(:func:`bench.fidelity.check`), not through the converter.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.fidelity import (
    Fragment,
    Tally,
    article_fragments,
    check,
    feed_fragments,
    mail_fragments,
)
from signaldesk.sources.fulltext import extract_article
from signaldesk.sources.html_markdown import FEED, html_to_markdown
from signaldesk.sources.newsletter import parse_email


def _assert_faithful(tally: Tally, *, headings: bool = True) -> None:
    detail = "\n".join(tally.examples)
    assert tally.fragments > 0
    assert tally.pre_kept == tally.pre, detail
    assert tally.glued == 0, detail
    if headings:
        assert tally.headings_kept == tally.headings, detail
    assert tally.duplicated == 0, detail
    assert tally.tables_kept == tally.tables, detail
    assert tally.inline_kept == tally.inline, detail


def test_inline_code_made_a_block_is_counted() -> None:
    fragment = Fragment("x", "<p>It wraps the standard <code>tarfile</code> module.</p>")
    inline = check(fragment, "It wraps the standard `tarfile` module.")
    block = check(fragment, "It wraps the standard\n\n```\ntarfile\n```\n\nmodule.")
    assert (inline.inline, inline.inline_kept) == (1, 1)
    assert (block.inline, block.inline_kept) == (1, 0) and "made a block" in block.examples[0]


def test_feed_content_is_faithful(shared_data: Path) -> None:
    tally = Tally()
    for fragment in feed_fragments(shared_data):
        tally.add(
            check(
                fragment, html_to_markdown(fragment.html, base_url=fragment.base_url, profile=FEED)
            )
        )
    assert tally.pre >= 19 and tally.links > 1000 and tally.headings >= 80
    _assert_faithful(tally)


@pytest.mark.slow
@pytest.mark.timeout(600)  # 181 pages through trafilatura, one at a time
def test_article_pages_are_faithful(shared_data: Path) -> None:
    tally = Tally()
    for fragment, page in article_fragments(shared_data):
        article = extract_article(page, fragment.base_url)
        tally.add(check(fragment, article.text_markdown if article else "", page))
    assert tally.fragments == 181 and tally.headings >= 370
    _assert_faithful(tally)


def test_mail_is_faithful(shared_data: Path) -> None:
    tally = Tally()
    for fragment, raw in mail_fragments(shared_data):
        item = parse_email(raw, accept_all=True)
        tally.add(check(fragment, item.text if item else ""))
    # Headings inside an unsubscribe footer go with the footer, on purpose; and mail
    # tables are layout, unwrapped by design: only code, links and duplication count.
    detail = "\n".join(tally.examples)
    assert tally.glued == 0 and tally.duplicated == 0 and tally.pre_kept == tally.pre, detail
