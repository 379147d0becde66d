"""Source formats of the fresh set's repositories that are not plain markdown with YAML or TOML
front matter, turned into what :func:`bench.triage.build_cache.render_page` renders.

- a Pelican-style header (``Title: ...`` lines, then a blank line) on a markdown post
  (This Week in Rust);
- reStructuredText with an RFC 822 preamble (the PEPs): a small conversion to markdown that
  keeps the text, headings, lists and literal blocks, which is all the bench reads of a page;
- vulnerability records in YAML (the Go vulnerability database's reports, OSV records of the
  PyPI advisory database): the fields their web pages list, then the description.

Only the fresh set's items use these paths; the first set's pages render as before.
"""

from __future__ import annotations

import html
import re
from typing import Any

import yaml

_HEADER_LINE = re.compile(r"([A-Z][A-Za-z-]*):[ \t]*(.*)")
_UNDERLINE = re.compile(r"([=\-~^*+#`'\".:_])\1{2,}\s*")
_DIRECTIVE = re.compile(r"\.\.\s+([\w:-]+)::\s*(.*)")
_CODE_DIRECTIVES = {"code-block", "code", "sourcecode"}
_ROLE = re.compile(r":([\w:.-]+):`([^`]*)`")
_LINK = re.compile(r"`([^`<]+?)\s*<([^`>]+)>`__?")
_REF = re.compile(r"`([^`]+)`__?(?![\w`])")


def field_table(rows: list[tuple[str, object]]) -> str:
    """A page's metadata fields as the table its site shows (empty values left out)."""
    cells = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows if v
    )
    return f"<table>{cells}</table>"


def split_header(text: str) -> tuple[dict[str, str], str] | None:
    """An RFC 822 style header (``Key: value`` lines, indented continuations, a blank line
    after them) as lower-cased keys, and the text after it; ``None`` if the text has none."""
    lines = text.split("\n")
    meta: dict[str, str] = {}
    last = ""
    for index, line in enumerate(lines):
        if not line.strip():
            return (meta, "\n".join(lines[index + 1 :])) if len(meta) >= 2 else None
        match = _HEADER_LINE.fullmatch(line)
        if match:
            last = match.group(1).lower()
            meta[last] = match.group(2).strip()
        elif line[0] in " \t" and last:
            meta[last] = f"{meta[last]} {line.strip()}"
        else:
            return None
    return None


def loose_fields(raw: str) -> dict[str, str]:
    """Front matter that is not valid YAML read as ``key: value`` lines (split at the first
    colon), the way a lenient static-site generator reads it."""
    fields: dict[str, str] = {}
    for line in raw.split("\n"):
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key[:1].isspace():
            fields[key.strip()] = value.strip().strip("\"'")
    return fields


def franklin_header(text: str) -> tuple[dict[str, str], str] | None:
    """A Franklin.jl page's leading ``@def name = value`` lines (julialang.org's blog) as
    metadata, and the text after them; ``None`` when the text does not start with one.
    A value is a Julia string (``"..."``, or a triple-quoted block over several lines) or
    kept as written (``Date(2020, 8, 24)``)."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i == len(lines) or not lines[i].startswith("@def "):
        return None
    fields: dict[str, str] = {}
    while i < len(lines) and (lines[i].startswith("@def ") or not lines[i].strip()):
        name, sep, value = lines[i][len("@def ") :].partition("=")
        i += 1
        if not sep:
            continue
        value = value.strip()
        if value.startswith('"""'):
            parts = [value[3:]]
            while not parts[-1].rstrip().endswith('"""') and i < len(lines):
                parts.append(lines[i])
                i += 1
            value = "\n".join(parts).rstrip()
            value = value[:-3] if value.endswith('"""') else value
        elif len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        fields[name.strip()] = value.strip()
    return fields, "\n".join(lines[i:])


def pep_fields(meta: dict[str, str]) -> str:
    """The header table of a PEP's page."""
    keys = ("Author", "Status", "Type", "Topic", "Created", "Python-Version", "Superseded-By")
    return field_table([(k, meta.get(k.lower())) for k in keys])


def _inline(line: str) -> str:
    def role(match: re.Match[str]) -> str:
        name, target = match.groups()
        text = target.split("<", 1)[0].strip() if "<" in target else target
        if name == "pep":
            return text if "<" in target else f"PEP {text}"
        if text.startswith("~"):
            text = text[1:].rsplit(".", 1)[-1]
        return f"`{text}`"

    line = _ROLE.sub(role, line)
    line = _LINK.sub(lambda m: f"[{m.group(1)}]({m.group(2)})", line)
    return _REF.sub(lambda m: m.group(1), line)


