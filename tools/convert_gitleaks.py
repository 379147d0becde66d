"""Convert gitleaks' rule set (``config/gitleaks.toml``, MIT) into the scrubber's data file.

The rules are data: this tool rewrites each regex from Go's RE2 syntax into Python
``re`` syntax by fixed, mechanical steps and writes
``retrieval/secret_rules/gitleaks.json``. No gitleaks program code is used; the
licence is kept beside the data (``retrieval/secret_rules/LICENSE.gitleaks``).

Usage (from the checkout root; ``fetch`` a gitleaks clone first)::

    git -C <gitleaks-clone> show <commit>:config/gitleaks.toml > /tmp/gitleaks.toml
    python tools/convert_gitleaks.py /tmp/gitleaks.toml --commit <commit>
    python tools/convert_gitleaks.py /tmp/gitleaks.toml --commit <commit> --check

The steps, in order (each one is named in the output's ``conversion`` list):

1. ``prose-terminator``: gitleaks ends most rules with a consuming group that wants a
   quote, whitespace, ``;`` or the end after the token. Notes are prose, where a token
   is followed by ``.``, ``,`` or ``)``; the group becomes a look-ahead that refuses
   only characters that would continue the token (letters, digits, ``_ - + / =``).
   This is the one deliberate change of meaning, and it only widens what matches.
2. ``drop-leading-context``: a leading ``[\\w.-]{0,50}?`` (the identifier before a
   keyword) only moves where a match starts, never which secret it captures; dropping
   it saves Python's backtracking engine 50 steps at every position of a note.
3. ``scoped-flags``: Python wants inline flags at the start; RE2's ``(?i)`` in the
   middle applies to the rest of its group (across ``|``), so it becomes ``(?i:...)``
   around what follows, closed and reopened at each ``|`` of that group.
4. ``posix-classes``: ``[[:alnum:]]`` and friends become explicit ranges.
5. ``end-of-text``: ``\\z`` becomes ``\\Z``.
6. ``literal-in-class``: a ``[`` inside a character class, and the doubled ``--``
   ``&&`` ``||`` ``~~`` there, are escaped (Python reserves them for set operations).

Every converted regex must compile with ``re.ASCII`` (RE2's ``\\w \\d \\s \\b`` are
ASCII) and without warnings, or the tool fails.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "retrieval" / "secret_rules" / "gitleaks.json"
UPSTREAM = "https://github.com/gitleaks/gitleaks"

# Rules that look at file names only (no regex): nothing to find in note text.
PATH_ONLY = "path-only rule (a file name, not text)"

_TERMINATOR = "(?:[\\x60'\"\\s;]|\\\\[nr]|$)"
_PROSE_TERMINATOR = "(?![A-Za-z0-9_+/=-])"
_LEADING_CONTEXT = "[\\w.-]{0,50}?"
_POSIX = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "xdigit": "0-9a-fA-F",
    "upper": "A-Z",
    "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v",
    "word": "a-zA-Z0-9_",
    "punct": "!-/:-@\\[-`{-~",
}
_FLAG_GROUP = re.compile(r"\(\?([imsU]+)\)")


def convert_regex(source: str) -> tuple[str, list[str]]:
    """``source`` (RE2) rewritten for Python ``re``, and the names of the steps applied."""
    steps: list[str] = []
    pattern = source
    if _TERMINATOR in pattern:
        pattern = pattern.replace(_TERMINATOR, _PROSE_TERMINATOR)
        steps.append("prose-terminator")
    for head in ("", "(?i)"):
        if pattern.startswith(head + _LEADING_CONTEXT):
            pattern = head + pattern[len(head) + len(_LEADING_CONTEXT) :]
            steps.append("drop-leading-context")
            break
    rewritten = _rewrite(pattern, steps)
    return rewritten, steps


def _rewrite(pattern: str, steps: list[str]) -> str:
    """One pass over the pattern: classes, escapes, groups and inline flags."""
    out: list[str] = []
    # For each open group: how many "(?flags:" wrappers are open inside it, and which flags.
    groups: list[list[str]] = [[]]
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            escape = pattern[i : i + 2]
            if escape == "\\z":
                out.append("\\Z")
                steps.append("end-of-text")
            else:
                out.append(escape)
            i += 2
            continue
        if c == "[":
            end, text = _rewrite_class(pattern, i, steps)
            out.append(text)
            i = end
            continue
        if c == "(":
            flag = _FLAG_GROUP.match(pattern, i)
            if flag is not None and i > 0:
                if "U" in flag.group(1):
                    raise ValueError(f"ungreedy flag has no Python equivalent: {pattern!r}")
                out.append(f"(?{flag.group(1)}:")
                groups[-1].append(flag.group(1))
                steps.append("scoped-flags")
                i = flag.end()
                continue
            groups.append([])
            out.append(c)
            i += 1
            continue
        if c == "|":
            scoped = groups[-1]
            out.append(")" * len(scoped) + "|" + "".join(f"(?{f}:" for f in scoped))
            i += 1
            continue
        if c == ")":
            scoped = groups.pop()
            out.append(")" * len(scoped) + ")")
            i += 1
            continue
        out.append(c)
        i += 1
    if len(groups) != 1:
        raise ValueError(f"unbalanced parentheses: {pattern!r}")
    out.append(")" * len(groups[0]))
    return "".join(out)


def _rewrite_class(pattern: str, start: int, steps: list[str]) -> tuple[int, str]:
    """The character class opening at ``start``: (index after it, its Python spelling)."""
    i = start + 1
    out = ["["]
    if i < len(pattern) and pattern[i] == "^":
        out.append("^")
        i += 1
    if i < len(pattern) and pattern[i] == "]":  # a leading ']' is literal in both
        out.append("\\]")
        i += 1
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[":
            posix = re.match(r"\[:(\^?)([a-z]+):\]", pattern[i:])
            if posix is not None:
                if posix.group(1):
                    raise ValueError(f"negated POSIX class: {pattern!r}")
                out.append(_POSIX[posix.group(2)])
                steps.append("posix-classes")
                i += posix.end()
                continue
            out.append("\\[")
            steps.append("literal-in-class")
            i += 1
            continue
        if c == "]":
            out.append("]")
            return i + 1, "".join(out)
        if c in "-&|~" and pattern[i + 1 : i + 2] == c:
            out.append(c + "\\" + c)
            steps.append("literal-in-class")
            i += 2
            continue
        out.append(c)
        i += 1
    raise ValueError(f"unterminated character class: {pattern!r}")


def compile_checked(pattern: str) -> re.Pattern[str]:
    """Compile as the scrubber does; a warning is an error here."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return re.compile(pattern, re.ASCII)


