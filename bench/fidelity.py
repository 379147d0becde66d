"""Fidelity of filed notes to their source HTML: ``python -m bench.fidelity``.

What a note keeps of the HTML it came from, measured on real material in
``shared/data`` (``--shared`` points elsewhere):

- ``feeds``: the HTML content of every entry of the shared feeds (rss-parser's real
  feeds and feedparser's well-formed corpus), converted as intake converts it;
- ``articles``: the 181 article pages; the source is the main content trafilatura
  finds (its HTML output), the result is what full-text intake stores;
- ``mails``: the HTML bodies of the shared mails, converted as a newsletter is;
- ``pages``: the triage set's pages in its local cache (``bench/triage``; project docs,
  posts and release notes, rich in code), extracted as the articles are; skipped when the
  cache is not built.

Per corpus, on each half of a fixed split (a file or page is held out when the first
byte of the SHA-256 of its name is odd; decide everything on ``tuning``, report
``held-out``):

- ``code``: ``<pre>`` blocks of two or more lines whose every line comes out as its
  own line of a fenced code block;
- ``glued``: markdown links glued to a letter or digit on either side
  (``like[buffer overflow](…)``), per 100 links;
- ``headings``: ``<h1>``-``<h6>`` whose text comes out as a markdown heading line;
- ``lists``: list-item lines out per ``<li>`` in;
- ``inline``: one-line ``<code>`` (``kbd``, ``samp``, ``tt``) in running text of the page
  (a paragraph, list item, cell or heading), among those the note keeps, that stay inline
  code spans rather than becoming a code block; for articles read from the whole page,
  since trafilatura's HTML output renders every ``<code>`` as ``<pre>``;
- ``tables``: data tables (two or more columns and rows, no table, code block, list
  or heading inside) that come out as pipe tables;
- ``duplicated``: 8-word shingles that occur more often in the note than in the
  source's visible text, per 1,000 shingles of the note;
- ``recall``: share of the source's visible words kept.

The checks read the source with lxml on their own (``<br>`` as a line break), never
through the converter under test. ``tests/test_fidelity.py`` asserts the same checks.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import feedparser
import lxml.html
import trafilatura

__all__ = [
    "Fragment",
    "Tally",
    "article_fragments",
    "check",
    "feed_fragments",
    "held_out",
    "mail_fragments",
    "main",
]

_DEFAULT_SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
_WORD = re.compile(r"\w+")
_LINK = re.compile(r"(?<!!)\[((?:\\.|[^\[\]\\]|\[[^\]]*\])*)\]\((?:<[^>]*>|[^)\s]*)\)")
_IMAGE = re.compile(r"!\[[^\]]*\]\((?:<[^>]*>|[^)\s]*)\)")
_LINK_MD = r"(?<!!)\[(?:\\.|[^\[\]\\]|\[[^\]]*\])+\]\((?:<[^>]*>|[^)\s]*)\)"
_LETTER = r"[^\W_](?<![\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])"
# A link glued to a letter or digit before or after it, or to the next link.
_GLUED = re.compile(rf"{_LETTER}{_LINK_MD}|{_LINK_MD}(?:{_LETTER}|{_LINK_MD})")
_SKIP = ("script", "style", "noscript", "template", "head", "title", "svg", "iframe", "object")


def held_out(name: str) -> bool:
    """The fixed split: held out when the first byte of sha256(name) is odd."""
    return hashlib.sha256(name.encode("utf-8")).digest()[0] % 2 == 1


@dataclass(frozen=True, slots=True)
class Fragment:
    """One piece of source HTML, what it came from, and how to convert it."""

    name: str  # the file or page it came from (decides the split)
    html: str
    base_url: str | None = None


@dataclass
class Tally:
    """Sums over fragments (see the module docstring for each figure)."""

    fragments: int = 0
    pre: int = 0
    pre_kept: int = 0
    links: int = 0
    glued: int = 0
    headings: int = 0
    headings_kept: int = 0
    li: int = 0
    li_out: int = 0
    inline: int = 0
    inline_kept: int = 0
    tables: int = 0
    tables_kept: int = 0
    shingles: int = 0
    duplicated: int = 0
    words: int = 0
    words_kept: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in [
            "fragments",
            "pre",
            "pre_kept",
            "links",
            "glued",
            "headings",
            "headings_kept",
            "li",
            "li_out",
            "inline",
            "inline_kept",
            "tables",
            "tables_kept",
            "shingles",
            "duplicated",
            "words",
            "words_kept",
        ]:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.examples += other.examples[: max(0, 5 - len(self.examples))]

    def line(self) -> str:
        def ratio(a: int, b: int, scale: float = 1.0, digits: int = 3) -> str:
            return f"{scale * a / b:.{digits}f}" if b else "-"

        return (
            f"fragments={self.fragments} code={self.pre_kept}/{self.pre} "
            f"glued/100links={ratio(self.glued, self.links, 100, 2)} "
            f"headings={self.headings_kept}/{self.headings} "
            f"lists={ratio(self.li_out, self.li)} inline={self.inline_kept}/{self.inline} "
            f"tables={self.tables_kept}/{self.tables} "
            f"duplicated/1000={ratio(self.duplicated, self.shingles, 1000, 2)} "
            f"recall={ratio(self.words_kept, self.words)}"
        )


# -- reading the source on its own ------------------------------------------------------


def _tree(html: str) -> lxml.html.HtmlElement | None:
    html = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", "", html)
    html = re.sub(r"^\s*<\?xml[^>]*>", "", html)
    if not html.strip():
        return None
    try:
        root = lxml.html.document_fromstring(
            f"<html><body>{html}</body></html>" if "<body" not in html.lower() else html,
            parser=lxml.html.HTMLParser(huge_tree=True, remove_comments=True),
        )
    except Exception:
        return None
    for bad in list(root.iter(*_SKIP)):
        if bad.getparent() is not None:
            bad.drop_tree()
    for el in list(root.iter()):
        style = (el.get("style") or "").replace(" ", "").lower() if isinstance(el.tag, str) else ""
        if "display:none" in style and el.getparent() is not None:
            el.drop_tree()
    return root


_BLOCK_TAGS = [
    "p",
    "div",
    "li",
    "td",
    "th",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "blockquote",
    "table",
    "ul",
    "ol",
    "dt",
    "dd",
    "hr",
    "section",
    "article",
]


def _text_with_breaks(el: lxml.html.HtmlElement) -> str:
    """Visible text with ``<br>`` as a line break and a break after every block."""
    copy = lxml.html.fromstring(lxml.html.tostring(el, with_tail=False))
    for br in copy.iter("br"):
        br.tail = "\n" + (br.tail or "")
    for block in copy.iter(*_BLOCK_TAGS):
        if block is not copy:
            block.tail = "\n" + (block.tail or "")
    # Links apart from their neighbours, so "Omar<a>Hillicon</a>" splits into words the
    # way the note shows them (the duplication check compares words, not spacing).
    for link in copy.iter("a"):
        if link is not copy:
            link.text = " " + (link.text or "")
            link.tail = " " + (link.tail or "")
    return str(copy.text_content())


def _norm(text: str) -> str:
    return " ".join(text.split())


_ITEM_NUMBER = re.compile(r"^(\s*)\d+[.)]\s", re.MULTILINE)


def _plain(markdown: str) -> str:
    text = _IMAGE.sub(" ", markdown)
    text = _LINK.sub(r"\1", text)
    return re.sub(r"https?://\S+", " ", text)


def _shingles(text: str, n: int = 8) -> Counter[tuple[str, ...]]:
    tokens = [t.lower() for t in _WORD.findall(text)]
    return Counter(tuple(tokens[i : i + n]) for i in range(max(0, len(tokens) - n + 1)))


def _fences(markdown: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in markdown.splitlines():
        if re.match(r"^\s*(```|~~~)", line):
            if current is None:
                current = []
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current.append(_norm(line))
    return blocks


_RUNNING = frozenset(
    {"p", "li", "td", "th", "dd", "dt", "a", "em", "strong", "b", "i", "span", "h1", "h2", "h3"}
    | {"h4", "h5", "h6"}
)


def _inline_code(root: lxml.html.HtmlElement) -> list[str]:
    """The one-line code spans of ``root``'s running text (none inside a ``<pre>``)."""
    spans = []
    for el in root.iter("code", "kbd", "samp", "tt"):
        parent = el.getparent()
        text = str(el.text_content())
        if parent is None or parent.tag not in _RUNNING or "\n" in text.strip():
            continue
        if (
            next(el.iterancestors("pre", "code", "kbd", "samp", "tt"), None) is None
            and text.strip()
        ):
            spans.append(_norm(text))
    return spans


