"""The scrubber measured: recall on generated secrets, false positives on real text, speed.

Run from the checkout root (shared data beside it, as for the tests)::

    python -m bench.secrets recall [--half tuning|held-out] [--per-rule 20]
    python -m bench.secrets hand [--half ...]
    python -m bench.secrets keys
    python -m bench.secrets fp [--half ...] [--show 5]
    python -m bench.secrets speed [--notes 45000] [--against 2abcf55]
    python -m bench.secrets compare            # detect-secrets beside signaldesk (if installed)
    python -m bench.secrets overlap            # own rules that gitleaks' rules already cover

Halves: generated tokens use even seeds for tuning and odd seeds held out; corpus
documents are split by a hash of their id or path (:func:`half_of`). Choices were made
on the tuning half; report the held-out half.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import types
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.secret_samples import hand_samples, key_lines, leaked, real_private_keys, rule_samples
from signaldesk.retrieval.scrub_rules import RuleSet, load_rules
from signaldesk.retrieval.scrubber import Scrubber, default_scrubber

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
HALVES = ("tuning", "held-out")


def half_of(key: str) -> str:
    """The fixed half a document belongs to (a hash of its id or path)."""
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=2).digest()
    return HALVES[digest[0] & 1]


def seeds_of(half: str, n: int) -> list[int]:
    first = 0 if half == "tuning" else 1
    return list(range(first, 2 * n, 2))


# --- recall ---------------------------------------------------------------------------------


def recall(half: str, per_rule: int, scrubber: Scrubber | None = None) -> dict[str, object]:
    """Per rule of the adopted sets: generated samples, redacted ones, recall."""
    rules = load_rules()
    scrubber = scrubber or default_scrubber()
    rows: list[dict[str, object]] = []
    for index, rule in enumerate(rules.rules):
        samples = []
        draws = 0
        for seed in seeds_of(half, 1):
            got, made = rule_samples(rules, rule, seed * 100_003 + index, count=per_rule)
            samples += got
            draws += made
        missed = [
            s for s in samples if leaked(s.secret, scrubber.scrub(s.document).text, s.document)
        ]
        rows.append(
            {
                "rule": rule.name,
                "origin": rule.origin,
                "samples": len(samples),
                "draws": draws,
                "leaked": len(missed),
                "recall": 1 - len(missed) / len(samples) if samples else None,
                "example": missed[0].document[:160] if missed else "",
            }
        )
    covered = [r for r in rows if r["samples"]]
    worst = sorted(covered, key=lambda r: r["recall"])  # type: ignore[arg-type,return-value]
    return {
        "half": half,
        "rules": len(rows),
        "rules_sampled": len(covered),
        "rules_without_samples": [r["rule"] for r in rows if not r["samples"]],
        "samples": sum(int(r["samples"]) for r in rows),  # type: ignore[call-overload]
        "leaked": sum(int(r["leaked"]) for r in rows),  # type: ignore[call-overload]
        "rules_below_99": [r for r in covered if r["recall"] < 0.99],  # type: ignore[operator]
        "min_recall": worst[0]["recall"] if worst else None,
    }


def hand(half: str, per_case: int) -> list[dict[str, object]]:
    scrubber = default_scrubber()
    tally: dict[str, list[int]] = {}
    examples: dict[str, str] = {}
    for seed in seeds_of(half, 1):
        for case, document, secret in hand_samples(seed, per_case):
            counts = tally.setdefault(case.name, [0, 0])
            counts[0] += 1
            out = scrubber.scrub(document).text
            if leaked(secret, out, document, window=min(10, len(secret))):
                counts[1] += 1
                examples.setdefault(case.name, out.strip()[:140])
    return [
        {"case": name, "samples": n, "leaked": bad, "example": examples.get(name, "")}
        for name, (n, bad) in tally.items()
    ]


def keys() -> list[dict[str, object]]:
    scrubber = default_scrubber()
    rows = []
    for kind, key in real_private_keys():
        lines = key_lines(key)
        for place, document in (
            ("alone", key),
            ("in a note", f"# Server\n\nThe deploy key:\n\n```\n{key}\n```\n\nRotate yearly.\n"),
            ("no END line", key.split("-----END")[0] if "-----END" in key else key),
            ("quoted", "\n".join("> " + line for line in key.splitlines())),
        ):
            out = scrubber.scrub(document).text
            rows.append(
                {
                    "kind": kind,
                    "place": place,
                    "lines": len(lines),
                    "leaked_lines": sum(1 for line in lines if line in out),
                    "line_count_kept": out.count("\n") == document.count("\n"),
                }
            )
    return rows


def overlap(per_rule: int) -> list[dict[str, object]]:
    """For each own rule: how many of its generated tokens gitleaks' rules alone redact.

    An own vendor rule at ``per_rule`` of ``per_rule`` adds nothing and was removed
    (the comment at the top of ``secret_rules/signaldesk.toml``).
    """
    rules = load_rules()
    theirs = Scrubber(
        RuleSet(
            tuple(r for r in rules.rules if r.origin == "gitleaks"),
            rules.gitleaks_commit,
            rules.global_allow,
        )
    )
    rows = []
    for index, rule in enumerate(rules.rules):
        if rule.origin != "signaldesk":
            continue
        samples, _ = rule_samples(rules, rule, index, count=per_rule)
        caught = [
            s for s in samples if not leaked(s.secret, theirs.scrub(s.document).text, s.document)
        ]
        rows.append({"rule": rule.name, "samples": len(samples), "gitleaks_redacts": len(caught)})
    return rows


# --- false positives ------------------------------------------------------------------------


def _scifact() -> Iterator[tuple[str, str, str]]:
    with (SHARED / "scifact" / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            yield "scifact", str(doc["_id"]), f"{doc['title']}\n\n{doc['text']}"


def _tarball(name: str) -> Iterator[tuple[str, str, str]]:
    with tarfile.open(SHARED / "vaults" / f"{name}.tar.gz") as archive:
        for member in archive:
            if member.isfile() and member.name.endswith(".md"):
                handle = archive.extractfile(member)
                if handle is not None:
                    text = handle.read().decode("utf-8", errors="replace")
                    yield name, member.name, text


def _articles() -> Iterator[tuple[str, str, str]]:
    for path in sorted((SHARED / "articles" / "html").glob("*")):
        yield "articles", path.name, path.read_text(encoding="utf-8", errors="replace")


def _mails() -> Iterator[tuple[str, str, str]]:
    for path in sorted((SHARED / "emails" / "mails").glob("*")):
        if path.is_file():
            yield "emails", path.name, path.read_text(encoding="utf-8", errors="replace")


CORPORA: dict[str, Callable[[], Iterator[tuple[str, str, str]]]] = {
    "scifact": _scifact,
    "obsidian-hub": lambda: _tarball("obsidian-hub"),
    "tldr-pages": lambda: _tarball("tldr-pages"),
    "articles": _articles,
    "emails": _mails,
}


def false_positives(
    half: str, show: int, scan: Callable[[str], dict[str, int]] | None = None
) -> dict[str, dict[str, object]]:
    """Per corpus: documents of the half, documents with a redaction, redactions per rule."""
    if scan is None:
        scrubber = default_scrubber()

        def scan(text: str) -> dict[str, int]:
            return scrubber.scrub(text).findings

    report: dict[str, dict[str, object]] = {}
    for corpus, documents in CORPORA.items():
        total = flagged = 0
        by_rule: Counter[str] = Counter()
        examples: list[str] = []
        for _, key, text in documents():
            if half != "all" and half_of(key) != half:
                continue
            total += 1
            findings = scan(text)
            if findings:
                flagged += 1
                by_rule.update(findings)
                if len(examples) < show:
                    examples.append(key)
        report[corpus] = {
            "documents": total,
            "flagged": flagged,
            "redactions": sum(by_rule.values()),
            "by_rule": dict(by_rule.most_common()),
            "examples": examples,
        }
    return report


# --- speed ----------------------------------------------------------------------------------


def _notes(limit: int) -> list[str]:
    texts = [text for name in ("obsidian-hub", "tldr-pages") for _, _, text in CORPORA[name]()]
    return texts[:limit]


def speed(
    limit: int, repeats: int, scan: Callable[[str], object] | None = None
) -> dict[str, float]:
    texts = _notes(limit)
    scan = scan or default_scrubber().scrub
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for text in texts:
            scan(text)
        times.append(time.perf_counter() - start)
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    median = statistics.median(times)
    return {
        "notes": len(texts),
        "megabytes": round(megabytes, 1),
        "median_s": round(median, 2),
        "notes_per_s": round(len(texts) / median),
        "mb_per_s": round(megabytes / median, 2),
        "load_average": round(os.getloadavg()[0], 2),
    }


def speed_against(commit: str, limit: int, repeats: int) -> dict[str, object]:
    """:func:`speed` of the scrubber at ``commit`` (read with ``git show``) and of this one,
    alternately, so both see the same machine load."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:retrieval/scrubber.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    module = types.ModuleType("baseline_scrubber")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{commit}:retrieval/scrubber.py", "exec"), module.__dict__)
    rows: dict[str, list[dict[str, float]]] = {"baseline": [], "current": []}
    for _ in range(repeats):
        rows["baseline"].append(speed(limit, 1, module.scrub))
        rows["current"].append(speed(limit, 1))
    return {
        name: {
            "median_s": statistics.median(r["median_s"] for r in runs),
            "load_average": [r["load_average"] for r in runs],
        }
        for name, runs in rows.items()
    } | {"baseline_commit": commit, "notes": rows["current"][0]["notes"]}


