"""A debounced vault watcher built on a cheap stat scan (no new dependency).

Polling suits a vault: the notes the indexer would look at are walked with
``os.scandir`` (the same walk and the same ``.indexignore`` rules as the
indexer), and each note's ``(mtime_ns, size)`` is kept, one small entry per note,
so a settled burst of edits is handed to the indexer as the paths that changed
and a scan of tens of thousands of notes costs a fraction of a second. Editors
that write in place (Obsidian) change a file's mtime but not its folder's, which
is why folder mtimes alone would not do.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread

from signaldesk.retrieval.ignore import VaultFilter, iter_vault_notes

__all__ = ["CPU_SHARE", "VaultListing", "VaultWatcher", "vault_listing"]

# At most this share of one CPU goes to scanning: a vault whose scan takes 0.7 s
# (about 40k notes) is scanned every 14 s at the soonest, a small one every tick.
CPU_SHARE = 0.05


@dataclass(frozen=True, slots=True)
class VaultListing:
    """One stat scan: each note's ``(mtime_ns, size)``, a digest of it all, and whether
    every folder could be read (an unreadable one hides what changed inside it)."""

    entries: dict[str, tuple[int, int]]
    signature: str
    complete: bool


def vault_listing(vault: Path) -> VaultListing:
    """Stat every indexable note of ``vault``."""
    digest = hashlib.blake2b(digest_size=16)
    entries: dict[str, tuple[int, int]] = {}
    complete = True

    def unreadable(rel: str, exc: OSError) -> None:
        # Part of the signature (a folder readable again is a change), but not logged
        # on every poll: the index run it triggers reports it once.
        nonlocal complete
        complete = False
        digest.update(f"!{rel}\x1f{exc.errno}\x1e".encode())

    for rel, stat in iter_vault_notes(vault, VaultFilter(vault), on_unreadable=unreadable):
        entries[rel] = (stat.st_mtime_ns, stat.st_size)
        digest.update(f"{rel}\x1f{stat.st_mtime_ns}\x1f{stat.st_size}\x1e".encode())
    return VaultListing(entries, digest.hexdigest(), complete)


class VaultWatcher:
    """Tells when the vault changed and has since been quiet for ``debounce`` seconds.

    Call :meth:`poll` periodically; it returns ``True`` once per settled burst of
    edits, and :meth:`take_changes` then gives the paths that changed. The first
    poll only records the starting point.

    :param clock: monotonic seconds (injectable for tests).
    """

    def __init__(
        self,
        vault: Path,
        debounce: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.vault = vault
        self.debounce = debounce
        self._clock = clock
        self._signature: str | None = None
        self._changed_at: float | None = None
        self._next_scan = 0.0
        self._entries: dict[str, tuple[int, int]] | None = None
        self._paths: set[str] = set()
        self._paths_known = True
        self.notes = 0
        self.skipped = False

    @property
    def dirty(self) -> bool:
        """A change was seen and has not been reported yet."""
        return self._changed_at is not None

    async def poll(self) -> bool:
        """Scan once (in a worker thread); ``True`` when a settled change is ready.

        A poll that comes sooner than the CPU budget allows after the last scan
        (see :data:`CPU_SHARE`) does nothing (``skipped`` is then set).
        """
        started = self._clock()
        self.skipped = started < self._next_scan
        if self.skipped:
            return False
        listing = await anyio.to_thread.run_sync(vault_listing, self.vault)
        finished = self._clock()
        self._next_scan = finished + (finished - started) * (1 / CPU_SHARE - 1)
        self.notes = len(listing.entries)
        self._note_paths(listing)
        return self.observe(listing.signature)

    def _note_paths(self, listing: VaultListing) -> None:
        before, after = self._entries, listing.entries
        self._entries = after
        if before is None:
            return
        self._paths.update(path for path, stat in after.items() if before.get(path) != stat)
        self._paths.update(before.keys() - after.keys())
        if not listing.complete:
            # A note missing from an unreadable folder is not a deletion: let the
            # indexer look at the whole vault, which knows the difference.
            self._paths_known = False

    def take_changes(self) -> list[str] | None:
        """The notes changed, added or gone since the last call (``None``: not known
        path by path, look at the whole vault)."""
        paths = sorted(self._paths) if self._paths_known else None
        self._paths, self._paths_known = set(), True
        return paths

    def observe(self, signature: str) -> bool:
        """Feed one scan's signature; ``True`` when a settled change is ready."""
        now = self._clock()
        if self._signature is None:
            self._signature = signature
            return False
        if signature != self._signature:
            self._signature = signature
            self._changed_at = now
            return self.debounce <= 0 and self._settle()
        if self._changed_at is not None and now - self._changed_at >= self.debounce:
            return self._settle()
        return False

    def _settle(self) -> bool:
        self._changed_at = None
        return True
