"""Index generations: a full rebuild is written beside the live index and swapped in at once.

Files, for the configured ``db_path`` ``.signaldesk/index.db``:

* ``index.db`` — the first generation (an index built before this scheme, or a vault
  whose index was never rebuilt in full);
* ``index-<n>.db`` — the generation a full rebuild wrote (``n`` only grows, so a
  name is never reused);
* ``index.db.current`` — the pointer: one line naming the live generation,
  replaced atomically (temporary file, fsync, rename). No pointer: ``index.db``;
* ``<generation>.readers`` — a lease file: every reader holds a shared ``flock``
  on it while it has connections to that generation.

Why not rename the new database over the old one: in WAL mode SQLite keeps a
database's ``-wal`` and ``-shm`` files under names derived from its path. A
reader still holding the old file and a reader opening the new one under the
same name would share one ``index.db-wal`` for two different databases, which
corrupts both. Generation names are never reused, so that cannot happen.

Why leases: a generation may only be deleted once no reader has it open (a
connection that has not yet opened its ``-wal`` would otherwise read a partly
checkpointed file without it). The writer deletes a stale generation only while
it holds the lease file exclusively, and a reader that takes its shared lease
checks afterwards that the lease file and the database still exist (the writer
unlinks both before it lets go), so neither can act on what the other removed.
``flock`` locks belong to the open file, so a killed reader never leaves a lease
behind.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import re
import time
from pathlib import Path

from signaldesk.retrieval.errors import StoreError
from signaldesk.vault import atomic_write_text

__all__ = [
    "ReaderLease",
    "discard",
    "generation_number",
    "lease_path",
    "new_generation",
    "pointer_path",
    "pointer_token",
    "publish",
    "read_pointer",
    "remove_stale",
    "seed_generation",
]

logger = logging.getLogger(__name__)

_POINTER_SUFFIX = ".current"
_LEASE_SUFFIX = ".readers"
# What SQLite may create beside a database (rollback journal included: a database
# opened before WAL was switched on).
_COMPANIONS = ("-wal", "-shm", "-journal", ".vectors")  # .vectors: vector_cache.py
_POINTER_MAX_BYTES = 4096
_READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
# How often a reader retries when the pointer moved while it was taking its lease.
_LEASE_TRIES = 5


def pointer_path(base: Path) -> Path:
    """The pointer file of the index whose configured path is ``base``."""
    return base.with_name(base.name + _POINTER_SUFFIX)


def lease_path(db: Path) -> Path:
    """The lease file of one generation's database file."""
    return db.with_name(db.name + _LEASE_SUFFIX)


def _pattern(base: Path) -> re.Pattern[str]:
    return re.compile(re.escape(base.stem) + r"-(\d{1,18})" + re.escape(base.suffix) + r"\Z")


def generation_number(base: Path, db: Path) -> int:
    """0 for ``base`` itself, ``n`` for ``<stem>-<n><suffix>``, -1 for anything else."""
    if db.name == base.name:
        return 0
    match = _pattern(base).match(db.name)
    return int(match.group(1)) if match else -1


def read_pointer(base: Path) -> Path:
    """The database file of the live generation (``base`` when there is no pointer).

    :raises StoreError: the pointer exists but cannot be read or names no generation.
        Guessing here could delete the live index, so it is an error, not ``base``.
    """
    pointer = pointer_path(base)
    try:
        fd = os.open(pointer, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return base
    except OSError as exc:
        raise StoreError(
            f"cannot read the index pointer {pointer}: {exc.strerror or exc}",
            hint="fix its permissions, or delete it and run `signaldesk index --full`",
        ) from exc
    try:
        raw = os.read(fd, _POINTER_MAX_BYTES)
    except OSError as exc:
        raise StoreError(
            f"cannot read the index pointer {pointer}: {exc.strerror or exc}",
            hint="delete it and run `signaldesk index --full`",
        ) from exc
    finally:
        os.close(fd)
    name = raw.decode("utf-8", errors="replace").strip()
    db = base.with_name(name) if "/" not in name and name else None
    if db is None or generation_number(base, db) < 0:
        raise StoreError(
            f"the index pointer {pointer} names no index generation ({name[:80]!r})",
            hint="delete it and run `signaldesk index --full`",
        )
    return db


def pointer_token(base: Path) -> tuple[int, int, int] | None:
    """A cheap fingerprint of the pointer (inode, mtime, size): readers compare it on
    every search, and a swap (a rename onto the pointer) always changes the inode."""
    try:
        info = os.stat(pointer_path(base))
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_mtime_ns, info.st_size)


def _generations(base: Path) -> list[Path]:
    """Every database file of ``base``'s index in its folder (``base`` itself included)."""
    pattern = _pattern(base)
    try:
        names = os.listdir(base.parent)
    except FileNotFoundError:
        return []
    return [base.with_name(name) for name in names if name == base.name or pattern.match(name)]


