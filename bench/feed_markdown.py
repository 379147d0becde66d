"""Feed-content HTML -> markdown: our lxml converter against trafilatura on fragments.

``python -m bench.feed_markdown`` converts the content of every entry of the real-world
feeds in ``shared/data/feeds/rss-parser_tests/input`` both ways and prints:

- word recall: share of the fragment's visible words kept (multiset, ``\\w+`` tokens);
- empty: fragments with text that came back empty;
- links, list items, headings kept: share of the fragment's ``<a href>``, ``<li>`` and
  ``<h1-6>`` that appear as markdown links, list lines and heading lines;
- orphan lines: lines that start with ``,.;:)`` (inline markup split onto its own line).
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import feedparser
import lxml.html
import trafilatura

from signaldesk.sources.html_markdown import FEED, html_to_markdown

__all__ = ["main"]

_DATA = (
    Path(__file__).resolve().parent.parent.parent
    / "shared"
    / "data"
    / "feeds"
    / "rss-parser_tests"
    / "input"
)
_WORD = re.compile(r"\w+")


def _fragments(folder: Path) -> list[str]:
    out: list[str] = []
    for path in sorted(folder.iterdir()):
        parsed = feedparser.parse(
            path.read_bytes(), response_headers={"content-type": "application/xml"}
        )
        for entry in parsed.entries:
            contents = [c.get("value", "") for c in entry.get("content", [])]
            html = max(contents, key=len) if contents else entry.get("summary", "")
            if html and "<" in html:
                out.append(html)
    return out


def _trafilatura(html: str) -> str:
    return (
        trafilatura.extract(
            html,
            output_format="markdown",
            include_formatting=True,
            include_links=True,
            include_images=True,
            include_tables=True,
            include_comments=False,
        )
        or ""
    )


def _ours(html: str) -> str:
    return html_to_markdown(html, profile=FEED)


def _visible_words(html: str) -> Counter[str]:
    try:
        root = lxml.html.fragment_fromstring(html, create_parent="div")
    except Exception:
        return Counter()
    for bad in list(root.iter("script", "style")):
        bad.drop_tree()
    return Counter(w.lower() for w in _WORD.findall(root.text_content()))


def _measure(name: str, convert: Callable[[str], str], fragments: list[str]) -> str:
    kept = total = empty = orphans = 0
    links = [0, 0]
    items = [0, 0]
    heads = [0, 0]
    started = time.perf_counter()
    outputs = [convert(html) for html in fragments]
    elapsed = time.perf_counter() - started
    for html, md in zip(fragments, outputs, strict=True):
        want = _visible_words(html)
        got = Counter(w.lower() for w in _WORD.findall(md))
        total += sum(want.values())
        kept += sum((want & got).values())
        if want and not md.strip():
            empty += 1
        lowered = html.lower()
        links[0] += len(re.findall(r"<a\s[^>]*href=", lowered))
        links[1] += len(re.findall(r"(?<!!)\[[^\]]*\]\(", md))  # not images
        items[0] += lowered.count("<li")
        items[1] += len(re.findall(r"^\s*(?:[-*]|\d+\.)\s", md, re.MULTILINE))
        heads[0] += len(re.findall(r"<h[1-6][\s>]", lowered))
        heads[1] += len(re.findall(r"^#{1,6}\s", md, re.MULTILINE))
        orphans += len(re.findall(r"^[,.;:)]", md, re.MULTILINE))

    def share(pair: list[int]) -> str:
        return f"{pair[1] / pair[0]:.2f}" if pair[0] else "-"

    return (
        f"{name:12} recall={kept / total:.3f} empty={empty} links={share(links)} "
        f"list_items={share(items)} headings={share(heads)} orphan_lines={orphans} "
        f"({len(fragments) / elapsed:.0f} fragments/s)"
    )


def main() -> int:
    fragments = _fragments(_DATA)
    sys.stdout.write(f"{len(fragments)} HTML fragments from {_DATA}\n")
    sys.stdout.write(_measure("lxml (ours)", _ours, fragments) + "\n")
    sys.stdout.write(_measure("trafilatura", _trafilatura, fragments) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
