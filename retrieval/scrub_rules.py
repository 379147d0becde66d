"""Loading the scrubber's rules from data: ``retrieval/secret_rules/*``.

Two files (see :func:`rules_from_data` for the order the rules are tried in):

- ``signaldesk.toml``: signaldesk's own rules. Vendor formats that need a check
  beyond a regex (a JWT header must decode to JSON), vendors gitleaks lacks, and the
  generic shapes (passwords and secrets assigned in env files, YAML and code,
  credentials in URLs, command-line passwords).
- ``gitleaks.json``: gitleaks' rule set, converted to Python syntax by
  ``tools/convert_gitleaks.py`` (MIT; licence in ``LICENSE.gitleaks``). Applied
  with gitleaks' own semantics: keywords, entropy threshold, secret group,
  per-rule and global allowlists (regexes on the secret, the match or the line,
  and stopwords).

A rule never sees the note's path: gitleaks' rules that are limited to a file type
(``*.tf``, ``*.yaml``, ``nuget.config``) apply to every note, since a note quotes
such files; its one rule that looks at file names only is not used.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from signaldesk.retrieval.scrub_checks import CHECKS, Check

__all__ = ["LINE", "Allowlist", "Rule", "RuleSet", "load_rules", "rules_from_data"]

_DATA = "secret_rules"
_OWN = "signaldesk.toml"
_GITLEAKS = "gitleaks.json"

AllowTarget = Literal["secret", "match", "line"]

LINE = -1
"""``Rule.starts`` for rules whose matches start at the start of a keyword's line."""


@dataclass(frozen=True, slots=True)
class Allowlist:
    """A finding this matches is not a secret (gitleaks' allowlist semantics)."""

    target: AllowTarget
    regexes: tuple[re.Pattern[str], ...]
    stopwords: re.Pattern[str] | None
    """One alternation of the (lower-case) stopwords, searched in the lower-cased secret."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One way of recognising a secret.

    :param name: what the redaction says: ``[REDACTED:<name>]``.
    :param keywords: lower-case literals, one of which must occur in the lower-cased
        text for the regex to run (empty: always run).
    :param group: which part of a match is the secret: a group name or number, or
        None for the first named group of ``secret``/``secret2``/``quoted``/``bare``
        that took part, else the first non-empty group (gitleaks), else the match.
    :param entropy: the secret's Shannon entropy must be above this (0: no limit).
    :param check: extra code check on the secret (see :mod:`scrub_checks`).
    :param gate: a cheap regex that must find something before ``regex`` runs.
    :param lowered: ``regex`` is case-sensitive and written in lower case; it runs on
        the lower-cased text (faster than ``IGNORECASE``, same result).
    :param origin: which rule file it came from.
    :param starts: see the attribute.
    """

    name: str
    regex: re.Pattern[str]
    keywords: tuple[str, ...] = ()
    group: int | str | None = None
    entropy: float = 0.0
    check: Check | None = None
    gate: re.Pattern[str] | None = None
    lowered: bool = False
    allow: tuple[Allowlist, ...] = ()
    origin: str = "signaldesk"
    starts: int | None = None
    """Where every match starts, relative to an occurrence of one of ``keywords``: at
    most this many characters before it (0: at the keyword), or :data:`LINE` (at the
    start of its line). Set, the regex is tried only there instead of everywhere."""


@dataclass(frozen=True, slots=True)
class RuleSet:
    """Every rule, in the order they are tried, and the allowlist for gitleaks' rules."""

    rules: tuple[Rule, ...]
    gitleaks_commit: str
    global_allow: tuple[Allowlist, ...]


def _alternation(words: list[str]) -> re.Pattern[str] | None:
    if not words:
        return None
    ordered = sorted({w.lower() for w in words}, key=len, reverse=True)
    return re.compile("|".join(re.escape(w) for w in ordered))