def check(fragment: Fragment, markdown: str, page: bytes | None = None) -> Tally:
    """Measure one conversion against its source (``page``: the whole page it was
    extracted from, for what the extracted source no longer shows)."""
    tally = Tally(fragments=1)
    root = _tree(fragment.html)
    if root is None:
        return tally
    fences = [[ln for ln in block if ln] for block in _fences(markdown)]
    fenced = {ln for block in fences for ln in block}
    flat = _norm(markdown)
    page_root = _tree(page.decode("utf-8", "replace")) if page is not None else root
    for text in _inline_code(page_root) if page_root is not None else []:
        if re.search(rf"(?<!`)(`{re.escape(text)}`|`` {re.escape(text)} ``)(?!`)", flat):
            tally.inline += 1
            tally.inline_kept += 1
        elif text in fenced:
            tally.inline += 1
            if len(tally.examples) < 5:
                tally.examples.append(f"{fragment.name}: inline code made a block: {text[:40]!r}")
    for pre in root.iter("pre"):
        lines = [_norm(ln) for ln in _text_with_breaks(pre).split("\n") if ln.strip()]
        if len(lines) < 2:
            continue
        tally.pre += 1
        if any(all(ln in block for ln in lines) for block in fences):
            tally.pre_kept += 1
        elif len(tally.examples) < 5:
            tally.examples.append(f"{fragment.name}: code lost its lines: {lines[:2]}")
    out_links = len(_LINK.findall(markdown))
    tally.links = out_links
    glued = _GLUED.findall(markdown)
    tally.glued = len(glued)
    if glued and len(tally.examples) < 5:
        tally.examples.append(f"{fragment.name}: glued link {glued[0][:60]!r}")

    def squeeze(text: str) -> str:  # headings compared without spaces, escapes or code marks
        return re.sub(r"[\s\\`]+", "", text).lower()

    heading_lines = {
        squeeze(_plain(m.group(1))) for m in re.finditer(r"^#{1,6}\s+(.+)$", markdown, re.MULTILINE)
    }
    for h in root.iter("h1", "h2", "h3", "h4", "h5", "h6"):
        text = _norm(_text_with_breaks(h))
        if not text or not _WORD.search(text):
            continue
        tally.headings += 1
        if squeeze(text) in heading_lines:
            tally.headings_kept += 1
        elif len(tally.examples) < 5:
            tally.examples.append(f"{fragment.name}: heading not a heading: {text[:60]!r}")
    tally.li = sum(1 for li in root.iter("li") if _norm(li.text_content()))
    tally.li_out = len(re.findall(r"^\s*(?:[-*+]|\d+[.)])\s+\S", markdown, re.MULTILINE))
    for table in root.iter("table"):
        rows = [tr for tr in table.iter("tr") if _owner(tr) is table]
        widths = [
            sum(1 for c in tr if isinstance(c.tag, str) and c.tag in ("td", "th")) for tr in rows
        ]
        nested = any(t is not table for t in table.iter("table"))
        # A cell holding code, a list or a heading cannot live in a pipe table.
        rich = next(table.iterdescendants("pre", "ul", "ol", "h1", "h2", "h3", "h4"), None)
        if nested or rich is not None or len(rows) < 2 or max(widths, default=0) < 2:
            continue
        if not any(_norm(c.text_content()) for tr in rows for c in tr if isinstance(c.tag, str)):
            continue
        tally.tables += 1
        if re.search(r"^\|(\s*:?-{3,}:?\s*\|)+\s*$", markdown, re.MULTILINE):
            tally.tables_kept += 1
    source_text = " ".join(_text_with_breaks(root).split())
    want = _shingles(source_text)
    # An ordered item's number is the list's markup, not text the source showed.
    shown = _plain(_ITEM_NUMBER.sub(r"\1", markdown))
    got = _shingles(shown)
    tally.shingles = sum(got.values())
    extra = {k: n - want[k] for k, n in got.items() if k in want and n > want[k]}
    tally.duplicated = sum(extra.values())
    if extra and len(tally.examples) < 5:
        tally.examples.append(f"{fragment.name}: repeated {' '.join(next(iter(extra)))!r}")
    want_words = Counter(w.lower() for w in _WORD.findall(source_text))
    got_words = Counter(w.lower() for w in _WORD.findall(shown))
    tally.words = sum(want_words.values())
    tally.words_kept = sum((want_words & got_words).values())
    return tally


