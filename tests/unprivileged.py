"""Running a command as an ordinary user, so that file permissions bite even when the
tests run as root (root reads a folder whatever its mode says).

As root, commands run through ``setpriv`` as ``nobody`` on a vault that ``nobody`` owns,
in a temporary folder outside pytest's (which only root may enter); as anyone else,
they run as that user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534
IS_ROOT = os.geteuid() == 0


def can_drop_privileges() -> bool:
    return not IS_ROOT or shutil.which("setpriv") is not None


@contextmanager
def user_folder() -> Iterator[Path]:
    """An empty folder the unprivileged user owns (removed afterwards)."""
    root = Path(tempfile.mkdtemp(prefix="signaldesk-user-", dir="/tmp"))
    root.chmod(0o755)
    if IS_ROOT:
        os.chown(root, NOBODY, NOBODY)
    try:
        yield root
    finally:
        for folder, dirs, _ in os.walk(root):
            for name in dirs:
                os.chmod(os.path.join(folder, name), 0o755)
        shutil.rmtree(root, ignore_errors=True)


def hand_over(path: Path) -> None:
    """Give ``path`` (recursively) to the unprivileged user."""
    if not IS_ROOT:
        return
    for folder, dirs, files in os.walk(path):
        os.chown(folder, NOBODY, NOBODY)
        for name in dirs + files:
            os.chown(os.path.join(folder, name), NOBODY, NOBODY, follow_symlinks=False)


def run_signaldesk(
    vault: Path, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m signaldesk --vault VAULT ARGS`` as the unprivileged user."""
    command = [sys.executable, "-m", "signaldesk", "--vault", str(vault), *args]
    if IS_ROOT:
        command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
    env = dict(os.environ)
    env["HOME"] = str(vault.parent)
    env["HF_HUB_OFFLINE"] = "1"
    env.pop("SIGNALDESK_CONFIG", None)
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT, env=env
    )
