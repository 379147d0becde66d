"""A debounced vault watcher built on a cheap stat scan (no new dependency).

Polling suits a vault: the notes the indexer would look at are walked with
``os.scandir`` (the same walk and the same ``.indexignore`` rules as the
indexer), and only ``(path, mtime_ns, size)`` is folded into a running hash, so
memory stays constant and a scan of tens of thousands of notes costs a fraction
of a second. Editors that write in place (Obsidian) change a file's mtime but
not its folder's, which is why folder mtimes alone would not do.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

import anyio.to_thread

from signaldesk.retrieval.ignore import VaultFilter, iter_vault_notes

__all__ = ["CPU_SHARE", "VaultWatcher", "vault_signature"]

# At most this share of one CPU goes to scanning: a vault whose scan takes 0.7 s
# (about 40k notes) is scanned every 14 s at the soonest, a small one every tick.
CPU_SHARE = 0.05


def vault_signature(vault: Path) -> tuple[str, int]:
    """A digest of every indexable note's path, mtime and size, and how many there are."""
    digest = hashlib.blake2b(digest_size=16)
    count = 0

    def unreadable(rel: str, exc: OSError) -> None:
        # Part of the signature (a folder readable again is a change), but not logged
        # on every poll: the index run it triggers reports it once.
        digest.update(f"!{rel}\x1f{exc.errno}\x1e".encode())

    for rel, stat in iter_vault_notes(vault, VaultFilter(vault), on_unreadable=unreadable):
        digest.update(f"{rel}\x1f{stat.st_mtime_ns}\x1f{stat.st_size}\x1e".encode())
        count += 1
    return digest.hexdigest(), count


class VaultWatcher:
    """Tells when the vault changed and has since been quiet for ``debounce`` seconds.

    Call :meth:`poll` periodically; it returns ``True`` once per settled burst of
    edits. The first poll only records the starting point.

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
        signature, self.notes = await anyio.to_thread.run_sync(vault_signature, self.vault)
        finished = self._clock()
        self._next_scan = finished + (finished - started) * (1 / CPU_SHARE - 1)
        return self.observe(signature)

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
