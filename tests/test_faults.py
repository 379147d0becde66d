"""Which errors are faults of the machine (let through by code that isolates one bad
item) and which are a problem of one input; errors made by the real operations."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from signaldesk.faults import cannot_write_in, is_corruption_error, is_machine_fault


def _error(action: object) -> BaseException:
    try:
        action()  # type: ignore[operator]
    except BaseException as exc:
        return exc
    raise AssertionError("no error")


def test_a_damaged_database_is_a_machine_fault(tmp_path: Path) -> None:
    db = tmp_path / "broken.db"
    db.write_bytes(b"not a database, a damaged disk block" * 200)
    exc = _error(lambda: sqlite3.connect(db).execute("SELECT * FROM sqlite_master").fetchall())
    assert is_corruption_error(exc) and is_machine_fault(exc)


def test_a_read_only_database_is_a_machine_fault(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    reader = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    exc = _error(lambda: reader.execute("INSERT INTO t VALUES (1)"))
    assert is_machine_fault(exc)
    reader.close()


def test_a_full_disk_and_a_read_only_file_system_are_machine_faults() -> None:
    for code in (errno.ENOSPC, errno.EFBIG, errno.EROFS):
        assert is_machine_fault(OSError(code, os.strerror(code), "note.md"))


def test_one_unreadable_input_is_not_a_machine_fault(tmp_path: Path) -> None:
    # A file the user cannot read (or a missing one) is that file's problem: the
    # others go on.
    assert not is_machine_fault(PermissionError(errno.EACCES, "Permission denied", "a.eml"))
    assert not is_machine_fault(_error(lambda: (tmp_path / "gone.eml").read_bytes()))
    assert not is_machine_fault(ValueError("bad feed"))
    assert not is_machine_fault(RecursionError("maximum recursion depth exceeded"))


def test_a_writable_or_missing_folder_is_not_read_only(tmp_path: Path) -> None:
    assert not cannot_write_in(tmp_path)
    assert not cannot_write_in(tmp_path / "missing")  # not a read-only fault


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in any folder")
def test_a_folder_this_user_may_not_write_is_read_only(tmp_path: Path) -> None:
    # (The read-only file system, which binds root too, is tested through the CLI in
    # test_fault_messages.py.)
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o555)
    try:
        assert cannot_write_in(folder)
    finally:
        folder.chmod(0o755)
