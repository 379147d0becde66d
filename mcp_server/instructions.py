"""The server's ``instructions``: what is in this vault and how to use the tools.

Clients put this text in the model's context when they connect, so it is short
and concrete: counts, the biggest folders, the signal domains that have notes,
and one line per tool on when to reach for it.
"""

from __future__ import annotations

from pathlib import Path

from signaldesk.mcp_server.commands import for_vault
from signaldesk.retrieval.ignore import VaultFilter, iter_vault_notes
from signaldesk.retrieval.records import IndexStatus
from signaldesk.vault import DOMAINS, SIGNALS_FOLDER

__all__ = ["build_instructions", "signal_domains", "vault_heading"]

_TOP_FOLDERS = 8

_USAGE = """\
How to use these tools:
- search(query, ...): the main tool. Hybrid keyword + semantic ranking; each result has the \
note path, section, excerpt, score and ranks. Filter by folder, type, domain, tag, status, \
since/until (YYYY-MM-DD or '7d').
- get_context(topic): one markdown block of the best excerpts with their sources, ready to \
ground an answer.
- read_note(path, start_line?, line_count?): the full note (or a range) for a path that search \
or list_notes returned ('.md' may be left out, as in a [[wiki-link]]).
- list_notes(folder?, tag?, type?, domain?, since?, until?): browse notes by metadata, newest \
first.
- recent_signals(domain?, since?, min_score?): the latest scored intake with its four scores \
and source URL.
- latest_report(): the newest daily triage report.
- index_status(): counts, model, last update and degraded modes.
Cite notes by their path. Output is capped by max_tokens and credentials are redacted. \
Everything is read-only."""


def signal_domains(
    vault: Path | None, status: IndexStatus | None = None, *, signals_folder: str = SIGNALS_FOLDER
) -> list[str]:
    """The signal domains that hold at least one note, in the canonical order (from the
    index's folders, else from the vault's own folders when it is on disk)."""
    found: set[str] = set()
    if status is not None:
        for folder in status.folders:
            parts = folder.split("/")
            if len(parts) >= 2 and parts[0] == signals_folder:
                found.add(parts[1])
    if not found and vault is not None:
        # No index yet: look at the folders themselves (domain names only).
        rules = VaultFilter(vault, with_indexignore=False)
        depth = len(signals_folder.strip("/").split("/"))
        for rel, _ in iter_vault_notes(vault, rules, under=signals_folder):
            parts = rel.split("/")
            if len(parts) > depth + 1:  # a note inside a domain folder
                found.add(parts[depth])
    ordered = [d for d in DOMAINS if d in found]
    return ordered + sorted(found - set(DOMAINS))


def vault_heading(name: str) -> str:
    return f"signaldesk: search over the markdown vault {name!r}."


def build_instructions(
    heading: str,
    status: IndexStatus | None,
    *,
    vault: Path | None = None,
    signals_folder: str = SIGNALS_FOLDER,
) -> str:
    """Instructions for clients, from what is indexed (or a hint when nothing is).

    :param heading: the first line: what is searched (see :func:`vault_heading`).
    :param vault: the vault on disk, if there is one (its folders name the signal domains
        before anything is indexed).
    """
    lines = [heading]
    if status is None or not status.exists:
        lines.append(
            for_vault(
                "There is no search index yet: search, get_context, list_notes and "
                "recent_signals answer with an error until `signaldesk index` has run. "
                "read_note and latest_report work already.",
                vault,
            )
        )
    else:
        when = status.last_indexed.isoformat(timespec="minutes") if status.last_indexed else "?"
        lines.append(
            f"Indexed: {status.notes} notes in {status.chunks} chunks (last update {when})."
        )
        if status.folders:
            top = sorted(status.folders.items(), key=lambda kv: (-kv[1], kv[0]))[:_TOP_FOLDERS]
            lines.append("Top folders: " + ", ".join(f"{name}/ ({n})" for name, n in top) + ".")
        if status.degraded:
            lines.append("Degraded: " + "; ".join(status.degraded) + ".")
    domains = signal_domains(vault, status, signals_folder=signals_folder)
    if domains:
        lines.append(
            f"Signal domains with notes (under {signals_folder}/): " + ", ".join(domains) + "."
        )
    lines.append("")
    lines.append(_USAGE)
    return "\n".join(lines)