def new_generation(base: Path) -> Path:
    """A database path no generation has used yet (nothing is created)."""
    numbers = [generation_number(base, db) for db in _generations(base)]
    with contextlib.suppress(StoreError):
        numbers.append(generation_number(base, read_pointer(base)))
    n = max([0, *numbers]) + 1
    return base.with_name(f"{base.stem}-{n}{base.suffix}")


def seed_generation(previous: int | None) -> int:
    """The ``generation`` counter a new database file starts from.

    Readers cache the vector matrix by this counter; starting above both the old
    file's value and the clock in milliseconds means a new file can never repeat a
    value a reader has cached for the old one, even when the old one was unreadable.
    """
    return max((previous or 0) + 1, int(time.time() * 1000))


def publish(base: Path, db: Path) -> None:
    """Make ``db`` the live generation: replace the pointer atomically and durably."""
    atomic_write_text(pointer_path(base), db.name + "\n")
    _fsync_folder(base.parent)
    logger.info("index generation %s is live", db.name)


def _fsync_folder(folder: Path) -> None:
    # The rename is only durable once the folder entry is on disk.
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def discard(db: Path) -> None:
    """Delete a generation that was never published (a failed or stopped rebuild)."""
    for path in (db, *(db.with_name(db.name + suffix) for suffix in _COMPANIONS), lease_path(db)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def remove_stale(base: Path) -> list[str]:
    """Delete every generation that is not live and that no reader holds (writer only).

    Also removes the pointer's leftover temporary files (a writer killed while
    replacing it). A generation a reader still holds is kept for a later run.

    :returns: the names of the database files removed.
    """
    try:
        live = read_pointer(base)
    except StoreError as exc:
        logger.warning("old index files not cleaned up: %s", exc.message)
        return []
    removed: list[str] = []
    for db in _generations(base):
        if db.name == live.name:
            continue
        if _remove_if_unleased(db):
            removed.append(db.name)
    pointer = pointer_path(base)
    for leftover in base.parent.glob(f".{pointer.name}.*.tmp"):
        with contextlib.suppress(OSError):
            leftover.unlink()
    # A reader that lost the race against a removal may have re-created a lease file
    # for a database that is gone.
    for lease in base.parent.glob(f"*{_LEASE_SUFFIX}"):
        db = lease.with_name(lease.name.removesuffix(_LEASE_SUFFIX))
        if generation_number(base, db) >= 0 and not db.exists():
            _remove_if_unleased(db)
    if removed:
        logger.info("removed old index generation(s): %s", ", ".join(sorted(removed)))
    return removed


def _remove_if_unleased(db: Path) -> bool:
    lease = lease_path(db)
    try:
        fd = os.open(lease, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        logger.debug("cannot open %s: %s", lease, exc)
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logger.debug("%s is still being read; kept", db.name)
            return False
        # The database goes before the lease file: a reader that gets its lease after
        # this finds the lease file unlinked (or the database gone) and looks again.
        for path in (db, *(db.with_name(db.name + suffix) for suffix in _COMPANIONS)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        with contextlib.suppress(FileNotFoundError):
            lease.unlink()
        return True
    except OSError as exc:
        logger.warning("old index file %s not removed: %s", db.name, exc.strerror or exc)
        return False
    finally:
        os.close(fd)


class ReaderLease:
    """A reader's shared hold on one generation, so the writer does not delete it."""

    def __init__(self, db: Path, fd: int) -> None:
        self.db = db
        self._fd: int | None = fd

    @classmethod
    def take(cls, base: Path) -> ReaderLease | None:
        """A lease on the live generation, or ``None`` when there is no index.

        Blocking (briefly: the writer holds a lease file exclusively only while it
        unlinks a few files); call from a worker thread.

        :raises StoreError: the pointer cannot be read, or kept moving.
        """
        for _ in range(_LEASE_TRIES):
            db = read_pointer(base)
            if not db.exists():
                return None
            lease = cls._try(db)
            if lease is not None:
                return lease
        raise StoreError(
            f"the index at {base.parent} kept changing while it was being opened",
            hint="try again once `signaldesk index` has finished",
        )

    @classmethod
    def _try(cls, db: Path) -> ReaderLease | None:
        path = lease_path(db)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            return None  # the folder went away
        except OSError as exc:
            if exc.errno not in _READ_ONLY_ERRNOS:
                raise
            try:
                fd = os.open(path, os.O_RDONLY)  # flock works on a read-only descriptor
            except OSError:
                # A read-only state folder without a lease file: no writer can delete
                # anything there either, so reading without a lease is safe.
                return cls(db, -1) if db.exists() else None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            linked = os.stat(path).st_ino == os.fstat(fd).st_ino
        except OSError:
            linked = False
        if linked and db.exists():
            return cls(db, fd)
        os.close(fd)
        return None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Let go (again: a no-op)."""
        fd, self._fd = self._fd, None
        if fd is not None and fd >= 0:
            os.close(fd)