# --- detect-secrets -------------------------------------------------------------------------


class _DetectSecrets:
    """detect-secrets (Yelp) as its CLI runs it: default plugins and filters, one file."""

    def __init__(self, folder: Path) -> None:
        from detect_secrets.settings import default_settings  # type: ignore[import-not-found]

        self._settings = default_settings()
        self._settings.__enter__()  # the default plugins, for the whole run
        self._file = folder / "note.md"

    def findings(self, text: str) -> list[tuple[int, str, str]]:
        """(line number, plugin, reported value) of everything it flags in ``text``."""
        from detect_secrets import SecretsCollection  # type: ignore[import-not-found]

        self._file.write_text(text, encoding="utf-8")
        collection = SecretsCollection()
        collection.scan_file(str(self._file))
        return [(s.line_number, s.type, s.secret_value or "") for _, s in collection]

    def counts(self, text: str) -> dict[str, int]:
        return dict(Counter(kind for _, kind, _ in self.findings(text)))

    def caught(self, document: str, secret: str) -> tuple[bool, bool]:
        """(a line holding the secret is flagged, a reported value covers the secret)."""
        start = document.find(secret)
        first = document.count("\n", 0, start) + 1
        last = first + secret.count("\n")
        found = self.findings(document)
        line = any(first <= n <= last for n, _, _ in found)
        value = any(len(v) >= len(secret) // 2 and (v in secret or secret in v) for *_, v in found)
        return line, value


def compare(half: str, per_rule: int, limit: int, every: int) -> dict[str, object]:
    """detect-secrets beside signaldesk's scrubber on the same material."""
    try:
        import detect_secrets  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return {"error": "detect-secrets is not installed (pip install detect-secrets)"}
    with tempfile.TemporaryDirectory() as tmp:
        tool = _DetectSecrets(Path(tmp))
        rules = load_rules()
        tally: Counter[str] = Counter()
        for index, rule in enumerate(rules.rules):
            for seed in seeds_of(half, 1):
                samples, _ = rule_samples(rules, rule, seed * 100_003 + index, count=per_rule)
                for sample in samples:
                    line, value = tool.caught(sample.document, sample.secret)
                    tally[f"{rule.origin}:samples"] += 1
                    tally[f"{rule.origin}:line"] += line
                    tally[f"{rule.origin}:value"] += value
        hand_total = hand_line = hand_value = 0
        for seed in seeds_of(half, 1):
            for _, document, secret in hand_samples(seed, 5):
                line, value = tool.caught(document, secret)
                hand_total += 1
                hand_line += line
                hand_value += value
        recall = {
            origin: {
                "samples": tally[f"{origin}:samples"],
                "line_flagged": round(tally[f"{origin}:line"] / tally[f"{origin}:samples"], 4),
                "value_found": round(tally[f"{origin}:value"] / tally[f"{origin}:samples"], 4),
            }
            for origin in ("gitleaks", "signaldesk")
            if tally[f"{origin}:samples"]
        }
        recall["hand"] = {
            "samples": hand_total,
            "line_flagged": round(hand_line / hand_total, 4),
            "value_found": round(hand_value / hand_total, 4),
        }
        texts = _notes(limit)[::every]
        start = time.perf_counter()
        for text in texts:
            tool.counts(text)
        elapsed = time.perf_counter() - start
        return {
            "generated_and_hand_recall": recall,
            "false_positives": false_positives(half, 0, tool.counts),
            "speed": {
                "notes_timed": len(texts),
                "seconds": round(elapsed, 1),
                "projected_s_for_45k": round(elapsed / len(texts) * 45_000),
                "load_average": round(os.getloadavg()[0], 2),
            },
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "what", choices=("recall", "hand", "keys", "fp", "speed", "compare", "overlap")
    )
    parser.add_argument("--half", choices=(*HALVES, "all"), default="held-out")
    parser.add_argument("--per-rule", type=int, default=20)
    parser.add_argument("--show", type=int, default=3)
    parser.add_argument("--notes", type=int, default=45_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--every", type=int, default=10, help="compare: time every Nth note")
    parser.add_argument("--against", help="speed: also time the scrubber of this git commit")
    args = parser.parse_args(argv)
    half = args.half if args.half != "all" else "held-out"
    result: object
    if args.what == "recall":
        result = recall(half, args.per_rule)
    elif args.what == "hand":
        result = hand(half, args.per_rule)
    elif args.what == "keys":
        result = keys()
    elif args.what == "fp":
        result = false_positives(args.half, args.show)
    elif args.what == "overlap":
        result = overlap(args.per_rule)
    elif args.what == "speed" and args.against:
        result = speed_against(args.against, args.notes, args.repeats)
    elif args.what == "speed":
        result = speed(args.notes, args.repeats)
    else:
        result = compare(half, args.per_rule, args.notes, args.every)
    print(f"# python -m bench.secrets {' '.join(argv if argv is not None else sys.argv[1:])}")
    print(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        sys.exit(main())