def _allowlists(raw: list[dict[str, Any]], steps: list[str]) -> list[dict[str, Any]]:
    converted: list[dict[str, Any]] = []
    for allow in raw:
        entry: dict[str, Any] = {"target": allow.get("regexTarget", "secret")}
        if allow.get("description"):
            entry["description"] = allow["description"]
        if allow.get("condition", "OR").upper() == "AND" and allow.get("paths"):
            # Path conditions never hold for a note's text: the allowlist cannot apply.
            continue
        regexes = []
        for source in allow.get("regexes", []):
            pattern, _ = convert_regex(source)
            compile_checked(pattern)
            regexes.append(pattern)
        if regexes:
            entry["regexes"] = regexes
        if allow.get("stopwords"):
            entry["stopwords"] = [w.lower() for w in allow["stopwords"]]
        if "regexes" in entry or "stopwords" in entry:
            converted.append(entry)
    return converted


def convert(config: dict[str, Any], commit: str) -> dict[str, Any]:
    """The data file's content for a parsed ``gitleaks.toml``."""
    rules: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for rule in config["rules"]:
        if "regex" not in rule:
            skipped.append({"id": rule["id"], "reason": PATH_ONLY})
            continue
        steps: list[str] = []
        pattern, steps = convert_regex(rule["regex"])
        compiled = compile_checked(pattern)
        entry: dict[str, Any] = {
            "id": rule["id"],
            "description": rule["description"],
            "regex": pattern,
            "upstream_regex": rule["regex"],
            "conversion": sorted(set(steps)),
            "keywords": [k.lower() for k in rule.get("keywords", [])],
        }
        if "entropy" in rule:
            entry["entropy"] = rule["entropy"]
        if "secretGroup" in rule:
            entry["secret_group"] = rule["secretGroup"]
        if "path" in rule:
            # Applied to every note: a pasted .tf, .yaml or nuget.config is still a secret.
            entry["upstream_path"] = rule["path"]
        allow = _allowlists(rule.get("allowlists", []), steps)
        if allow:
            entry["allowlists"] = allow
        if compiled.groups == 0 and "secret_group" not in entry:
            entry["secret_group"] = 0
        rules.append(entry)
    glob = config.get("allowlist", {})
    global_allow = _allowlists(
        [{"regexes": glob.get("regexes", []), "stopwords": glob.get("stopwords", [])}], []
    )
    return {
        "source": UPSTREAM,
        "path": "config/gitleaks.toml",
        "commit": commit,
        "license": "MIT (see LICENSE.gitleaks)",
        "converted_by": "tools/convert_gitleaks.py",
        "min_version": config.get("minVersion", ""),
        "allowlist": global_allow[0] if global_allow else {},
        "rules": rules,
        "skipped": skipped,
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("toml", type=Path, help="gitleaks' config/gitleaks.toml")
    parser.add_argument("--commit", required=True, help="the upstream commit it came from")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="exit 1 if the output is stale")
    args = parser.parse_args(argv)
    with args.toml.open("rb") as handle:
        config = tomllib.load(handle)
    text = render(convert(config, args.commit))
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale; rerun without --check", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {len(json.loads(text)['rules'])} rules to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
