"""Index one note a command has just written, so that search finds it at once.

Trigger: `capture`, `report` and `log` write a note of the vault; left to the next
`signaldesk index` or `serve`, it is missing from search until then and `doctor`
counts it as "not indexed yet". A run over one path costs a stat, the note's chunks
and, for a new or changed note, a model load.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from signaldesk.errors import SignaldeskError
from signaldesk.pipeline.config import Workspace

__all__ = ["index_note"]


def index_note(workspace: Workspace, path: Path, *, create: bool = True) -> str | None:
    """Index ``path`` (a file in the vault); returns why it could not be, or ``None``.

    :param create: build the index when there is none yet; otherwise a vault without
        an index is left for `signaldesk index` to build whole.
    """
    try:
        rel = path.resolve().relative_to(workspace.vault).as_posix()
    except ValueError:
        return None  # a drop folder outside the vault is not part of the index
    from signaldesk.retrieval.backends import index_status_of, make_indexer
    from signaldesk.retrieval.embedder import LazyEmbedder

    settings, postgres = workspace.config.index, workspace.config.postgres
    if not create and not index_status_of(workspace.vault, settings, postgres).exists:
        return None
    indexer = make_indexer(
        workspace.vault,
        settings,
        LazyEmbedder(settings),
        vault_name=workspace.vault_name,
        postgres=postgres,
    )
    try:
        anyio.run(lambda: indexer.run(paths=[rel]))
    except SignaldeskError as exc:
        return f"{exc.message} (run `signaldesk index`)"
    return None
