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

Speed: the scrubber runs on every note. One Aho-Corasick pass over the lower-cased
text says where each keyword occurs; a rule's regex runs only when one of its
keywords does (gitleaks' prefilter), which skips most rules for most notes, and a
rule whose matches start at its keywords (``starts`` in the rule data) is tried
only there.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

import ahocorasick

from signaldesk.retrieval.scrub_blocks import private_key_spans
from signaldesk.retrieval.scrub_checks import in_template, shannon_entropy
from signaldesk.retrieval.scrub_rules import LINE, Allowlist, Rule, RuleSet, load_rules

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


class _Prefilter:
    """Where each keyword occurs in a text, in one Aho-Corasick pass (gitleaks does the same)."""

    def __init__(self, keywords: Iterable[str]) -> None:
        self._automaton: Any = None
        words = sorted(set(keywords))
        if words:
            automaton = ahocorasick.Automaton()
            for word in words:
                automaton.add_word(word, (len(word), word))
            automaton.make_automaton()
            self._automaton = automaton

    def positions(self, lowered: str) -> dict[str, list[int]]:
        """Keyword -> start offsets (overlapping occurrences included), for ``lowered``."""
        found: dict[str, list[int]] = {}
        if self._automaton is None:
            return found
        for end, (length, word) in self._automaton.iter(lowered):
            found.setdefault(word, []).append(end - length + 1)
        return found


def _start_positions(starts: Iterable[int], before: int, text: str) -> list[int]:
    """Where matches may start, given keyword offsets ``starts`` and the rule's ``starts``."""
    if before == LINE:
        return sorted({text.rfind("\n", 0, p) + 1 for p in starts})
    return sorted({q for p in starts for q in range(max(0, p - before), p + 1)})


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

    def __init__(self, rules: RuleSet, *, anchored: bool = True) -> None:
        """:param anchored: try rules that say where their matches start only there (off:
        everywhere, for checking that this loses nothing)."""
        self.rules = rules
        self.anchored = anchored
        self._prefilter = _Prefilter(k for r in rules.rules for k in r.keywords)
        # Keyword -> the rules it wakes, and the rules without keywords (always run).
        self._by_keyword: dict[str, list[int]] = {}
        self._always: list[int] = []
        for order, rule in enumerate(rules.rules):
            if not rule.keywords:
                self._always.append(order)
            for keyword in rule.keywords:
                self._by_keyword.setdefault(keyword, []).append(order)
        self.names: tuple[str, ...] = tuple(
            dict.fromkeys([PRIVATE_KEY, *(r.name for r in rules.rules)])
        )

    def _candidates(
        self, rule: Rule, text: str, lowered: str, positions: dict[str, list[int]]
    ) -> Iterable[re.Match[str]]:
        if rule.gate is not None and rule.gate.search(text) is None:
            return ()
        same_indices = len(lowered) == len(text)
        if rule.lowered and same_indices:
            # A case-sensitive regex on the lower-cased text: several times faster than
            # IGNORECASE on the text, same indices (no character changed length).
            haystack = lowered
            regex = rule.regex
        elif rule.lowered:
            haystack, regex = text, re.compile(rule.regex.pattern, re.ASCII | re.IGNORECASE)
        else:
            haystack, regex = text, rule.regex
        if rule.starts is None or not same_indices or not self.anchored:
            return regex.finditer(haystack)
        # Every match of this rule starts at (or just before) one of its keywords, or at
        # the start of a keyword's line: try the regex there only. (The rule data says
        # so; tests/test_scrubber_rules.py checks it against full scans.)
        offsets = [p for k in rule.keywords for p in positions.get(k, ())]
        found: list[re.Match[str]] = []
        for start in _start_positions(offsets, rule.starts, text):
            match = regex.match(haystack, start)
            if match is not None and match.end() > start:
                found.append(match)
        return found

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
        positions = self._prefilter.positions(lowered)
        woken = set(self._always)
        for keyword in positions:
            woken.update(self._by_keyword[keyword])
        for order in sorted(woken):
            rule = self.rules.rules[order]
            for match in self._candidates(rule, text, lowered, positions):
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