def _title_at(lines: list[str], i: int) -> tuple[str, str, int] | None:
    """A section title at line ``i`` (underlined, or over- and underlined): its text, its
    adornment character and how many lines it takes."""
    line = lines[i]
    below = lines[i + 1] if i + 1 < len(lines) else ""
    underlined = line.strip() and not line[0].isspace() and _UNDERLINE.fullmatch(below)
    if underlined and len(below.rstrip()) >= len(line.rstrip()):
        return line.strip(), below[0], 2
    overlined = _UNDERLINE.fullmatch(line) and below.strip() and i + 2 < len(lines)
    if overlined and lines[i + 2].rstrip() == line.rstrip():
        return below.strip(), "o" + line[0], 3
    return None


def rst_to_markdown(body: str) -> str:
    """reStructuredText as markdown, close enough for the page's text: titles become
    headings by the order their adornments first appear, ``::`` and code-block directives
    become fenced code, other indented blocks (quotes, definitions) plain text, comments
    and other directives are dropped, roles and links become their text."""
    lines = body.split("\n")
    out: list[str] = []
    levels: list[str] = []
    literal_next = False
    skip_block = False
    i = 0
    while i < len(lines):
        line = lines[i]
        title = _title_at(lines, i)
        if title:
            text, mark, used = title
            if mark not in levels:
                levels.append(mark)
            out += ["#" * min(levels.index(mark) + 2, 6) + " " + _inline(text), ""]
            i += used
            literal_next = skip_block = False
            continue
        if line[:1] in (" ", "\t") and line.strip() and (not out or not out[-1].strip()):
            block: list[str] = []
            while i < len(lines) and (not lines[i].strip() or lines[i][:1] in (" ", "\t")):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            indent = min(len(x) - len(x.lstrip()) for x in block if x.strip())
            inner = [x[indent:] for x in block]
            if skip_block:
                pass
            elif literal_next:
                out += ["```", *inner, "```", ""]
            else:
                out += [_inline(x) for x in inner] + [""]
            literal_next = skip_block = False
            continue
        directive = _DIRECTIVE.fullmatch(line)
        if directive:
            literal_next = directive.group(1) in _CODE_DIRECTIVES
            skip_block = not literal_next and directive.group(1) in ("toctree", "include", "raw")
            i += 1
            continue
        if line.startswith(".."):
            skip_block, literal_next = True, False  # a comment or a link target
            i += 1
            continue
        if line.strip():
            skip_block = False
            text = line.strip()
            # "text::" reads "text:", "text ::" reads "text"; either opens a literal block
            literal_next = text.endswith("::")
            if literal_next:
                text = text[:-2].rstrip() if text[:-2].endswith(" ") else text[:-1]
            if text not in ("", ":"):
                out.append(_inline(text))
        else:
            out.append("")
        i += 1
    return "\n".join(out)


def _events(ranges: list[dict[str, Any]]) -> str:
    parts = []
    for entry in ranges:
        for event in entry.get("events", []):
            for key, value in event.items():
                parts.append(f"{key.replace('_', ' ')} {value}")
    return "; ".join(parts)


def vulnerability_page(text: str) -> tuple[str, str, str, dict[str, Any]]:
    """A vulnerability record in YAML (a Go vulndb report, excluded report or OSV record):
    its title, the field table, the description as markdown, and page metadata."""
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError("not a vulnerability record")
    ident = str(data.get("id", ""))
    rows: list[tuple[str, object]] = [("ID", ident)]
    if "affected" in data:  # OSV
        for entry in data["affected"]:
            package = entry.get("package", {})
            rows.append(("Package", f"{package.get('name')} ({package.get('ecosystem')})"))
            rows.append(
                (
                    "Affected",
                    _events([r for r in entry.get("ranges", []) if r.get("type") != "GIT"]),
                )
            )
            rows.append(("Affected versions", ", ".join(str(v) for v in entry.get("versions", []))))
        rows.append(("Aliases", ", ".join(data.get("aliases", []))))
    for module in data.get("modules", []):  # Go vulndb
        rows.append(("Module", module.get("module")))
        ranges = [{"events": module.get("versions", [])}]
        ranges.append({"events": module.get("unsupported_versions", [])})
        rows.append(("Affected", _events(ranges)))
        rows.append(("Vulnerable at", module.get("vulnerable_at")))
        for package in module.get("packages", []):
            rows.append(("Package", package.get("package")))
            rows.append(("Symbols", ", ".join(package.get("symbols", []))))
    rows += [
        ("CVEs", ", ".join(data.get("cves", []))),
        ("GHSAs", ", ".join(data.get("ghsas", []))),
        ("Excluded", data.get("excluded")),
        ("Review status", data.get("review_status")),
        ("Published", data.get("published")),
        ("Modified", data.get("modified")),
    ]
    body = str(data.get("description") or data.get("details") or "").strip()
    refs = []
    for ref in data.get("references", []):
        if "url" in ref:
            refs.append(f"- {str(ref.get('type', '')).lower()}: <{ref['url']}>")
        else:
            refs += [f"- {kind}: <{url}>" for kind, url in ref.items()]
    if refs:
        body += "\n\n## References\n\n" + "\n".join(refs)
    title = str(data.get("summary") or ident)
    meta = {"date": data.get("published")} if data.get("published") else {}
    return title, field_table(rows), body + "\n", meta
