"""Telling apart the faults of the machine a person can fix: a full disk, a file size
limit, a read-only file system or permissions, a damaged database file.

SQLite reports them in words rather than types (and two SQLite modules are in use:
the standard one for the ledger, sqlean's for the index), so the checks read the
message as well as ``errno``. Each layer turns a match into its own error with a hint.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

__all__ = [
    "cannot_write_in",
    "is_corruption_error",
    "is_disk_full_error",
    "is_machine_fault",
    "is_read_only_error",
]

_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".lower()


def is_disk_full_error(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk, a quota or ``ulimit -f`` ran out.

    SQLite reports a short write caused by ``ulimit -f`` (EFBIG) as "disk I/O error".
    """
    if isinstance(exc, OSError) and exc.errno in _DISK_FULL_ERRNOS:
        return True
    text = _text(exc)
    return "database or disk is full" in text or "disk i/o error" in text


def is_read_only_error(exc: BaseException) -> bool:
    """Whether ``exc`` says a file or its folder cannot be written (EROFS, permissions)."""
    if isinstance(exc, OSError) and exc.errno in _READ_ONLY_ERRNOS:
        return True
    text = _text(exc)
    return "readonly database" in text or "read-only file system" in text


def cannot_write_in(folder: Path) -> bool:
    """Whether new files cannot be made in ``folder``: a read-only file system or mount,
    or a folder this user may not write.

    Why: on a read-only file system SQLite opens the database read-only without a
    word and fails later, when it needs its ``-shm`` file, with a bare "unable to open
    database file" that names neither cause nor file.
    """
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return True
    except OSError:
        return False  # the folder is missing or unreachable: not a read-only fault
    return not os.access(folder, os.W_OK)


def is_corruption_error(exc: BaseException) -> bool:
    """Whether ``exc`` says a file is not a usable SQLite database.

    Both the standard module's and sqlean's ``DatabaseError`` qualify (they are
    distinct classes); "database is locked" and other operational errors do not.
    """
    if type(exc).__name__ not in {"DatabaseError", "IntegrityError"}:
        return False
    text = str(exc).lower()
    return any(
        marker in text for marker in ("not a database", "malformed", "corrupt", "file is encrypted")
    )


def is_machine_fault(exc: BaseException) -> bool:
    """A fault of the machine rather than of one input: a full disk, a read-only file
    system or database, a damaged database file.

    Code that isolates one bad item or source from the others must let these through:
    the next item would fail the same way, and the person needs one clear message, not
    a scan that "succeeds" having taken in nothing. (A file the user cannot read is
    not one of them: that is a problem of that file.)
    """
    if isinstance(exc, PermissionError):
        return False
    if is_disk_full_error(exc) or is_corruption_error(exc):
        return True
    if isinstance(exc, OSError):
        return exc.errno == errno.EROFS
    return is_read_only_error(exc)
