"""Which files of a vault are notes the index may see.

Five things keep a file out: the paths signaldesk always excludes
(:data:`signaldesk.vault.ALWAYS_EXCLUDED`: app settings, templates,
attachments, git and trash folders, the service's own state), the templates
folder the vault's own Obsidian settings name (:func:`template_folders`), the
user's ``.indexignore`` at the vault root (``.gitignore`` syntax), the files
Obsidian's own search leaves out (:func:`obsidian_excluded`), and drawings or
boards that are markdown only in name (Excalidraw, Kanban).

Patterns follow git's rule that a file inside an excluded folder cannot be
re-included by a later ``!pattern``: the walker never enters an excluded
folder (that is what makes listing a large vault fast), so
:meth:`VaultFilter.excluded` applies the same rule to keep the two in agreement.
To keep one file of a folder, exclude the folder's contents (``drafts/*``)
rather than the folder (``drafts/``), then re-include the file.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import stat as _stat
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pathspec

from signaldesk.retrieval.errors import RetrievalError
from signaldesk.vault import ALWAYS_EXCLUDED, printable_path, utf8_name

__all__ = [
    "INDEXIGNORE_FILE",
    "IndexIgnoreError",
    "LiveVaultFilter",
    "VaultFilter",
    "excluded_by_frontmatter",
    "iter_vault_notes",
    "obsidian_excluded",
    "template_folders",
]

_log = logging.getLogger(__name__)

INDEXIGNORE_FILE = ".indexignore"

# Frontmatter keys the Excalidraw and Kanban plugins write on their files.
_MAX_IGNORE_BYTES = 1 << 20
_PLUGIN_KEYS = frozenset({"excalidraw-plugin", "kanban-plugin"})
_EXCALIDRAW_SUFFIX = ".excalidraw.md"

# Where a vault's Obsidian settings name its templates folder: the core Templates
# plugin, and the Templater community plugin. A template is a note with placeholders
# ({{title}}, <% tp.date.now() %>): searching it finds the skeleton of every note.
TEMPLATE_SETTINGS: tuple[tuple[str, str], ...] = (
    (".obsidian/templates.json", "folder"),
    (".obsidian/plugins/templater-obsidian/data.json", "templates_folder"),
)
_MAX_SETTINGS_BYTES = 1 << 20
# Obsidian's "Excluded files" (Settings > Files and links), which its own search leaves out.
OBSIDIAN_APP_SETTINGS = ".obsidian/app.json"


class IndexIgnoreError(RetrievalError):
    """The vault's ``.indexignore`` exists but cannot be read."""


