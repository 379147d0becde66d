"""The measurable shape of an item's text, computed once and shared by every scorer.

Everything here is a count taken with regular expressions over the markdown body
(``Item.text``, or the summary when there is no body): words, headings, list
items, code, links, numbers, version strings, CVE ids. The scorers turn these
counts into scores; keeping the measuring apart makes each scorer a short,
readable function of named features.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from signaldesk.items import Item

__all__ = ["TextView", "analyse", "host_of"]

_WORD = re.compile(r"[^\W_][\w'’\-]*")
_HEADING = re.compile(r"^#{1,6}\s+\S", re.MULTILINE)
_BULLET = re.compile(r"^\s{0,6}[-*+•]\s+\S", re.MULTILINE)
_NUMBERED = re.compile(r"^\s{0,6}(?:\d{1,2}[.)]|step\s+\d+[:.)]?)\s+\S", re.MULTILINE | re.IGNORECASE)
_FENCE = re.compile(r"^\s{0,3}(```|~~~)", re.MULTILINE)
_INDENTED_CODE = re.compile(r"(?:^(?: {4}|\t)\S.*\n?){2,}", re.MULTILINE)
_INLINE_CODE = re.compile(r"`[^`\n]{2,120}`")
_COMMAND_WORDS = (
    "pip|pip3|pipx|uv|npm|npx|pnpm|yarn|cargo|go|rustup|brew|apt|apt-get|dnf|yum|docker|"
    "podman|kubectl|helm|terraform|tofu|git|make|curl|wget|python|python3|node|systemctl|"
    "journalctl|ssh|openssl|psql|sqlite3|duckdb|ollama|gh|claude|aws|gcloud|az|sudo|"
    "export|cd|mkdir|chmod|ls|cat|grep|sed|ansible-playbook|gradle|mvn|swift|xcodebuild"
)
_COMMAND_LINE = re.compile(rf"^\s*(?:[$#>%]\s+)?(?:{_COMMAND_WORDS})\s+\S", re.MULTILINE)
_PROMPT_LINE = re.compile(r"^\s*\$\s+\S", re.MULTILINE)
_INLINE_COMMAND = re.compile(rf"`(?:sudo\s+)?(?:{_COMMAND_WORDS})\s+[^`\n]+`")
_MD_LINK = re.compile(r"\]\((https?://[^)\s]+)\)")
_BARE_URL = re.compile(r"(?<![(\w])(https?://[^\s)>\]\"']+)")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*%?(?![\w])")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$", re.MULTILINE)
_VERSION = re.compile(
    r"(?<![\w.])v?\d+\.\d+(?:\.\d+){0,2}(?:[-.]?(?:rc|beta|alpha|b|a)\d*)?(?![\w])"
    r"|(?<![\w.])v\d+(?![\w.])"
)
_CVE = re.compile(r"\b(?:cve-\d{4}-\d{4,}|ghsa(?:-[0-9a-z]{4}){3})\b", re.IGNORECASE)
_FIX = re.compile(
    r"\b(?:fixed|patched|resolved|addressed|corrected)\s+in\s+(?:version\s+|release\s+|v)?\d"
    r"|\b(?:upgrade|update|bump|move)\s+(?:\S+\s+){0,4}?to\s+(?:version\s+|release\s+|v)?\d"
    r"|\bpatched\s+versions?\b|\bfixed\s+versions?\b|\bfix(?:es)?\s+(?:is\s+)?available\b",
    re.IGNORECASE,
)
_CITATION = re.compile(
    r"\[\d{1,3}\]|\bdoi:\s*10\.|\bdoi\.org/|\barxiv:\s*\d{4}\.\d{4,5}|\bet\s+al\.",
    re.IGNORECASE,
)
_REFERENCES_HEADING = re.compile(
    r"^(?:#{1,6}\s*)?(?:references|sources|bibliography|further reading|citations)\s*:?\s*$",
    re.MULTILINE | re.IGNORECASE,
)
_CAPS_WORD = re.compile(r"\b[A-Z]{4,}\b")


@dataclass(frozen=True, slots=True)
class TextView:
    """Lower-cased text fields and structural counts of one item."""

    title: str
    body: str
    tags: str
    words: int
    headings: int
    bullets: int
    numbered: int
    code_blocks: int
    code_lines: int
    inline_code: int
    commands: int
    links: tuple[str, ...]
    numbers: int
    table_rows: int
    versions: int
    cves: int
    fixes: int
    citations: int
    references_section: bool
    title_exclamations: int
    title_caps_words: int
    url_host: str

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


def _code_spans(body: str) -> tuple[int, list[str]]:
    """Fenced blocks (an unclosed fence runs to the end) and the lines inside them."""
    fences = [m.start() for m in _FENCE.finditer(body)]
    lines: list[str] = []
    blocks = 0
    for i in range(0, len(fences), 2):
        start = body.find("\n", fences[i])
        end = fences[i + 1] if i + 1 < len(fences) else len(body)
        if start == -1 or start >= end:
            continue
        blocks += 1
        lines.extend(line for line in body[start + 1 : end].splitlines() if line.strip())
    for match in _INDENTED_CODE.finditer(body):
        # Indented code only counts outside fences and only when it is not a nested list.
        block_lines = [line for line in match.group(0).splitlines() if line.strip()]
        if not any(_BULLET.match(line) or _NUMBERED.match(line) for line in block_lines):
            blocks += 1
            lines.extend(block_lines)
    return blocks, lines


def analyse(item: Item, *, max_chars: int) -> TextView:
    """Measure ``item``; only the first ``max_chars`` characters of its body are read."""
    raw_body = item.text if item.text.strip() else (item.summary or "")
    raw_body = raw_body[:max_chars]
    title = " ".join(item.title.split())
    blocks, code_lines = _code_spans(raw_body)
    code_text = "\n".join(code_lines)
    commands = (
        len(_COMMAND_LINE.findall(code_text))
        + len(_PROMPT_LINE.findall(raw_body))
        + len(_INLINE_COMMAND.findall(raw_body))
    )
    links = tuple(
        host
        for host in (
            host_of(u) for u in [*_MD_LINK.findall(raw_body), *_BARE_URL.findall(raw_body)]
        )
        if host
    )
    return TextView(
        title=title.lower(),
        body=raw_body.lower(),
        tags=" ; ".join(item.tags).lower(),
        words=len(_WORD.findall(raw_body)),
        headings=len(_HEADING.findall(raw_body)),
        bullets=len(_BULLET.findall(raw_body)),
        numbered=len(_NUMBERED.findall(raw_body)),
        code_blocks=blocks,
        code_lines=len(code_lines),
        inline_code=len(_INLINE_CODE.findall(raw_body)),
        commands=commands,
        links=links,
        numbers=len(_NUMBER.findall(raw_body)),
        table_rows=len(_TABLE_ROW.findall(raw_body)),
        versions=len(_VERSION.findall(title)) + len(_VERSION.findall(raw_body)),
        cves=len(set(m.lower() for m in _CVE.findall(f"{title}\n{raw_body}"))),
        fixes=len(_FIX.findall(raw_body)),
        citations=len(_CITATION.findall(raw_body)),
        references_section=bool(_REFERENCES_HEADING.search(raw_body)),
        title_exclamations=title.count("!"),
        title_caps_words=len(_CAPS_WORD.findall(title)),
        url_host=host_of(item.url),
    )
