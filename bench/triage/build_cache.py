"""Build the local page cache the triage bench reads: ``python -m bench.triage.build_cache``.

``repo`` items: the markdown source at the recorded commit of a public repository (a local
mirror of it, ``--mirrors``, one ``owner+name/repo`` git directory each) rendered to the
HTML page its site serves (title, author and date in the page metadata, the body in an
``<article>`` between navigation and footer), so that the bench extracts it with trafilatura
like any fetched page. ``pages`` items: the stored copy of the page's beginning
(``pages.json`` in the cache folder: ``{url: {"title": ..., "text": ...}}``) rendered the
same way. Nothing here is committed; ``--record`` writes each page's sha256 into
``labels.jsonl`` so a later run can tell that its cache holds the same pages.
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

_DEFAULT_MIRRORS = Path("/work/.mirror")
_FRONT = re.compile(r"\A(?:---\n(.*?)\n---|\+\+\+\n(.*?)\n\+\+\+)\n", re.S)
_TOML_BLOCK = re.compile(r"\A```toml\n(.*?)\n```\n", re.S)
_H1 = re.compile(r"^#\s+(.+)$", re.M)
_MDX_IMPORT = re.compile(r"^(?:import|export)\s.+$", re.M)


def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def _split_front(text: str) -> tuple[dict[str, Any], str]:
    match = _FRONT.match(text)
    if not match:
        return {}, text
    raw_yaml, raw_toml = match.groups()
    try:
        meta = yaml.safe_load(raw_yaml) if raw_yaml is not None else tomllib.loads(raw_toml)
    except (yaml.YAMLError, tomllib.TOMLDecodeError):
        meta = {}
    return (meta if isinstance(meta, dict) else {}), text[match.end() :]


def _advisory_fields(raw: str) -> str:
    """A RustSec advisory's TOML header as the fields its web page lists."""
    data = tomllib.loads(raw)
    adv = data.get("advisory", {})
    rows = [
        ("ID", adv.get("id")),
        ("Package", adv.get("package")),
        ("Date", adv.get("date")),
        ("URL", adv.get("url")),
        ("CVSS", adv.get("cvss")),
        ("Categories", ", ".join(adv.get("categories", []))),
        ("Aliases", ", ".join(adv.get("aliases", []))),
        ("Informational", adv.get("informational")),
        ("Patched", ", ".join(data.get("versions", {}).get("patched", []))),
        ("Unaffected", ", ".join(data.get("versions", {}).get("unaffected", []))),
    ]
    cells = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows if v
    )
    return f"<table>{cells}</table>"


def _authors(meta: dict[str, Any]) -> str | None:
    value = meta.get("author") or meta.get("authors")
    if isinstance(value, list):
        names = [str(v.get("name", v)) if isinstance(v, dict) else str(v) for v in value]
        return ", ".join(names) or None
    if isinstance(value, dict):
        return str(value.get("name") or "") or None
    return str(value) if value else None


def render_page(
    markdown_text: str, *, url: str, site: str, default_author: str | None = None
) -> tuple[bytes, str]:
    """The page HTML for one markdown source, and its title."""
    meta, body = _split_front(markdown_text)
    header = ""
    toml = _TOML_BLOCK.match(body)
    if toml:
        header = _advisory_fields(toml.group(1))
        body = body[toml.end() :]
    body = _MDX_IMPORT.sub("", body)
    title = str(meta.get("title") or "")
    h1 = _H1.search(body)
    if not title and h1:
        title = h1.group(1).strip().strip("`")
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
                )
            else:
                found = stored.get(row["ref"]["url"])
                if found is None:
                    raise FileNotFoundError(row["ref"]["url"])
                title, body = found
                data, title = render_page(f"# {title}\n\n{body}", url=row["url"], site=row["site"])
        except (OSError, subprocess.CalledProcessError) as exc:
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