def _owner(tr: lxml.html.HtmlElement) -> lxml.html.HtmlElement | None:
    for ancestor in tr.iterancestors("table"):
        return ancestor
    return None


# -- the corpora ------------------------------------------------------------------------


def feed_fragments(shared: Path) -> Iterator[Fragment]:
    """Every entry's richest HTML (content, else summary) in the shared feeds."""
    folders = [shared / "feeds" / "rss-parser_tests" / "input"]
    folders += sorted((shared / "feeds" / "feedparser_tests" / "wellformed").glob("*"))
    for folder in folders:
        for path in sorted(p for p in folder.iterdir() if p.is_file()):
            parsed = feedparser.parse(
                path.read_bytes(), response_headers={"content-type": "application/xml"}
            )
            for entry in parsed.entries:
                contents = [
                    c.get("value", "")
                    for c in entry.get("content", [])
                    if c.get("type", "text/html") != "text/plain"
                ]
                html = max(contents, key=len) if contents else entry.get("summary", "")
                if html and "<" in html:
                    yield Fragment(path.name, html, entry.get("link") or None)


def article_fragments(shared: Path) -> Iterator[tuple[Fragment, bytes]]:
    """``(main content as trafilatura sees it, the whole page)`` for each article page."""
    folder = shared / "articles"
    truth = json.loads((folder / "ground-truth.json").read_text(encoding="utf-8"))
    for page_id in sorted(truth):
        page = gzip.decompress((folder / "html" / f"{page_id}.html.gz").read_bytes())
        url = truth[page_id].get("url")
        main_html = _main_content(page, url)
        if main_html:
            yield Fragment(page_id, main_html, url), page


