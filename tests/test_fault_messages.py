"""Faults of the machine get one message and a hint, never a traceback: a read-only state
folder, a full disk during a scan, a damaged or unreadable ledger."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from unprivileged import IS_ROOT, can_drop_privileges, hand_over, run_signaldesk, user_folder

from signaldesk.pipeline.vault_setup import init_vault
from tests.triage_data import ADVISORY, CONFIG_TOML, clipping

REPO = Path(__file__).resolve().parent.parent


def _vault(root: Path, clippings: int = 3) -> Path:
    vault = root / "vault"
    init_vault(vault)
    (vault / "signaldesk.toml").write_text(CONFIG_TOML, encoding="utf-8")
    for i in range(clippings):
        clipping(
            vault,
            f"clip{i}.md",
            title=f"OpenSSH {i}.9p2 advisory",
            body=ADVISORY.format(n=i) + f"\nClipping number {i}, word{i}.\n",
            source=f"https://e.example/{i}",
        )
    return vault


def _cli(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "-m", "signaldesk", "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env=env,
    )


def _clean_failure(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    text = done.stdout + done.stderr
    assert "Traceback" not in text and "Event loop is closed" not in text, text
    assert "hint:" in text, text
    for word in words:
        assert word in text, text


@pytest.mark.skipif(not can_drop_privileges(), reason="needs setpriv to drop root")
def test_a_read_only_state_folder() -> None:
    with user_folder() as root:
        vault = _vault(root)
        hand_over(vault)
        assert run_signaldesk(vault, "triage").returncode == 0
        state = vault / ".signaldesk"
        for path in state.iterdir():
            path.chmod(0o444)
        state.chmod(0o555)
        try:
            for verb in ("triage", "scan"):
                _clean_failure(run_signaldesk(vault, verb), "cannot be written", "writable")
            _clean_failure(run_signaldesk(vault, "index"), "cannot be written", "writable")
            # Searching needs no write: it still works.
            found = run_signaldesk(vault, "search", "OpenSSH advisory", "--json")
            assert found.returncode == 0, found.stderr
            assert '"path": "05-signals/security/' in found.stdout
        finally:
            state.chmod(0o755)


def _corrupt_pages(db: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(db.read_bytes())
    data[page_size:] = bytes((i * 7 + 3) % 251 for i in range(len(data) - page_size))
    db.write_bytes(bytes(data))


def test_a_damaged_ledger(tmp_path: Path) -> None:
    vault = _vault(tmp_path)
    assert _cli(vault, "triage").returncode == 0
    ledger = vault / ".signaldesk" / "ledger.db"
    _corrupt_pages(ledger)
    for verb in ("triage", "scan", "items"):
        _clean_failure(_cli(vault, verb), "is damaged", "move it aside")


@pytest.mark.skipif(not can_drop_privileges(), reason="needs setpriv to drop root")
def test_an_unreadable_ledger() -> None:
    with user_folder() as root:
        vault = _vault(root)
        hand_over(vault)
        assert run_signaldesk(vault, "triage").returncode == 0
        (vault / ".signaldesk" / "ledger.db").chmod(0)
        for verb in ("triage", "scan", "items"):
            _clean_failure(run_signaldesk(vault, verb), "cannot open the ledger", "readable")


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs (root only): a real full disk."""
    if not IS_ROOT or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)])
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path, leave_kb: int) -> None:
    free = shutil.disk_usage(disk).free
    with (disk / "filler").open("ab") as handle:
        handle.write(b"\0" * max(0, free - leave_kb * 1024))


@pytest.mark.parametrize("leave_kb", [24, 120])
def test_a_full_disk_during_a_scan(tiny_disk: Path, leave_kb: int) -> None:
    vault = _vault(tiny_disk, clippings=30)
    assert _cli(vault, "index").returncode == 0
    before = {p: p.read_bytes() for p in (vault / "Clippings").iterdir()}
    _fill(tiny_disk, leave_kb)
    done = _cli(vault, "scan")
    _clean_failure(done, "disk is full")
    # Whatever could not be finished is left as it was: no clipping lost or damaged.
    for path, data in before.items():
        if path.exists():
            assert path.read_bytes() == data
    moved = [p for p in before if not p.exists()]
    for path in moved:
        assert list((vault / "05-signals").rglob(path.name)), path
    (tiny_disk / "filler").unlink()
    again = _cli(vault, "scan")
    assert again.returncode == 0, again.stdout + again.stderr


@pytest.fixture
def read_only_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs (root only) that the test remounts read-only: a real EROFS."""
    if not IS_ROOT or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_read_only_file_system(read_only_disk: Path) -> None:
    # SQLite opens a database on a read-only file system without a word and fails at
    # the first read ("unable to open database file": no -shm file can be made), which
    # search took for a damaged index, and the ledger for a missing file.
    vault = _vault(read_only_disk)
    assert _cli(vault, "triage").returncode == 0
    clipping(vault, "late.md", title="OpenSSH late advisory", body=ADVISORY.format(n=9))
    subprocess.run(["mount", "-o", "remount,ro", str(read_only_disk)], check=True)
    for verb in ("triage", "scan"):
        _clean_failure(_cli(vault, verb), "cannot be written", "read-only file system")
    _clean_failure(_cli(vault, "index"), "cannot be written", "Read-only file system")
    # Reading needs no write: search and context still answer from the index.
    found = _cli(vault, "search", "OpenSSH advisory", "--json")
    assert found.returncode == 0, found.stdout + found.stderr
    assert '"path": "05-signals/security/' in found.stdout
    context = _cli(vault, "context", "OpenSSH advisory")
    # An excerpt of an advisory, whichever section ranks best for the note (note-aware
    # ranking shows each note by its best chunk, here "How to fix").
    assert context.returncode == 0, context.stderr
    assert "### 05-signals/security/" in context.stdout and "OpenSSH" in context.stdout
