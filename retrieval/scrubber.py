"""Credential scrubbing: secrets in text are replaced before anything is embedded or stored.

:func:`scrub` replaces each secret it recognises with ``[REDACTED:<rule-name>]``
and reports how many of each rule it found — never the values, and neither does
the log. A redaction keeps the number of lines: a private key block becomes the
marker followed by as many line breaks as the block had, so line numbers after it
(chunk start lines, ``read_note`` ranges) stay those of the file.

What is recognised (the rules are data, see :mod:`scrub_rules`):

1. Private key blocks, found as one unit by :mod:`scrub_blocks` (any size, any line
   lengths, with or without their END line).
2. signaldesk's own rules (``secret_rules/signaldesk.toml``): vendor formats that
   need a check beyond a regex, and the generic shapes (assignments in env files,
   YAML and code, credentials in URLs, command-line passwords).
3. gitleaks' rule set (``secret_rules/gitleaks.json``, converted from upstream by
   ``tools/convert_gitleaks.py``), with its entropy thresholds and allowlists.

Where two rules find overlapping secrets, the union is replaced, named after the
earlier rule (so a vendor's name wins over a generic one). Only the secret is
replaced: the name in ``API_KEY=...`` and the host in a connection string stay
searchable.

Speed: the scrubber runs on every note. One pass of a keyword trie over the
lower-cased text says which keywords occur; a rule's regex runs only when one of
its keywords does (gitleaks' prefilter), which skips most rules for most notes.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from signaldesk.retrieval.scrub_blocks import private_key_spans
from signaldesk.retrieval.scrub_checks import in_template, shannon_entropy
from signaldesk.retrieval.scrub_rules import Allowlist, Rule, RuleSet, load_rules

__all__ = [
    "PATTERN_NAMES",
    "PRIVATE_KEY",
    "ScrubResult",
    "Scrubber",
    "default_scrubber",
    "scrub",
    "scrub_text",
    "scrub_value",
]

logger = logging.getLogger(__name__)

REDACTION_TEMPLATE = "[REDACTED:{name}]"
PRIVATE_KEY = "private-key"
"""The name private key blocks are redacted under."""

_OWN_GROUPS = ("secret", "secret2", "quoted", "bare")


@dataclass(frozen=True, slots=True)
class ScrubResult:
    """The scrubbed text and how many secrets of each rule were replaced."""

    text: str
    findings: dict[str, int]
    """Rule name -> number of replacements. Never the values."""

    @property
    def redacted(self) -> int:
        """Total number of replacements."""
        return sum(self.findings.values())


def _trie_pattern(words: Iterable[str]) -> str:
    """A regex alternation of ``words`` shaped as a trie (Python's engine then branches
    once per character instead of trying every word at every position)."""
    root: dict[str, dict] = {}  # type: ignore[type-arg]
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def build(node: dict) -> str:  # type: ignore[type-arg]
        ends = "" in node
        branches = [re.escape(char) + build(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if ends else body

    return build(root)


class _Prefilter:
    """Which keywords occur in a text, in one pass (overlapping occurrences included)."""

    def __init__(self, keywords: Iterable[str]) -> None:
        words = sorted(set(keywords))
        # At each position the trie gives the longest keyword starting there; the
        # shorter keywords that are its prefixes are found there too.
        self._regex = re.compile("(?=(" + _trie_pattern(words) + "))") if words else None
        self._prefixes = {w: frozenset(v for v in words if w.startswith(v)) for w in words}

    def present(self, lowered: str) -> frozenset[str]:
        if self._regex is None:
            return frozenset()
        found: set[str] = set()
        for longest in {m.group(1) for m in self._regex.finditer(lowered)}:
            found |= self._prefixes[longest]
        return frozenset(found)


def _line_at(text: str, start: int, end: int) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    return text[line_start : len(text) if line_end < 0 else line_end]


def _allowed(
    allowlists: tuple[Allowlist, ...], secret: str, match: re.Match[str], text: str
) -> bool:
    for allow in allowlists:
        if allow.regexes:
            target = secret
            if allow.target == "match":
                target = match.group(0)
            elif allow.target == "line":
                target = _line_at(text, match.start(), match.end())
            if any(regex.search(target) for regex in allow.regexes):
                return True
        if allow.stopwords is not None and allow.stopwords.search(secret.lower()):
            return True
    return False


def _group_span(rule: Rule, match: re.Match[str]) -> tuple[int, int] | None:
    if rule.group is not None:
        if isinstance(rule.group, int) and rule.group > (match.re.groups or 0):
            return None
        if match.group(rule.group) is None:
            return None
        return match.span(rule.group)
    names = match.re.groupindex
    for name in _OWN_GROUPS:
        if name in names and match.group(name) is not None:
            return match.span(name)
    for index in range(1, (match.re.groups or 0) + 1):
        if match.group(index):
            return match.span(index)
    return match.span(0)


class Scrubber:
    """A compiled rule set; :func:`scrub` uses the shipped one."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self._prefilter = _Prefilter(k for r in rules.rules for k in r.keywords)
        self.names: tuple[str, ...] = tuple(
            dict.fromkeys([PRIVATE_KEY, *(r.name for r in rules.rules)])
        )

    def _candidates(self, rule: Rule, text: str, lowered: str) -> Iterable[re.Match[str]]:
        if rule.gate is not None and rule.gate.search(text) is None:
            return ()
        if rule.lowered:
            # Same indices only when no character changed length when lower-cased.
            if len(lowered) == len(text):
                return rule.regex.finditer(lowered)
            return re.compile(rule.regex.pattern, re.ASCII | re.IGNORECASE).finditer(text)
        return rule.regex.finditer(text)

    def _accept(self, rule: Rule, match: re.Match[str], text: str) -> tuple[int, int] | None:
        span = _group_span(rule, match)
        if span is None or span[0] == span[1]:
            return None
        secret = text[span[0] : span[1]]
        if rule.entropy and shannon_entropy(secret) <= rule.entropy:
            return None
        if rule.check is not None and not rule.check(secret):
            return None
        if rule.origin == "signaldesk" and in_template(text, span[0], span[1]):
            return None
        if rule.allow and _allowed(rule.allow, secret, match, text):
            return None
        if rule.origin == "gitleaks" and _allowed(self.rules.global_allow, secret, match, text):
            return None
        return span

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, rule name) of every secret in ``text``, in order, not overlapping.

        Overlapping findings are joined into one span, named after the first rule in
        rule order that took part: a rule that finds only part of a token (a 12-character
        prefix rule beside the 32-character one) never leaves the rest of it readable.
        """
        if not text:
            return []
        found: list[tuple[int, int, int]] = [(s, e, -1) for s, e in private_key_spans(text)]
        lowered = text.lower()
        present = self._prefilter.present(lowered)
        for order, rule in enumerate(self.rules.rules):
            if rule.keywords and present.isdisjoint(rule.keywords):
                continue
            for match in self._candidates(rule, text, lowered):
                span = self._accept(rule, match, text)
                if span is not None:
                    found.append((span[0], span[1], order))
        if not found:
            return []
        found.sort()
        merged: list[list[int]] = []
        for start, end, order in found:
            if merged and start < merged[-1][1]:
                last = merged[-1]
                last[1] = max(last[1], end)
                last[2] = min(last[2], order)
            else:
                merged.append([start, end, order])
        return [(s, e, self._name(o)) for s, e, o in merged]

    def _name(self, order: int) -> str:
        return PRIVATE_KEY if order < 0 else self.rules.rules[order].name

    def scrub(self, text: str) -> ScrubResult:
        """Replace every secret in ``text`` with ``[REDACTED:<rule-name>]``."""
        spans = self.spans(text)
        if not spans:
            return ScrubResult(text, {})
        pieces: list[str] = []
        position = 0
        findings: dict[str, int] = {}
        for start, end, name in spans:
            pieces.append(text[position:start])
            # Keep the line count: the marker, then the line breaks the secret held.
            pieces.append(
                REDACTION_TEMPLATE.format(name=name) + "\n" * text.count("\n", start, end)
            )
            position = end
            findings[name] = findings.get(name, 0) + 1
        pieces.append(text[position:])
        # Names and counts only: the values must never reach a log. DEBUG, because the
        # callers (the indexer, the MCP server) log one summary per note at INFO.
        logger.debug(
            "redacted %d secret(s): %s",
            len(spans),
            ", ".join(f"{name}={count}" for name, count in sorted(findings.items())),
        )
        return ScrubResult("".join(pieces), findings)


@cache
def default_scrubber() -> Scrubber:
    """The scrubber with the shipped rules (built once per process)."""
    return Scrubber(load_rules())


def scrub(text: str) -> ScrubResult:
    """Replace every secret in ``text`` with ``[REDACTED:<rule-name>]``.

    :returns: the new text and the number of replacements per rule name.
    """
    return default_scrubber().scrub(text)


def scrub_text(text: str) -> str:
    """``text`` with every secret replaced (:func:`scrub` without the counts)."""
    return default_scrubber().scrub(text).text


def scrub_value(value: Any) -> Any:
    """A JSON-like value (dicts, lists, tuples, strings, numbers) with every string scrubbed.

    For what signaldesk writes or logs about what it took in (ledger payloads,
    generated notes): the structure and the keys stay, string values are scrubbed.
    """
    if isinstance(value, str):
        return scrub_text(value) if value else value
    if isinstance(value, dict):
        return {key: scrub_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub_value(item) for item in value)
    return value


PATTERN_NAMES: tuple[str, ...] = default_scrubber().names
"""Every rule name :func:`scrub` can report."""
