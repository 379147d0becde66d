"""Confining client-supplied paths to the vault.

Every path a client sends is hostile until proven otherwise. A path is accepted
only when it is a relative, forward-slash, markdown path whose every component
is an ordinary name, which names a regular file that — after symlinks are
resolved — is still inside the vault and outside every excluded folder. Encoded
forms are checked too: a client (or a model that was fed a poisoned note) may
send ``%2e%2e%2f`` hoping that something downstream decodes it.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

from signaldesk.mcp_server.errors import NoteNotFoundError, PathRefusedError
from signaldesk.mcp_server.scrubbing import scrub_text
from signaldesk.vault import ALWAYS_EXCLUDED

__all__ = [
    "MARKDOWN_SUFFIXES",
    "ResolvedNote",
    "check_relative_path",
    "normalise_folder",
    "resolve_note_path",
]

MARKDOWN_SUFFIXES: frozenset[str] = frozenset({".md", ".markdown"})

_MAX_PATH_CHARS = 1024
# Drive letters ("C:"), and the "name:stream" syntax of NTFS alternate data streams.
_DRIVE_RE = re.compile(r"^[A-Za-z]:")
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_EXCLUDED_NAMES: frozenset[str] = frozenset(p.strip("/").lower() for p in ALWAYS_EXCLUDED)
_DECODE_ROUNDS = 3

ExcludedPredicate = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class ResolvedNote:
    """A client path that passed every check.

    :param relative: the vault-relative POSIX path as the client should cite it.
    :param absolute: the real (symlink-free) path of the file to open.
    """

    relative: str
    absolute: Path


def _refuse(raw: str, why: str) -> PathRefusedError:
    # Scrubbed before it is cut: a secret cut in half is no longer recognised.
    shown = scrub_text(raw)
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    return PathRefusedError(
        f"path refused: {why} (got {shown!r})",
        hint=(
            "give a vault-relative path to a markdown note, as returned by `search` or "
            "`list_notes`, e.g. '03-resources/sqlite.md'"
        ),
    )


def _decoded_variants(raw: str) -> list[str]:
    """``raw`` and what repeated percent-decoding (and NFKC folding) turns it into."""
    variants = [raw]
    current = raw
    for _ in range(_DECODE_ROUNDS):
        decoded = unquote(current, errors="replace")
        if decoded == current:
            break
        variants.append(decoded)
        current = decoded
    variants.extend(unicodedata.normalize("NFKC", v) for v in list(variants))
    return variants


def _component_problem(part: str) -> str | None:
    if part in ("", "."):
        return None
    if part == "..":
        return "parent-directory components ('..') are not allowed"
    if part.strip(" .") == "" or part != part.rstrip(" ."):
        # "... " and "name. " resolve to the parent or to another file on Windows.
        return "components may not end in dots or spaces"
    if part.lower() in _EXCLUDED_NAMES:
        return f"'{part}/' is excluded from the index and cannot be read"
    return None


def check_relative_path(raw: str, *, folder: bool = False) -> str:
    """Validate the *shape* of a client path and return it normalised (no file access).

    :param folder: the path names a folder prefix (no suffix check).
    :raises PathRefusedError: with the reason and what to send instead.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise _refuse(str(raw), "the path is empty")
    if len(raw) > _MAX_PATH_CHARS:
        raise _refuse(raw, f"longer than {_MAX_PATH_CHARS} characters")
    for variant in _decoded_variants(raw):
        if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in variant):
            raise _refuse(raw, "control characters (NUL, newline, ...) are not allowed")
        if "\\" in variant:
            raise _refuse(raw, "backslashes are not allowed; use '/' between folders")
        if variant.startswith(("/", "~")):
            raise _refuse(raw, "absolute and home-relative paths are not allowed")
        if _DRIVE_RE.match(variant) or _SCHEME_RE.match(variant):
            raise _refuse(raw, "drive letters and URLs are not allowed")
        for part in variant.split("/"):
            problem = _component_problem(part)
            if problem:
                raise _refuse(raw, problem)
    if unquote(raw) != raw:
        # A vault file name may contain '%', but a valid escape that decodes to something
        # else is a client (or a poisoned note) trying its luck: ask for the plain path.
        raise _refuse(raw, "percent-encoded paths are not accepted; send the plain path")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if not parts:
        raise _refuse(raw, "the path names the vault root, not a note")
    relative = str(PurePosixPath(*parts))
    if not folder and PurePosixPath(relative).suffix.lower() not in MARKDOWN_SUFFIXES:
        raise _refuse(raw, "only markdown notes (.md) can be read")
    return relative


