"""Build the local page cache the triage bench reads: ``python -m bench.triage.build_cache``.

``repo`` items: the markdown source at the recorded commit of a public repository (a local
mirror of it, ``--mirrors``, one ``owner+name/repo`` git directory each) rendered to the
HTML page its site serves (title, author and date in the page metadata, the body in an
``<article>`` between navigation and footer), so that the bench extracts it with trafilatura
like any fetched page. ``pages`` items: the stored copy of the page's beginning
(``pages.json`` in the cache folder: ``{url: {"title": ..., "text": ...}}``) rendered the
same way, one paragraph per line of the stored text (:func:`render_stored`). Nothing here
is committed; ``--record`` writes each page's sha256 into ``labels.jsonl`` so a later run can
tell that its cache holds the same pages (a row recorded from the first rendering, text as
markdown, is re-recorded when its text matches that one).
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml
from markdown_it import MarkdownIt

from bench.triage.corpus import LABELS, cache_dir, page_path
from bench.triage.source_formats import (
    field_table,
    franklin_header,
    loose_fields,
    pep_fields,
    rst_to_markdown,
    split_header,
    vulnerability_page,
)

_DEFAULT_MIRRORS = Path("/work/.mirror")
_FRONT = re.compile(r"\A(?:---\n(.*?)\n---|\+\+\+\n(.*?)\n\+\+\+)\n", re.S)
_TOML_BLOCK = re.compile(r"\A```toml\n(.*?)\n```\n", re.S)
_H1 = re.compile(r"^#\s+(.+)$", re.M)
# Title forms of sources with no ATX "# " heading: a setext heading ("Title" over "====="),
# a Writerside title comment ("[//]: # (title: ...)"), or a lower heading as the first line
# (a MkDocs page whose first line is "### Title"). Each is read only at the file's start.
_LEADING_TITLE = re.compile(
    r"\A\s*(?:(?P<setext>[^\n#].*)\n=+[ \t]*\n|\[//\]: # \(title: (?P<ws>.+)\)[ \t]*\n"
    r"|#{2,6}\s+(?P<atx>.+)\n)"
)
_MDX_IMPORT = re.compile(r"^(?:import|export)\s.+$", re.M)
_TOC_MARKER = re.compile(r"^\[TOC\]$", re.M)


def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def _split_front(text: str) -> tuple[dict[str, Any], str]:
    match = _FRONT.match(text)
    if not match:
        franklin = franklin_header(text)  # a Franklin.jl page's "@def title = ..." lines
        if franklin is not None:
            return franklin
        header = split_header(text)  # a Pelican post's "Title: ..." lines
        return header if header is not None else ({}, text)
    raw_yaml, raw_toml = match.groups()
    try:
        meta = yaml.safe_load(raw_yaml) if raw_yaml is not None else tomllib.loads(raw_toml)
    except (yaml.YAMLError, tomllib.TOMLDecodeError):
        # e.g. an unquoted "title: A: B", which Jekyll and Pelican sites accept
        meta = loose_fields(raw_yaml) if raw_yaml is not None else {}
    meta = meta if isinstance(meta, dict) else {}
    for key in ("Title", "Date", "Author"):  # Hugo accepts capitalised keys (Falco's blog)
        if key in meta and key.lower() not in meta:
            meta[key.lower()] = meta[key]
    return meta, text[match.end() :]


def _advisory_fields(raw: str) -> str:
    """An advisory's TOML header as the fields its web page lists: RustSec's (``package``
    and ``versions`` under the advisory) or the Haskell HSEC database's (an ``[[affected]]``
    list, each package with its own CVSS and ``introduced`` / ``fixed`` ranges)."""
    data = tomllib.loads(raw)
    adv = data.get("advisory", {})
    # RustSec's [affected] is a table of functions, not this list: only HSEC's is read here.
    affected = data.get("affected") if isinstance(data.get("affected"), list) else []
    ranges = [v for a in affected for v in a.get("versions", [])]
    return field_table(
        [
            ("ID", adv.get("id")),
            ("Package", adv.get("package") or ", ".join(str(a["package"]) for a in affected)),
            ("Date", adv.get("date")),
            ("URL", adv.get("url")),
            ("CVSS", adv.get("cvss") or ", ".join(str(a["cvss"]) for a in affected if "cvss" in a)),
            ("Categories", ", ".join(adv.get("categories", []))),
            ("Aliases", ", ".join(adv.get("aliases", []))),
            ("Informational", adv.get("informational")),
            ("Introduced", ", ".join(str(v["introduced"]) for v in ranges if "introduced" in v)),
            (
                "Patched",
                ", ".join(data.get("versions", {}).get("patched", []))
                or ", ".join(f">= {v['fixed']}" for v in ranges if "fixed" in v),
            ),
            ("Unaffected", ", ".join(data.get("versions", {}).get("unaffected", []))),
        ]
    )


def _authors(meta: dict[str, Any]) -> str | None:
    value = meta.get("author") or meta.get("authors")
    if isinstance(value, list):
        names = [str(v.get("name", v)) if isinstance(v, dict) else str(v) for v in value]
        return ", ".join(names) or None
    if isinstance(value, dict):
        return str(value.get("name") or "") or None
    return str(value) if value else None


def _source(text: str, source_path: str) -> tuple[dict[str, Any], str, str]:
    """The page metadata, a header of fields (or ``""``) and the markdown body of a source
    file, by its format: a YAML vulnerability record, a PEP in reStructuredText, or
    markdown (front matter in YAML, TOML or Pelican style; a RustSec TOML block)."""
    if source_path.endswith((".yaml", ".yml")):
        title, header, body, meta = vulnerability_page(text)
        return {**meta, "title": title}, header, body
    if source_path.endswith(".rst"):
        found = split_header(text)
        pep, body = found if found is not None else ({}, text)
        meta = {"title": pep.get("title"), "author": pep.get("author"), "date": pep.get("created")}
        return meta, pep_fields(pep) if pep else "", rst_to_markdown(body)
    meta, body = _split_front(text)
    header = ""
    toml = _TOML_BLOCK.match(body)
    if toml:
        header = _advisory_fields(toml.group(1))
        body = body[toml.end() :]
    return meta, header, _TOC_MARKER.sub("", _MDX_IMPORT.sub("", body))


def render_page(
    markdown_text: str,
    *,
    url: str,
    site: str,
    default_author: str | None = None,
    source_path: str = "",
    default_title: str = "",
) -> tuple[bytes, str]:
    """The page HTML for one source file (markdown unless ``source_path`` says otherwise),
    and its title (``default_title`` when the source names none, as a README may not)."""
    meta, header, body = _source(markdown_text, source_path)
    title = str(meta.get("title") or "")
    h1 = _H1.search(body)
    leading = _LEADING_TITLE.match(body) if not title and not h1 else None
    if leading:
        title = next(t for t in leading.group("setext", "ws", "atx") if t).strip()
        body = body[leading.end() :]
    if not title and h1:
        title = h1.group(1).strip().strip("`")
    title = title or default_title
    if h1 and h1.group(1).strip().strip("`") == title:
        body = body[: h1.start()] + body[h1.end() :]
    author = _authors(meta) or default_author
    date = meta.get("date") or meta.get("published")
    head = [
        '<meta charset="utf-8">',
        f"<title>{html.escape(title)} | {html.escape(site)}</title>",
        f'<meta property="og:title" content="{html.escape(title)}">',
        f'<meta property="og:site_name" content="{html.escape(site)}">',
        f'<link rel="canonical" href="{html.escape(url)}">',
    ]
    if author:
        head.append(f'<meta name="author" content="{html.escape(author)}">')
    if date:
        head.append(f'<meta property="article:published_time" content="{html.escape(str(date))}">')
    page = (
        "<!doctype html><html lang='en'><head>"
        + "".join(head)
        + "</head><body><header><nav><a href='/'>Home</a> <a href='/blog'>Blog</a> "
        "<a href='/about'>About</a></nav></header><main><article>"
        f"<h1>{html.escape(title)}</h1>{header}{_markdown().render(body)}"
        f"</article></main><footer><p>{html.escape(site)}</p></footer></body></html>"
    )
    return page.encode("utf-8"), title


def render_stored(title: str, text: str, *, url: str, site: str) -> tuple[bytes, str]:
    """The page of a stored copy (its text, one block of the page per line): each line its
    own paragraph, as the page had it, and a run of table rows kept one table.

    Why not the text as markdown: markdown joins consecutive lines into one paragraph, so
    a command or a line of JSON on its own line became part of the sentences around it,
    which no reader of the page (the curator included) saw.
    """
    lines = [line.rstrip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if out and not (line.startswith("|") and out[-1].startswith("|")):
            out.append("")
        out.append(line)
    return render_page(f"# {title}\n\n" + "\n".join(out), url=url, site=site)


def _git_show(mirrors: Path, repo: str, commit: str, path: str) -> str:
    git_dir = mirrors / repo.replace("/", "+") / "repo"
    return subprocess.run(
        ["git", "-C", str(git_dir), "show", f"{commit}:{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _stored_pages() -> dict[str, tuple[str, str]]:
    source = cache_dir() / "pages.json"
    if not source.is_file():
        return {}
    data: dict[str, dict[str, str]] = json.loads(source.read_text(encoding="utf-8"))
    return {url: (page["title"], page["text"]) for url, page in data.items()}


_DEFAULT_AUTHORS = {"simonw/til": "Simon Willison"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.triage.build_cache")
    parser.add_argument("--mirrors", type=Path, default=_DEFAULT_MIRRORS)
    parser.add_argument("--record", action="store_true", help="write sha256 and title to labels")
    args = parser.parse_args(argv)
    rows = [json.loads(x) for x in LABELS.read_text(encoding="utf-8").splitlines() if x]
    stored = _stored_pages()
    built = missing = 0
    for row in rows:
        if row["source"] not in ("repo", "pages"):
            continue
        try:
            if row["source"] == "repo":
                ref = row["ref"]
                text = _git_show(args.mirrors, ref["repo"], ref["commit"], ref["path"])
                data, title = render_page(
                    text,
                    url=row["url"],
                    site=row["site"],
                    default_author=_DEFAULT_AUTHORS.get(ref["repo"]),
                    source_path=ref["path"],
                    default_title=ref["repo"],
                )
            else:
                found = stored.get(row["ref"]["url"])
                if found is None:
                    raise FileNotFoundError(row["ref"]["url"])
                title, body = found
                data, title = render_stored(title, body, url=row["url"], site=row["site"])
                if args.record and hashlib.sha256(data).hexdigest() != row.get("sha256"):
                    # Recorded from the first rendering: the same text if that one matches.
                    first, _ = render_page(f"# {title}\n\n{body}", url=row["url"], site=row["site"])
                    if hashlib.sha256(first).hexdigest() != row.get("sha256"):
                        raise ValueError(f"{row['id']}: the stored text is not the labelled one")
        except (OSError, ValueError, subprocess.CalledProcessError) as exc:
            print(f"missing {row['id']}: {exc}", file=sys.stderr)
            missing += 1
            continue
        path = page_path(row["id"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        built += 1
        if args.record:
            row["sha256"] = hashlib.sha256(data).hexdigest()
            row["title"] = title
    if args.record:
        LABELS.write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
        )
    print(f"built {built} pages in {cache_dir() / 'pages'} ({missing} missing)")
    return 0 if not missing else 1


if __name__ == "__main__":
    sys.exit(main())
