"""The vault's layout and the one safe way to write a file into it."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import stat
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

# The folders signaldesk's code refers to; the inbox, signals and daily folders are
# defaults a configuration may change.
INBOX_FOLDER = "00-inbox"
ARCHIVE_FOLDER = "04-archive"
SIGNALS_FOLDER = "05-signals"
DAILY_FOLDER = "06-daily"
TEMPLATES_FOLDER = "07-templates"
ATTACHMENTS_FOLDER = "08-attachments"
REPORT_PATH = f"{DAILY_FOLDER}/{{date}}-triage.md"

# Numbers group the folders, they do not rank them (SPEC section 2).
VAULT_FOLDERS: tuple[str, ...] = (
    INBOX_FOLDER,
    "01-projects",
    "02-areas",
    "03-resources",
    ARCHIVE_FOLDER,
    SIGNALS_FOLDER,
    DAILY_FOLDER,
    TEMPLATES_FOLDER,
    ATTACHMENTS_FOLDER,
)

DOMAINS: tuple[str, ...] = (
    "ai-tooling",
    "security",
    "systems",
    "programming",
    "web",
    "data",
    "devops",
    "design",
    "mobile",
    "career",
    "research",
    "other",
)


@dataclass(frozen=True)
class SignalLayout:
    """Where this vault's filed signals and triage reports are, for the code that reads them.

    The configuration decides (``[triage] signals_folder``, ``[report] path``); readers
    such as the MCP server are handed this instead of assuming the default folders.
    """

    signals: str = SIGNALS_FOLDER
    report_path: str = REPORT_PATH

    @property
    def reports(self) -> str:
        """The folder reports are written under: the report path up to its first ``{date}``."""
        parts = PurePosixPath(self.report_path).parts[:-1]
        return "/".join(itertools.takewhile(lambda part: "{" not in part, parts)) or "."

    @property
    def report_glob(self) -> str:
        """A glob matching report files (the path's file name, ``{date}`` as ``*``)."""
        return PurePosixPath(self.report_path).name.replace("{date}", "*")


DEFAULT_LAYOUT = SignalLayout()

# Where signaldesk keeps its own databases inside the vault.
STATE_DIR = ".signaldesk"

# Never chunked, embedded or returned, whatever `.indexignore` says.
ALWAYS_EXCLUDED: tuple[str, ...] = (
    ".obsidian/",
    f"{TEMPLATES_FOLDER}/",
    f"{ATTACHMENTS_FOLDER}/",
    ".git/",
    ".trash/",
    f"{STATE_DIR}/",
)


_UMASK_LOCK = threading.Lock()


def utf8_name(name: str) -> bool:
    """Whether a file name (or path) is UTF-8 text: Python keeps the bytes of one that is
    not as surrogates, which the index, a note's link or a message cannot hold."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable_path(path: str) -> str:
    """``path`` as it can be printed: bytes that are not UTF-8 shown as U+FFFD."""
    if utf8_name(path):
        return path
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _umask() -> int:
    """The process's umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # elsewhere the only way to read it is to set it and put it back
        current = os.umask(0o022)
        os.umask(current)
    return current


def new_file_mode() -> int:
    """The mode a new file gets: ``0o666`` less the umask, as any editor would create it.

    Why: ``tempfile.mkstemp`` makes its files ``0600``, and renaming one into place
    left every note readable by its owner only.
    """
    return 0o666 & ~_umask()


def file_mode(path: Path) -> int | None:
    """``path``'s permission bits, or ``None`` when it does not exist."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None


def atomic_write_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half.

    The temporary file lives in the same folder so the final ``os.replace`` is a
    rename on one filesystem; it is fsynced first so a crash after the rename
    cannot leave an empty file.

    :param mode: the permission bits (default: those of the file it replaces, else
        those a new file gets under the umask).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        mode = file_mode(path)
    # Imported here: tempfile imports shutil, random and the compressors (~5 ms), and a
    # one-shot search imports this module for the state dir's name alone.
    import tempfile

    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, new_file_mode() if mode is None else mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def atomic_write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write UTF-8 ``text`` atomically (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


def write_new_file(
    folder: Path,
    stem: str,
    suffix: str,
    data: bytes,
    *,
    tries: int = 1000,
    mode: int | None = None,
) -> Path:
    """Write ``data`` under the first free name ``stem[-N]suffix`` in ``folder``; never overwrite.

    The data goes to a hidden temporary file first (fsynced), then ``os.link`` gives
    it its name: the link fails when the name exists, so checking and taking a name
    is one atomic step, even against another process, and the file appears complete
    or not at all.

    :param mode: the permission bits (default: those a new file gets under the umask;
        a moved file passes its own, so it keeps them).
    :raises FileExistsError: none of ``tries`` names was free.
    """
    folder.mkdir(parents=True, exist_ok=True)
    import tempfile  # imported here: see atomic_write_bytes

    fd, tmp_name = tempfile.mkstemp(prefix=".signaldesk-", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, new_file_mode() if mode is None else mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        for attempt in range(1, tries + 1):
            target = folder / (f"{stem}{suffix}" if attempt == 1 else f"{stem}-{attempt}{suffix}")
            try:
                os.link(tmp_name, target)
            except FileExistsError:
                continue
            except OSError:
                # No hard links here (some network or FUSE filesystems): take the name
                # with O_EXCL, then put the content in place over our own empty file.
                try:
                    os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                except FileExistsError:
                    continue
                os.replace(tmp_name, target)
            return target
        raise FileExistsError(f"no free file name for {stem}{suffix} in {folder}")
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)


# The names the two writers above give their temporary files: mkstemp adds eight
# characters of [a-z0-9_] between the prefix and the suffix.
_NEW_FILE_TEMP = re.compile(r"\.signaldesk-[a-z0-9_]{8}\.tmp")
_REPLACE_TEMP = re.compile(r"\.(?P<target>.+)\.[a-z0-9_]{8}\.tmp")


def sweep_temp_files(root: Path, *, older_than: float) -> list[Path]:
    """Remove temporary files a killed writer left under ``root`` (recursively).

    Only this module's own names are touched: ``.signaldesk-XXXXXXXX.tmp``, and
    ``.<name>.XXXXXXXX.tmp`` when ``<name>`` exists beside it (what an interrupted
    :func:`atomic_write_bytes` leaves next to the file it was replacing). Only
    regular files last modified before ``older_than`` (a ``time.time()`` value, the
    start of the run) go, so a write in progress in another process is left alone.

    :returns: the files removed.
    """
    removed: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if not name.endswith(".tmp") or not name.startswith("."):
                continue
            replacing = _REPLACE_TEMP.fullmatch(name)
            ours = _NEW_FILE_TEMP.fullmatch(name) is not None or (
                replacing is not None and os.path.exists(os.path.join(folder, replacing["target"]))
            )
            path = Path(folder) / name
            try:
                info = path.lstat()
            except OSError:
                continue
            if ours and stat.S_ISREG(info.st_mode) and info.st_mtime < older_than:
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(path)
    return removed
