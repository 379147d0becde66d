"""Assign the tuning / held-out split once: ``python -m bench.triage.split``.

Each labelled set (the first, then ``fresh`` to ``fresh9``, each labelled after the one
before it) is split on its own. Within each (set, domain, label)
group the items are ordered by the sha256 of their id and dealt alternately to ``tuning``
and ``heldout``, the group's first item going to the half of that set that has fewer so
far, so both halves see every domain and both labels. An item that already has a split
keeps it: running this again only places items added since.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

LABELS = Path(__file__).resolve().parent / "labels.jsonl"
SPLITS = ("tuning", "heldout")


def _hash(item_id: str) -> str:
    return hashlib.sha256(item_id.encode("utf-8")).hexdigest()


def _set(row: dict[str, object]) -> str:
    return str(row.get("set", "first"))


def _group(row: dict[str, object]) -> tuple[str, str, bool]:
    return (_set(row), str(row["domain"]), bool(row["file"]))


def assign(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Rows with a ``split``; existing splits are kept."""
    groups: dict[tuple[str, str, bool], list[dict[str, object]]] = defaultdict(list)
    for row in rows:
        if row.get("split") not in SPLITS:
            groups[_group(row)].append(row)
    totals = Counter((_set(row), str(row["split"])) for row in rows if row.get("split") in SPLITS)
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda r: _hash(str(r["id"])))
        placed = Counter(
            str(r["split"]) for r in rows if r.get("split") in SPLITS and _group(r) == key
        )
        for row in members:
            # The half with fewer of this group (then fewer of its set) gets the next one.
            half = min(SPLITS, key=lambda s: (placed[s], totals[(key[0], s)], s))
            row["split"] = half
            placed[half] += 1
            totals[(key[0], half)] += 1
    return rows


def main() -> int:
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line]
    assign(rows)
    LABELS.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    counts = Counter((_set(r), str(r["split"]), bool(r["file"])) for r in rows)
    for name in sorted({_set(r) for r in rows}):
        for half in SPLITS:
            print(
                f"{name} {half}: {counts[(name, half, True)]} file, "
                f"{counts[(name, half, False)]} reject"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