def _main_content(page: bytes, url: str | None) -> str | None:
    result: str | None = trafilatura.extract(
        page,
        url=url,
        output_format="html",
        include_comments=False,
        include_formatting=True,
        include_links=True,
        include_tables=True,
        include_images=False,
        favor_precision=True,
    )
    return result


def page_fragments() -> Iterator[tuple[Fragment, bytes]]:
    """``(main content as trafilatura sees it, the whole page)`` for each page of the
    triage set's local cache."""
    from bench.triage.corpus import cache_dir

    urls = {}
    labels = Path(__file__).resolve().parent / "triage" / "labels.jsonl"
    for line in labels.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        urls[row["id"]] = row.get("url")
    for path in sorted((cache_dir() / "pages").glob("*.html")):
        page = path.read_bytes()
        main_html = _main_content(page, urls.get(path.stem))
        if main_html:
            yield Fragment(path.stem, main_html, urls.get(path.stem)), page


def mail_fragments(shared: Path) -> Iterator[tuple[Fragment, bytes]]:
    """``(HTML body, the raw mail)`` of each shared mail that has an HTML body."""
    from signaldesk.sources.email_parse import find_bodies, read_message

    for path in sorted((shared / "emails" / "mails").glob("*.eml")):
        raw = path.read_bytes()
        html, _ = find_bodies(read_message(raw))
        if html:
            yield Fragment(path.name, html), raw


# -- the conversions under test -----------------------------------------------------------


def _convert_feed() -> Callable[[Fragment], str]:
    from signaldesk.sources.html_markdown import FEED, html_to_markdown

    return lambda f: html_to_markdown(f.html, base_url=f.base_url, profile=FEED)


def _convert_article(page: bytes, fragment: Fragment) -> str:
    from signaldesk.sources.fulltext import extract_article

    article = extract_article(page, fragment.base_url)
    return article.text_markdown if article else ""


def _convert_mail(raw: bytes) -> str:
    from signaldesk.sources.newsletter import parse_email

    item = parse_email(raw, accept_all=True)
    return item.text if item else ""


def run(shared: Path, corpora: list[str]) -> dict[str, dict[str, Tally]]:
    """Every corpus, split into its two halves."""
    out: dict[str, dict[str, Tally]] = {}
    if "feeds" in corpora:
        convert = _convert_feed()
        halves = {"tuning": Tally(), "held-out": Tally()}
        for fragment in feed_fragments(shared):
            halves["held-out" if held_out(fragment.name) else "tuning"].add(
                check(fragment, convert(fragment))
            )
        out["feeds"] = halves
    if "articles" in corpora:
        halves = {"tuning": Tally(), "held-out": Tally()}
        for fragment, page in article_fragments(shared):
            halves["held-out" if held_out(fragment.name) else "tuning"].add(
                check(fragment, _convert_article(page, fragment), page)
            )
        out["articles"] = halves
    if "pages" in corpora:
        halves = {"tuning": Tally(), "held-out": Tally()}
        for fragment, page in page_fragments():
            halves["held-out" if held_out(fragment.name) else "tuning"].add(
                check(fragment, _convert_article(page, fragment), page)
            )
        out["pages"] = halves
    if "mails" in corpora:
        halves = {"tuning": Tally(), "held-out": Tally()}
        for fragment, raw in mail_fragments(shared):
            halves["held-out" if held_out(fragment.name) else "tuning"].add(
                check(fragment, _convert_mail(raw))
            )
        out["mails"] = halves
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.fidelity", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--shared", type=Path, default=_DEFAULT_SHARED)
    parser.add_argument(
        "--corpus",
        action="append",
        choices=["feeds", "articles", "mails", "pages"],
        help="repeatable",
    )
    parser.add_argument("--examples", action="store_true", help="print a few failures each")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = run(args.shared, args.corpus or ["feeds", "articles", "mails", "pages"])
    for corpus, halves in results.items():
        for half, tally in halves.items():
            sys.stdout.write(f"{corpus:9} {half:9} {tally.line()}\n")
            if args.examples:
                for example in tally.examples:
                    sys.stdout.write(f"    {example}\n")
    sys.stdout.write(f"({time.perf_counter() - started:.1f} s; python -m bench.fidelity)\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
