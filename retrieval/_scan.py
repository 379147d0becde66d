"""The cheap part of an incremental run: stat the vault and compare with the index.

Only ``mtime_ns`` and ``size`` are compared here; a file whose stat changed is
read and hashed later, and only re-chunked when its content hash changed too.
"""

from __future__ import annotations

import logging
import os
import stat as _stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from signaldesk.retrieval.ignore import VaultFilter, iter_vault_notes
from signaldesk.retrieval.store import Connection
from signaldesk.vault import printable_path

__all__ = [
    "Known",
    "ScanPlan",
    "known_hashes",
    "load_known",
    "normalise_path",
    "plan_paths",
    "plan_vault",
]

logger = logging.getLogger(__name__)


# What the index remembers about one file: (mtime_ns, size, skipped). A plain
# tuple because a 45k-note vault builds 45k of them on every run, no-op included.
Known = tuple[int, int, bool]


@dataclass(slots=True)
class ScanPlan:
    """The work an indexing run has to do.

    :param candidates: files that are new, or whose stat (or the index format) changed.
    :param deleted: indexed files that are gone or now excluded.
    """

    scanned: int = 0
    unchanged: int = 0
    candidates: list[tuple[str, os.stat_result]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def load_known(conn: Connection) -> dict[str, Known]:
    """Every file the index knows, indexed (``skipped`` false) or deliberately skipped."""
    rows = conn.execute(
        "SELECT path, mtime_ns, size, 0 FROM notes UNION ALL "
        "SELECT path, mtime_ns, size, 1 FROM skipped"
    ).fetchall()
    return {path: (mtime_ns, size, bool(skipped)) for path, mtime_ns, size, skipped in rows}


def known_hashes(conn: Connection, paths: list[str]) -> dict[str, str]:
    """The stored content hash of each of ``paths`` that is an indexed note."""
    hashes: dict[str, str] = {}
    for start in range(0, len(paths), 500):
        part = paths[start : start + 500]
        marks = ",".join("?" * len(part))
        hashes.update(
            conn.execute(
                f"SELECT path, content_hash FROM notes WHERE path IN ({marks})", part
            ).fetchall()
        )
    return hashes


def plan_vault(vault: Path, known: dict[str, Known], *, force: bool) -> ScanPlan:
    """Compare the whole vault with ``known``; ``force`` makes every file a candidate.

    A folder (or file) that cannot be read is not a deletion: what the index holds
    under it is kept as it is, and the plan says so once per unreadable place.
    """
    plan = ScanPlan()
    vault_filter = VaultFilter(vault)
    seen: set[str] = set()
    unreadable: list[tuple[str, OSError]] = []
    for rel, stat in iter_vault_notes(
        vault, vault_filter, on_unreadable=lambda rel, exc: unreadable.append((rel, exc))
    ):
        plan.scanned += 1
        seen.add(rel)
        entry = known.get(rel)
        if not force and _same_stat(entry, stat):
            plan.unchanged += 1
        else:
            plan.candidates.append((rel, stat))
    missing = [path for path in known if path not in seen]
    for place, exc in unreadable:
        kept = [p for p in missing if _under(p, place)]
        if kept:
            seen.update(kept)
            plan.unchanged += sum(1 for p in kept if not known[p][2])
        what = "folder" if place.endswith("/") or not place else "file"
        kept_said = f"; its {len(kept)} indexed note(s) are kept as they are" if kept else ""
        plan.errors.append(
            f"{place or '.'}: {what} cannot be read ({exc.strerror or exc}){kept_said}"
        )
    plan.deleted = [path for path in missing if path not in seen]
    return plan


def _under(path: str, place: str) -> bool:
    """Whether the vault-relative ``path`` is ``place`` or lies in the folder ``place``."""
    if not place:
        return True  # the vault root itself
    return path.startswith(place) if place.endswith("/") else path == place


def plan_paths(
    vault: Path, known: dict[str, Known], paths: Iterable[str], *, force: bool
) -> ScanPlan:
    """Like :func:`plan_vault` but only for ``paths`` (vault-relative or absolute inside it).

    A listed path that no longer exists, or is excluded, is removed from the index.
    """
    plan = ScanPlan()
    vault_filter = VaultFilter(vault)
    done: set[str] = set()
    for raw in paths:
        rel = normalise_path(vault, raw)
        if rel is None:
            plan.errors.append(f"{printable_path(str(raw))}: not a path inside the vault")
            continue
        if printable_path(rel) != rel:
            plan.errors.append(f"{printable_path(rel)}: its name is not valid UTF-8: rename it")
            continue
        if rel in done:
            continue
        done.add(rel)
        entry = known.get(rel)
        try:
            stat = (vault / rel).stat()
        except FileNotFoundError:
            stat = None
        except OSError as exc:
            plan.errors.append(f"{rel}: {exc.strerror or exc}")
            continue
        excluded = not rel.lower().endswith(".md") or vault_filter.excluded(rel)
        if stat is None or excluded or not _is_regular(stat):
            if entry is not None:
                plan.deleted.append(rel)
            continue
        plan.scanned += 1
        if not force and _same_stat(entry, stat):
            plan.unchanged += 1
        else:
            plan.candidates.append((rel, stat))
    return plan


def normalise_path(vault: Path, raw: str | os.PathLike[str]) -> str | None:
    """``raw`` as a '/'-separated vault-relative path, or ``None`` when it is outside."""
    path = Path(raw)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(vault.resolve())
        except ValueError:
            return None
    parts = PurePosixPath(path.as_posix()).parts
    if not parts or any(part in {"..", ""} for part in parts):
        return None
    cleaned = [part for part in parts if part != "."]
    return "/".join(cleaned) if cleaned else None


def _is_regular(stat: os.stat_result) -> bool:
    return _stat.S_ISREG(stat.st_mode)


def _same_stat(entry: Known | None, stat: os.stat_result) -> bool:
    """The file's mtime and size are what the index recorded (so it is not read)."""
    return entry is not None and entry[0] == stat.st_mtime_ns and entry[1] == stat.st_size