class VaultFilter:
    """Decides whether a vault-relative path is kept out of the index."""

    def __init__(self, vault: Path, *, with_indexignore: bool = True) -> None:
        """Read ``<vault>/.indexignore`` (if any) on top of the always-excluded paths.

        :param with_indexignore: ``False`` keeps only the vault's own rules (the
            always-excluded and hidden folders): for finding the notes signaldesk
            wrote wherever a person put them, which ``.indexignore`` does not hide.
        :raises IndexIgnoreError: the file exists but cannot be read. Indexing
            anyway could expose exactly what the user asked to hide.
        """
        self.vault = vault
        self.user_patterns: tuple[str, ...] = (
            _read_patterns(vault / INDEXIGNORE_FILE) if with_indexignore else ()
        )
        self._spec = pathspec.GitIgnoreSpec.from_lines([*ALWAYS_EXCLUDED, *self.user_patterns])
        # Like .indexignore, a person's choice of what search shows, so not applied to the
        # listings that look for signaldesk's own notes.
        self.obsidian_prefixes, self._obsidian_patterns = (
            obsidian_excluded(vault) if with_indexignore else ((), ())
        )
        self.template_folders = template_folders(vault)
        # Compared as folders, never as patterns: a name such as "[T] templates" or
        # "#templates" means itself, not a gitignore character class or comment.
        self._template_dirs = frozenset(f"{t.casefold()}/" for t in self.template_folders)
        # The always-excluded entries are folders only; with no user patterns a
        # file can be excluded only through its folder, which the walk prunes.
        self._files_need_check = any(
            line.strip() and not line.lstrip().startswith("#") for line in self.user_patterns
        )
        self._dir_cache: dict[str, bool] = {}

    def excluded(self, rel_path: str) -> bool:
        """True when ``rel_path`` (vault-relative, '/'-separated; a folder may end in '/')
        must not be indexed: it, or a folder it lies in, is excluded or hidden,
        or it is an Excalidraw drawing by name."""
        rel = _normalise(rel_path)
        if not rel:
            return False
        is_dir = rel.endswith("/")
        parts = rel.rstrip("/").split("/")
        prefix = ""
        for name in parts[:-1]:
            prefix += name + "/"
            if self._dir_excluded(prefix, name):
                return True
        if is_dir:
            return self._dir_excluded(rel, parts[-1])
        return self._file_excluded(rel, parts[-1])

    def _dir_excluded(self, rel_dir: str, name: str) -> bool:
        cached = self._dir_cache.get(rel_dir)
        if cached is None:
            cached = (
                name.startswith(".")
                or rel_dir.casefold() in self._template_dirs
                or rel_dir.startswith(self.obsidian_prefixes)
                or self._spec.match_file(rel_dir)
            )
            self._dir_cache[rel_dir] = cached
        return cached

    def _file_excluded(self, rel_file: str, name: str) -> bool:
        if name.lower().endswith(_EXCALIDRAW_SUFFIX) or rel_file.startswith(self.obsidian_prefixes):
            return True
        if any(p.search(rel_file) for p in self._obsidian_patterns):
            return True
        return self._files_need_check and self._spec.match_file(rel_file)


def excluded_by_frontmatter(frontmatter: Mapping[str, Any]) -> bool:
    """True for Excalidraw drawings and Kanban boards, recognised by their plugin's key."""
    return any(str(key).strip().lower() in _PLUGIN_KEYS for key in frontmatter)


def template_folders(vault: Path) -> tuple[str, ...]:
    """The vault-relative templates folders the vault's Obsidian settings name
    (:data:`TEMPLATE_SETTINGS`), each once, without surrounding slashes.

    Kept out of the index like ``07-templates/``: a person who set Obsidian's (or
    Templater's) templates folder expects it treated as signaldesk's own. A settings
    file that is missing, unreadable or not the JSON Obsidian writes names no folder
    (Obsidian falls back the same way); so does a setting that names the vault root or
    leaves the vault (``..``), which must never hide every note.
    """
    found: list[str] = []
    for rel, key in TEMPLATE_SETTINGS:
        folder = _setting(vault / rel, key)
        if folder is not None and folder.casefold() not in (f.casefold() for f in found):
            found.append(folder)
    return tuple(found)


def obsidian_excluded(vault: Path) -> tuple[tuple[str, ...], tuple[re.Pattern[str], ...]]:
    """The vault's Obsidian "Excluded files" (``userIgnoreFilters`` in ``.obsidian/app.json``):
    the path prefixes, and the ``/regular expressions/``, as Obsidian reads them.

    A person who excluded a folder from Obsidian's search expects it out of signaldesk's
    too. A plain entry is a prefix of the vault-relative path (``Archive/`` is the folder,
    ``Archive`` also ``Archive.md``), compared as written; an entry in slashes is a
    regular expression searched in the path. A missing or malformed file, an entry that is
    not text, an empty one, one that leaves the vault (``..``) and an expression that does
    not compile exclude nothing.
    """
    data = _settings_json(vault / OBSIDIAN_APP_SETTINGS)
    entries = data.get("userIgnoreFilters") if data is not None else None
    prefixes: list[str] = []
    patterns: list[re.Pattern[str]] = []
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, str) or not entry.strip():
            continue
        if len(entry) > 2 and entry.startswith("/") and entry.endswith("/"):
            try:
                patterns.append(re.compile(entry[1:-1]))
            except re.error as exc:
                _log.debug("excluded-files entry %r is not a regular expression: %s", entry, exc)
            continue
        prefix = entry.replace("\\", "/").lstrip("/")
        if prefix and ".." not in prefix.split("/"):
            prefixes.append(prefix)
    return tuple(prefixes), tuple(patterns)


