"""The measurable shape of an item's text, computed once and shared by every scorer.

Everything here is a count taken over the markdown body (``Item.text``, or the
summary when there is no body): words, headings, list items, code, links, numbers,
version strings, CVE ids. The scorers turn these counts into scores; keeping the
measuring apart makes each scorer a short, readable function of named features.

Cost matters (the pipeline scores every incoming item): the word count is taken
over the whole body, everything else over its first ``max_chars`` characters, in
one pass over the lines plus a few regular expressions that start with a literal
(which the regex engine scans for quickly).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from signaldesk.items import Item
from signaldesk.scoring.keywords import tokens
from signaldesk.scoring.prose import MEASUREMENT, ProseView, analyse_prose

__all__ = ["TextView", "analyse", "host_of"]

_COMMAND_WORDS = frozenset(
    (
        "pip",
        "pip3",
        "pipx",
        "uv",
        "npm",
        "npx",
        "pnpm",
        "yarn",
        "cargo",
        "go",
        "rustup",
        "brew",
        "apt",
        "apt-get",
        "dnf",
        "yum",
        "docker",
        "podman",
        "kubectl",
        "helm",
        "terraform",
        "tofu",
        "git",
        "make",
        "curl",
        "wget",
        "python",
        "python3",
        "node",
        "systemctl",
        "journalctl",
        "ssh",
        "openssl",
        "psql",
        "sqlite3",
        "duckdb",
        "ollama",
        "gh",
        "claude",
        "aws",
        "gcloud",
        "az",
        "sudo",
        "export",
        "cd",
        "mkdir",
        "chmod",
        "ls",
        "cat",
        "grep",
        "sed",
        "ansible-playbook",
        "gradle",
        "mvn",
        "swift",
        "xcodebuild",
        "pg_upgrade",
        "pg_basebackup",
        "etcdctl",
        "pluto",
        "llama-quantize",
        "perf",
        "strace",
        "free",
        "ps",
        "kill",
        "find",
        "tar",
        "awk",
        "jq",
        "tmux",
        "rsync",
        "initctl",
    )
)
# A command written into running text, as plain-text pages and mails have them ("run
# perf record -g ./myapp", "free -h"): a command word directly followed by a flag or a path.
# The word alone ("free", "find", "make") is English; the flag or path is not.
_PROSE_COMMAND = re.compile(
    r"(?<![\w./-])("
    + "|".join(sorted(map(re.escape, _COMMAND_WORDS), key=len, reverse=True))
    + r")(?:\s+[a-z][\w-]*)?\s+(?:--?[a-z0-9][\w-]*|\./|~/|/[a-z])"
)
# A command named in running text without a flag ("run kubectl describe, then kubectl
# logs"): a tool's name that is no English word, then one of the subcommands tools share.
_NAMED_TOOLS = _COMMAND_WORDS - frozenset(
    """make go node python python3 swift free find kill cat ps export cd perf tar ssh helm gh
    claude az aws sudo""".split()  # noqa: SIM905 - a word list reads better as text
)
_SUBCOMMANDS = """install add run build init create apply get describe logs exec commit push
    pull clone checkout rebase merge diff status config upgrade update remove delete start
    stop restart enable debug publish login deploy rollout compose fetch""".split()  # noqa: SIM905
_NAMED_COMMAND = re.compile(
    r"(?<![\w./-])("
    + "|".join(sorted(map(re.escape, _NAMED_TOOLS), key=len, reverse=True))
    + r")\s+(?:"
    + "|".join(_SUBCOMMANDS)
    + r")\b"
)
# A name that only code has, written into the text: snake_case, a call, a long flag,
# CONSTANT_CASE (brand names in camel case, "JavaScript", are not counted).
_IDENTIFIER = re.compile(
    r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b|\b[A-Za-z_]\w*\([^()\s]{0,40}\)|(?<!\S)--[a-z][\w-]+"
    r"|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"
)
_IMPERATIVES = frozenset(
    (
        "run",
        "install",
        "add",
        "set",
        "use",
        "replace",
        "enable",
        "disable",
        "configure",
        "create",
        "open",
        "update",
        "upgrade",
        "remove",
        "check",
        "copy",
        "edit",
        "restart",
        "pin",
        "rotate",
        "call",
        "raise",
        "read",
        "write",
        "test",
        "keep",
        "consider",
        "avoid",
        "prefer",
        "think",
        "make",
        "name",
        "ask",
        "start",
        "stop",
        "try",
        "measure",
        "split",
        "move",
        "delete",
    )
)
_NUMBERED = re.compile(r"(?:\d{1,2}[.)]|step\s+\d+[:.)]?)\s+\S")
_INLINE_CODE = re.compile(r"`[^`\n]{2,120}`")
_MD_LINK = re.compile(r"\]\((https?://[^)\s]+)\)")
_BARE_URL = re.compile(r"https?://[^\s)>\]\"'`]+")
# URLs are cut out before keyword matching: a link to testing.googleblog.com is not
# an item about testing, and every link would otherwise count as "http" for web.
_ANY_URL = re.compile(r"https?://[^\s)>\]\"'`]+|www\.[^\s)>\]\"'`]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# A section number ("1.8.g Container Queries") is not a version; "1.8.x" (a series) is.
_VERSION = re.compile(r"\d+\.\d+(?:\.\d+){0,2}(?!\d|\.[a-wyz]\b)")
# An arXiv id (2406.13249) or a year-and-number is not a version.
_NOT_VERSION = re.compile(r"\d{4}\.\d{4,5}|\d{5,}|\d+\.\d{5,}")
# "v2" of a bare "v2"; in "v2.0" the dotted number is the version (_VERSION), counted once.
_V_VERSION = re.compile(r"v\d+(?!\d|\.\d)")
_CVE = re.compile(r"cve-\d{4}-\d{4,}|ghsa(?:-[0-9a-z]{4}){3}|rustsec-\d{4}-\d{4}")
# One literal-led pattern per phrase: a fix or patched version named in words.
_FIX_PATTERNS = tuple(
    re.compile(p)
    for p in (
        r"(?:fixed|patched|resolved|addressed|corrected)\s+in\s+(?:version\s+|release\s+|v)?\d",
        r"(?:upgrade|update|bump)\s+(?:\S+\s+){0,4}?to\s+(?:version\s+|release\s+|v)?\d",
        r"(?:patched|fixed)\s+versions?\b",
        r"fix(?:es)?\s+(?:is\s+)?available\b",
        r"patched\s*[|:]?\s*[<>=^~]+\s*v?\d",
        # OSV's ranges ("introduced 0; fixed 0.38.1", a "Fixed | 1.2.3" cell): a version.
        r"\bfixed\s*[|:]?\s*v?\d+\.\d+",
        r"(?:downgrade|revert|roll\s+back)\s+(?:\S+\s+){0,4}?to\s+(?:version\s+|v)?\d",
        r"(?:released|available|included)\s+in\s+(?:version\s+|release\s+|v)?\d",
        r"(?:versions?|release)\s+v?\d[\w.]*\s+(?:and|or)\s+(?:later|above|newer)",
    )
)
_FIX_HINTS = (
    "fixed",
    "patched",
    "resolved",
    "addressed",
    "corrected",
    "upgrade",
    "update",
    "bump",
    "downgrade",
    "revert",
    "roll back",
    "released in",
    "available in",
    "included in",
    "later",
    "newer",
    "above",
)
_CITATIONS = tuple(
    re.compile(p)
    for p in (
        r"\[\d{1,3}\]",
        r"doi:\s*10\.",
        r"doi\.org/",
        r"arxiv:\s*\d{4}\.\d{4,5}",
        r"et\s+al\.",
    )
)
_REFERENCE_HEADINGS = frozenset(
    ("references", "sources", "bibliography", "citations", "further reading")
)
_CAPS_WORD = re.compile(r"\b[A-Z]{4,}\b")
_TITLE_WORD = re.compile(r"\b[^\W\d_]{2,}\b")
# Hosts where a link to owner/name means "the code (or model, or data) is there to run".
_CODE_HOSTS = ("github.com", "gitlab.com", "codeberg.org", "huggingface.co")
_PACKAGE_HOSTS = ("pypi.org", "crates.io", "npmjs.com")
_NOT_REPOS = frozenset(
    ("orgs", "users", "sponsors", "settings", "features", "about", "login", "topics", "marketplace")
)


@dataclass(frozen=True, slots=True)
class TextView:
    """Lower-cased text fields, their tokens and structural counts of one item."""

    title: str
    body: str
    tags: str
    title_tokens: tuple[str, ...]
    body_tokens: tuple[str, ...]
    tag_tokens: tuple[str, ...]
    words: int
    headings: int
    bullets: int
    numbered: int
    imperative_items: int
    code_blocks: int
    code_lines: int
    inline_code: int
    commands: int
    identifiers: int
    """Distinct names from code written into the text (``pg_stat_user_tables``,
    ``navigationDestination(for:)``, ``--scope``, ``FLAG_STOPPED``)."""
    links: tuple[str, ...]
    numbers: int
    table_rows: int
    link_items: int
    """List items that carry a link (a curated list is mostly these)."""
    versions: int
    cves: int
    fixes: int
    citations: int
    references_section: bool
    title_exclamations: int
    title_caps_words: int
    title_words: int
    url_host: str
    code_links: int
    prose: ProseView

    @property
    def log_words(self) -> float:
        return math.log10(max(self.words, 1))


def host_of(url: str | None) -> str:
    """The lower-cased host of ``url`` without ``www.`` ('' when there is none)."""
    if not url:
        return ""
    try:
        host = urlsplit(url.strip()).hostname or ""
    except ValueError:
        return ""
    return host.removeprefix("www.")


@dataclass(slots=True)
class _Lines:
    headings: int = 0
    bullets: int = 0
    numbered: int = 0
    imperative: int = 0
    code_blocks: int = 0
    code_lines: int = 0
    commands: int = 0
    table_rows: int = 0
    link_items: int = 0
    references: bool = False


def _code_link_count(urls: list[str]) -> int:
    """Links to a repository (``host/owner/name``) or a package page: code to run."""
    found = set()
    for url in urls:
        try:
            parts = urlsplit(url)
        except ValueError:
            continue
        host = (parts.hostname or "").removeprefix("www.")
        segments = [s for s in parts.path.split("/") if s]
        if host in _CODE_HOSTS and len(segments) >= 2 and segments[0] not in _NOT_REPOS:
            found.add((host, segments[0].lower(), segments[1].lower()))
        elif host in _PACKAGE_HOSTS and segments:
            found.add((host, segments[0], segments[1] if len(segments) > 1 else ""))
    return len(found)


def _first_word(text: str) -> str:
    parts = text.split(None, 1)
    return parts[0] if parts else ""


def _scan_lines(body: str) -> _Lines:
    """One pass over the lines: headings, lists, fenced and indented code, commands (also
    those written into running text), tables."""
    out = _Lines()
    in_fence = False
    indented_run = 0
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            out.code_blocks += in_fence
            indented_run = 0
            continue
        if in_fence:
            if stripped:
                out.code_lines += 1
                word = _first_word(stripped.lstrip("$#>% "))
                out.commands += word in _COMMAND_WORDS
            continue
        if "-" in stripped or "/" in stripped:  # a flag or a path: maybe a command in prose
            out.commands += len(_PROSE_COMMAND.findall(_INLINE_CODE.sub(" ", stripped)))
        elif stripped:
            out.commands += len(_NAMED_COMMAND.findall(_INLINE_CODE.sub(" ", stripped)))
        if not stripped:
            continue
        if line.startswith(("    ", "\t")) and not stripped.startswith(("-", "*", "+")):
            # Two indented lines in a row outside a list: an indented code block.
            indented_run += 1
            out.code_lines += 1
            out.code_blocks += indented_run == 2
            continue
        indented_run = 0
        first = stripped[0]
        if first == "#":
            hashes = len(stripped) - len(stripped.lstrip("#"))
            if hashes <= 6 and stripped[hashes : hashes + 1] == " ":
                out.headings += 1
                out.references |= stripped[hashes:].strip(" :").lower() in _REFERENCE_HEADINGS
            continue
        if first in "-*+•" and stripped[1:2] == " ":
            out.bullets += 1
            out.link_items += "](http" in stripped
            out.imperative += _first_word(stripped[2:]).lower() in _IMPERATIVES
        elif (first.isdigit() or first in "sS") and _NUMBERED.match(stripped):
            out.numbered += 1
            out.link_items += "](http" in stripped
            rest = stripped.split(None, 1)[1] if " " in stripped else ""
            out.imperative += _first_word(rest).lower() in _IMPERATIVES
        elif first == "|" and stripped.endswith("|"):
            out.table_rows += 1
        elif first == "$" and stripped[1:2] == " ":
            out.commands += 1
        elif stripped.strip(" :").lower() in _REFERENCE_HEADINGS:
            out.references = True
    return out


def _is_version(match: re.Match[str], text: str) -> bool:
    """Whether a number :data:`_VERSION` found is one: not an id, and not a figure with its
    unit ("2.5x", "49.6 ms", "12.5%", counted as measurements), which read as release
    notes' versions."""
    number = match.group()
    if _NOT_VERSION.fullmatch(number):
        return False
    return number.count(".") > 1 or MEASUREMENT.match(text, match.start()) is None


