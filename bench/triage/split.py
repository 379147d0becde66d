"""Assign the tuning / held-out split once: ``python -m bench.triage.split``.

Within each (domain, label) group the items are ordered by the sha256 of their id and
dealt alternately to ``tuning`` and ``heldout``, the group's first item going to the half
that has fewer so far, so both halves see every domain and both labels. An item that already
has a split keeps it: running this again only places items added since.
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


def assign(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Rows with a ``split``; existing splits are kept."""
    groups: dict[tuple[str, bool], list[dict[str, object]]] = defaultdict(list)
    for row in rows:
        if row.get("split") not in SPLITS:
            groups[(str(row["domain"]), bool(row["file"]))].append(row)
    totals = Counter(str(row["split"]) for row in rows if row.get("split") in SPLITS)
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda r: _hash(str(r["id"])))
        placed = Counter(
            str(r["split"])
            for r in rows
            if r.get("split") in SPLITS and (str(r["domain"]), bool(r["file"])) == key
        )
        for row in members:
            # The half with fewer of this group (then fewer overall) gets the next one.
            half = min(SPLITS, key=lambda s: (placed[s], totals[s], s))
            row["split"] = half
            placed[half] += 1
            totals[half] += 1
    return rows


def main() -> int:
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line]
    assign(rows)
    LABELS.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    counts = Counter((str(r["split"]), bool(r["file"])) for r in rows)
    for half in SPLITS:
        print(f"{half}: {counts[(half, True)]} file, {counts[(half, False)]} reject")
    return 0


if __name__ == "__main__":
    sys.exit(main())