def _settings_json(path: Path) -> dict[str, Any] | None:
    """An Obsidian settings file's object; ``None`` when missing, too large or not JSON."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(_MAX_SETTINGS_BYTES + 1)
    except OSError:
        return None
    if len(raw) > _MAX_SETTINGS_BYTES:
        return None
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except ValueError:
        _log.debug("%s is not JSON; nothing read from it", path)
        return None
    return data if isinstance(data, dict) else None


def _setting(path: Path, key: str) -> str | None:
    data = _settings_json(path)
    value = data.get(key) if data is not None else None
    if not isinstance(value, str):
        return None
    parts = [p for p in value.replace("\\", "/").split("/") if p.strip() and p != "."]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


UnreadableCallback = Callable[[str, OSError], None]


def iter_vault_notes(
    vault: Path,
    vault_filter: VaultFilter,
    *,
    on_unreadable: UnreadableCallback | None = None,
    under: str = "",
) -> Iterator[tuple[str, os.stat_result]]:
    """Yield ``(vault-relative path, stat)`` for every note (``*.md``, any case) to index.

    This is the one walk of the vault: everything that lists notes uses it, so every
    listing follows the same rules. ``under`` (a vault-relative folder) walks only that
    folder; nothing is yielded when it is excluded, missing, or reached through a link.

    Excluded and hidden folders are never entered, and symbolic links are never
    followed. Why that loses nothing: a link whose target lies inside the vault
    reaches a file the walk lists anyway under its real path (or one the user
    excluded, which a link must not bring back), and a link that leads outside
    the vault must not pull foreign files (or a loop back to the root) into the
    index. Entries that cannot be read are skipped and given to ``on_unreadable``
    (vault-relative path, a folder's ending in ``/``, and the error), or logged when
    there is none: a caller that compares the listing with what it knows must not
    mistake "cannot read" for "deleted". Order is stable: depth-first, a folder's
    notes (by name) before its subfolders (by name).
    """

    def report(where: str, exc: OSError) -> None:
        if on_unreadable is not None:
            on_unreadable(where, exc)
        else:
            _log.warning("skipping unreadable entry %s: %s", where, exc)

    root = os.path.realpath(vault)  # the vault folder itself may be a link
    file_excluded = vault_filter._file_excluded
    dir_excluded = vault_filter._dir_excluded
    stack: list[tuple[str, str]] = [(root, "")]
    start = "" if under.strip("/") in ("", ".") else under.strip("/")
    if start:
        folder = os.path.join(root, start)
        if vault_filter.excluded(f"{start}/") or os.path.realpath(folder) != folder:
            return
        if not os.path.isdir(folder):
            return
        stack = [(folder, f"{start}/")]
    while stack:
        folder, rel_folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=_entry_name)
        except OSError as exc:
            if on_unreadable is not None:
                on_unreadable(rel_folder, exc)
            else:
                _log.warning("skipping unreadable folder %s: %s", rel_folder or ".", exc)
            continue
        subfolders: list[tuple[str, str]] = []
        for entry in entries:
            name = entry.name
            if not utf8_name(name):
                # Python keeps the bytes that are not UTF-8 as surrogates, which no UTF-8
                # text (the index, a message, a link) can hold: skipped, and said.
                where = printable_path(rel_folder + name)
                with contextlib.suppress(OSError):
                    where += "/" if entry.is_dir(follow_symlinks=False) else ""
                report(where, OSError(errno.EILSEQ, "its name is not valid UTF-8: rename it"))
                continue
            try:
                if entry.is_symlink():
                    _log.debug("not following link %s%s", rel_folder, name)
                    continue
                if entry.is_dir(follow_symlinks=False):
                    rel_dir = f"{rel_folder}{name}/"
                    if not dir_excluded(rel_dir, name):
                        subfolders.append((entry.path, rel_dir))
                    continue
                if name[-3:].lower() != ".md":
                    continue
                rel = rel_folder + name
                if file_excluded(rel, name):
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError as exc:
                report(rel_folder + name, exc)
                continue
            if _stat.S_ISREG(info.st_mode):
                yield rel, info
        # Reversed so that popping the stack visits sibling folders in name order.
        stack.extend(reversed(subfolders))


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _read_patterns(path: Path) -> tuple[str, ...]:
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
    # forever; it is refused below like any file that is not a regular one.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return ()
    except OSError as exc:
        raise IndexIgnoreError(
            f"cannot read {path}: {exc.strerror or exc}",
            hint="fix the file's permissions, or delete it to index everything",
        ) from exc
    try:
        info = os.fstat(fd)
        if not _stat.S_ISREG(info.st_mode):
            raise IndexIgnoreError(
                f"{path} is not a regular file (a {_kind(info.st_mode)}); it was not read",
                hint="make it a plain text file of gitignore patterns, or delete it",
            )
        if info.st_size > _MAX_IGNORE_BYTES:
            raise IndexIgnoreError(
                f"{path} is {info.st_size} bytes, more than a pattern list can need "
                f"({_MAX_IGNORE_BYTES})",
                hint="keep only the patterns in it",
            )
        pieces: list[bytes] = []
        while piece := os.read(fd, 65536):
            pieces.append(piece)
    except OSError as exc:
        raise IndexIgnoreError(
            f"cannot read {path}: {exc.strerror or exc}",
            hint="fix the file, or delete it to index everything",
        ) from exc
    finally:
        os.close(fd)
    text = b"".join(pieces).decode("utf-8", errors="replace").lstrip("\ufeff")
    return tuple(text.splitlines())


def _kind(mode: int) -> str:
    if _stat.S_ISFIFO(mode):
        return "named pipe"
    if _stat.S_ISDIR(mode):
        return "folder"
    if _stat.S_ISSOCK(mode):
        return "socket"
    if _stat.S_ISCHR(mode) or _stat.S_ISBLK(mode):
        return "device"
    return "special file"


class LiveVaultFilter:
    """A :class:`VaultFilter` that follows edits of ``.indexignore`` while a server runs.

    Each question stats the file (about a microsecond) and re-reads the rules when
    its identity, size or times changed, so a path excluded a moment ago is refused
    at once, without waiting for a re-index or a restart. When the file cannot be
    read (or is not a regular file), every path counts as excluded: answering from
    rules that may be stale could show exactly what the user just hid.
    """

    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self._path = vault / INDEXIGNORE_FILE
        self._key: tuple[int, ...] | None = None
        self._filter: VaultFilter | None = None
        self._problem: str | None = None
        self._lock = threading.Lock()

    def _stat_key(self) -> tuple[int, ...]:
        # The Obsidian settings too: a folder named there a moment ago is refused at once.
        key: list[int] = []
        settings = (*(rel for rel, _ in TEMPLATE_SETTINGS), OBSIDIAN_APP_SETTINGS)
        for path in (self._path, *(self.vault / rel for rel in settings)):
            try:
                info = os.stat(path)
            except FileNotFoundError:
                key.append(0)
                continue
            except OSError as exc:
                key.extend((-1, exc.errno or 0))
                continue
            key.extend(
                (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_mode)
            )
        return tuple(key)

    def current(self) -> VaultFilter | None:
        """The rules as the file says now (``None``: it cannot be read)."""
        key = self._stat_key()
        if key != self._key:
            with self._lock:
                if key != self._key:
                    try:
                        self._filter, self._problem = VaultFilter(self.vault), None
                    except IndexIgnoreError as exc:
                        self._filter = None
                        if exc.message != self._problem:
                            _log.warning("%s; every path is refused until it is fixed", exc)
                        self._problem = exc.message
                    self._key = key
        return self._filter

    def excluded(self, rel_path: str) -> bool:
        """Like :meth:`VaultFilter.excluded`; ``True`` while ``.indexignore`` is unreadable."""
        current = self.current()
        return True if current is None else current.excluded(rel_path)


def _normalise(rel_path: str) -> str:
    rel = rel_path.replace("\\", "/")
    while rel.startswith("./"):
        rel = rel[2:]
    return rel.lstrip("/")