def analyse(item: Item, *, max_chars: int) -> TextView:
    """Measure ``item``; all but the word count read only the first ``max_chars`` characters."""
    full_body = item.text if item.text.strip() else (item.summary or "")
    raw_body = full_body[:max_chars]
    body = raw_body.lower()
    title = " ".join(item.title.split())
    lowered_title = title.lower()
    tags = " ; ".join(item.tags).lower()
    lines = _scan_lines(raw_body)
    inline = _INLINE_CODE.findall(raw_body)
    inline_commands = sum(_first_word(span.strip("`")) in _COMMAND_WORDS for span in inline)
    urls = [*_MD_LINK.findall(raw_body), *_BARE_URL.findall(raw_body)]
    links = tuple(host for host in (host_of(u) for u in dict.fromkeys(urls)) if host)
    both = f"{lowered_title}\n{body}"
    fixes = (
        sum(len(p.findall(body)) for p in _FIX_PATTERNS)
        if any(hint in body for hint in _FIX_HINTS)
        else 0
    )
    # Versions the text names, not its links: one "v2.0" in a feed teaser read as 7
    # versions, each counted as "v2" and "2.0" and its image's link ("...-v2-0-App") once
    # more. "v2" counts only at the start of a word; the check is done here because a
    # literal-led pattern scans much faster than one that starts with a lookbehind.
    plain_body = _ANY_URL.sub(" ", body)
    named = f"{_ANY_URL.sub(' ', lowered_title)}\n{plain_body}"
    v_versions = sum(
        1
        for m in _V_VERSION.finditer(named)
        if m.start() == 0 or not named[m.start() - 1].isalnum()
    )
    versions = v_versions + sum(1 for m in _VERSION.finditer(named) if _is_version(m, named))
    body_tokens = tuple(tokens(plain_body))
    return TextView(
        title=lowered_title,
        body=body,
        tags=tags,
        title_tokens=tuple(tokens(lowered_title)),
        body_tokens=body_tokens,
        tag_tokens=tuple(tokens(tags)),
        words=len(full_body.split()),
        headings=lines.headings,
        bullets=lines.bullets,
        numbered=lines.numbered,
        imperative_items=lines.imperative,
        code_blocks=lines.code_blocks,
        code_lines=lines.code_lines,
        inline_code=len(inline),
        commands=lines.commands + inline_commands,
        identifiers=len(set(_IDENTIFIER.findall(_ANY_URL.sub(" ", raw_body)))),
        links=links,
        numbers=len(_NUMBER.findall(body)),
        table_rows=lines.table_rows,
        link_items=lines.link_items,
        versions=versions,
        cves=len(set(_CVE.findall(both))) if ("cve-" in both or "ghsa-" in both) else 0,
        fixes=fixes,
        citations=sum(len(p.findall(body)) for p in _CITATIONS),
        references_section=lines.references,
        title_exclamations=title.count("!"),
        title_caps_words=len(_CAPS_WORD.findall(title)),
        title_words=len(_TITLE_WORD.findall(title)),
        url_host=host_of(item.url),
        code_links=_code_link_count(list(dict.fromkeys(urls))),
        prose=analyse_prose(raw_body, title, body_tokens),
    )
