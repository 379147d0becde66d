"""What went wrong with the ledger, in words a person can act on.

Unlike the index, the ledger is not a cache, so each fault is named for what it is: a
full disk, a read-only folder, a damaged file, one that cannot be opened.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from signaldesk.faults import (
    cannot_write_in,
    is_corruption_error,
    is_disk_full_error,
    is_read_only_error,
)
from signaldesk.pipeline.errors import LedgerError

__all__ = ["first_sqlite_error", "ledger_error"]


def _why_read_only(exc: BaseException, path: Path) -> str:
    if "unable to open" in str(exc).lower():
        return f"{path.parent} is read-only for this user or on a read-only file system"
    return str(exc)


def ledger_error(exc: BaseException, path: Path) -> LedgerError:
    """A message a person can act on for a failed ledger operation.

    Unlike the index, the ledger is not a cache: a damaged one is never replaced
    silently, and a full disk or a read-only folder is reported as what it is.
    """
    if is_disk_full_error(exc):
        return LedgerError(
            f"the ledger {path} cannot be written: the disk is full ({exc})",
            hint="free some space on that disk and run the command again; the ledger keeps "
            "what was done, and the next run resumes where this one stopped",
        )
    if is_read_only_error(exc) or (
        "unable to open" in str(exc).lower() and cannot_write_in(path.parent)
    ):
        return LedgerError(
            f"the ledger {path} cannot be written ({_why_read_only(exc, path)})",
            hint=f"make {path.parent} and the files in it writable for this user "
            "(searching a read-only vault needs no ledger: `signaldesk search`, `mcp`)",
        )
    if is_corruption_error(exc):
        return LedgerError(
            f"the ledger {path} is damaged ({exc})",
            hint=f"keep a copy and move it aside (mv {path.name} {path.name}.damaged); "
            "signaldesk then starts a new ledger. The notes in the vault are not affected, "
            "but items seen before may be taken in again",
        )
    if "unable to open" in str(exc).lower() or isinstance(exc, OSError):
        return LedgerError(
            f"cannot open the ledger {path}: {exc}",
            hint="check that the file and its folder exist and are readable and writable "
            "for this user",
        )
    return LedgerError(f"the ledger {path} failed: {exc}")


def first_sqlite_error(group: BaseExceptionGroup[BaseException]) -> sqlite3.Error | None:
    for exc in group.exceptions:
        if isinstance(exc, sqlite3.Error):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = first_sqlite_error(exc)
            if found is not None:
                return found
    return None