def _allowlist(raw: dict[str, Any]) -> Allowlist:
    regexes = raw.get("regexes") or []
    return Allowlist(
        target=raw.get("target", "secret"),
        regexes=tuple(re.compile(r, re.ASCII) for r in regexes),
        stopwords=_alternation(raw.get("stopwords") or []),
    )


def _own_rule(raw: dict[str, Any]) -> Rule:
    check_name = raw.get("check")
    if check_name is not None and check_name not in CHECKS:
        raise ValueError(f"rule {raw['id']}: unknown check {check_name!r}")
    lowered = bool(raw.get("lowered", False))
    return Rule(
        name=raw["id"],
        regex=re.compile(raw["regex"], re.ASCII),
        keywords=tuple(k.lower() for k in raw.get("keywords", ())),
        group=raw.get("group"),
        entropy=float(raw.get("entropy", 0.0)),
        check=CHECKS[check_name] if check_name is not None else None,
        gate=re.compile(raw["gate"], re.ASCII) if raw.get("gate") else None,
        lowered=lowered,
        allow=tuple(_allowlist(a) for a in raw.get("allowlists", ())),
        origin="signaldesk",
        starts=_starts(raw),
    )


def _starts(raw: dict[str, Any]) -> int | None:
    starts = raw.get("starts")
    if starts is None:
        return None
    if not raw.get("keywords"):
        raise ValueError(f"rule {raw['id']}: `starts` needs keywords")
    if starts == "keyword":
        return 0
    if starts == "line":
        return LINE
    if isinstance(starts, int) and 0 <= starts <= 200:
        return starts
    raise ValueError(f"rule {raw['id']}: `starts` is 'keyword', 'line' or 0-200, not {starts!r}")


def _gitleaks_rule(raw: dict[str, Any], starts: dict[str, Any]) -> Rule:
    return Rule(
        name=raw["id"],
        regex=re.compile(raw["regex"], re.ASCII),
        keywords=tuple(raw.get("keywords", ())),
        group=raw.get("secret_group"),
        entropy=float(raw.get("entropy", 0.0)),
        allow=tuple(_allowlist(a) for a in raw.get("allowlists", ())),
        origin="gitleaks",
        starts=_starts({**raw, "starts": starts.get(raw["id"])}),
    )


def rules_from_data(
    own: dict[str, Any], gitleaks: dict[str, Any], *, disabled: frozenset[str] = frozenset()
) -> RuleSet:
    """Build the rule set from the parsed data files (``disabled``: rule ids to leave out).

    Order (it names a redaction where findings overlap): signaldesk's vendor rules,
    gitleaks' vendor rules, signaldesk's generic rules, gitleaks' generic rules. Which
    gitleaks rules are generic, and which are switched off, the ``[gitleaks]`` table
    of ``signaldesk.toml`` says (with the reason for each).
    """
    policy = own.get("gitleaks", {})
    generic_ids = set(policy.get("generic", ()))
    off = {entry["id"] for entry in policy.get("disabled", ())} | set(disabled)
    own_rules = [(bool(r.get("generic")), _own_rule(r)) for r in own.get("rules", ())]
    theirs = [
        (r["id"] in generic_ids, _gitleaks_rule(r, policy.get("starts", {})))
        for r in gitleaks.get("rules", ())
        if r["id"] not in off
    ]
    ordered = (
        [r for g, r in own_rules if not g and r.name not in disabled]
        + [r for g, r in theirs if not g]
        + [r for g, r in own_rules if g and r.name not in disabled]
        + [r for g, r in theirs if g]
    )
    glob = gitleaks.get("allowlist") or {}
    return RuleSet(
        rules=tuple(ordered),
        gitleaks_commit=str(gitleaks.get("commit", "")),
        global_allow=(_allowlist(glob),) if glob else (),
    )


def _read(name: str) -> str:
    return resources.files("signaldesk.retrieval").joinpath(_DATA, name).read_text("utf-8")


@cache
def load_rules() -> RuleSet:
    """The shipped rule set (read and compiled once per process)."""
    return rules_from_data(tomllib.loads(_read(_OWN)), json.loads(_read(_GITLEAKS)))