def normalise_folder(raw: str | None) -> str | None:
    """A folder filter from a client: validated, no leading/trailing slash; ``None`` if empty."""
    if raw is None or not raw.strip() or raw.strip() in ("/", "."):
        return None
    return check_relative_path(raw.strip().rstrip("/"), folder=True)


def _with_note_suffix(root: Path, raw: str) -> str:
    """``raw`` with ``.md`` added when it has no markdown suffix and names no file itself.

    Obsidian's wiki-links leave the suffix out (``[[Folder/Note]]``), so a model that
    follows a link it read in a note sends the path without it.

    :raises PathRefusedError: ``raw`` names a folder (with what lists its notes).
    """
    if PurePosixPath(raw).suffix.lower() in MARKDOWN_SUFFIXES:
        return raw
    # Every check but the suffix's first: `raw` itself must be an acceptable name.
    folder = check_relative_path(raw, folder=True)
    # Only names are looked at here; resolve_note_path checks the file in full.
    named = root / folder
    if named.is_dir():
        raise PathRefusedError(
            f"path refused: {folder!r} is a folder, not a note",
            hint=f"list its notes with list_notes(folder={folder!r}), then give read_note "
            "the vault-relative path of one of them",
        )
    return raw if named.exists() else folder + ".md"


def resolve_note_path(
    vault: Path,
    raw: str,
    *,
    excluded: ExcludedPredicate | None = None,
    max_bytes: int | None = None,
) -> ResolvedNote:
    """Turn a client path into a readable note inside ``vault``.

    :param vault: the vault root (resolved here; need not be).
    :param excluded: ``.indexignore`` and friends: ``True`` for a vault-relative path that
        must never be returned.
    :param max_bytes: refuse files larger than this.
    :raises PathRefusedError: the path escapes the vault, is excluded or is not a note.
    :raises NoteNotFoundError: the path is acceptable but no such file exists.

    A path without its ``.md`` (as a wiki-link writes it) is read as the note with it.
    """
    root = vault.resolve()
    relative = check_relative_path(_with_note_suffix(root, raw))
    if excluded is not None and excluded(relative):
        raise _refuse(raw, "the path is excluded from the index (.indexignore)")
    candidate = root / relative
    try:
        real = candidate.resolve(strict=True)
    except FileNotFoundError as exc:
        added = PurePosixPath(raw).suffix.lower() not in MARKDOWN_SUFFIXES
        raise NoteNotFoundError(
            f"no note at {raw!r} or {relative!r}" if added else f"no note at {relative!r}",
            hint="use `search` or `list_notes` to find the note's exact path",
        ) from exc
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop on 3.11
        raise _refuse(raw, "the path cannot be resolved") from exc
    if not real.is_relative_to(root):
        raise _refuse(raw, "the path leads outside the vault (through a symlink)")
    real_relative = real.relative_to(root).as_posix()
    if real_relative != relative:
        # A symlink inside the vault: the target must pass the same checks as the name.
        for part in real_relative.split("/"):
            if _component_problem(part):
                raise _refuse(raw, "the path leads into an excluded folder (through a symlink)")
        if excluded is not None and excluded(real_relative):
            raise _refuse(raw, "the path leads to an excluded note (through a symlink)")
        if PurePosixPath(real_relative).suffix.lower() not in MARKDOWN_SUFFIXES:
            raise _refuse(raw, "the path leads to a file that is not a markdown note")
    try:
        info = os.stat(real)
    except OSError as exc:
        # Deleted between the two looks.
        raise NoteNotFoundError(
            f"no note at {relative!r}",
            hint="use `search` or `list_notes` to find the note's exact path",
        ) from exc
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(raw, "the path is not a regular file")
    if max_bytes is not None and info.st_size > max_bytes:
        raise _refuse(raw, f"the note is larger than {max_bytes} bytes")
    return ResolvedNote(relative=relative, absolute=real)
