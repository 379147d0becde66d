"""The person's side of triage: accept, reject and move items; list, undo and reset corrections.

What a correction does to the vault and the ledger is in :mod:`pipeline.triage.corrections`; this
module opens the workspace's ledger for one command and, when an accepted item has no
note yet, files it through the same :class:`~pipeline.triage.triager.Triager` a run uses, with the
person's decision in place of the threshold's.
"""

from __future__ import annotations

from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.ledger.corrections import (
    CorrectionRecord,
    active_corrections,
    undo_corrections,
)
from signaldesk.pipeline.ledger.store import ledger_exists, open_ledger
from signaldesk.pipeline.triage.corrections import (
    Action,
    CommandResult,
    CorrectionError,
    apply_command,
    scoring_corrections,
)
from signaldesk.pipeline.triage.decisions import lookup_entry
from signaldesk.pipeline.triage.filing import NoteWriter
from signaldesk.pipeline.triage.records import TriageReport
from signaldesk.pipeline.triage.triager import Triager
from signaldesk.retrieval.embedder import Embedder
from signaldesk.scoring.feedback import Correction

__all__ = ["correct", "list_corrections", "undo", "vault_corrections"]


async def correct(
    workspace: Workspace,
    item_id: str,
    action: Action,
    domain: str | None = None,
    *,
    embedder: Embedder | None,
) -> tuple[CommandResult, TriageReport | None]:
    """``signaldesk triage accept|reject|move``: record the correction and carry it out.

    :param embedder: the model to score and index with when the item must be filed.

    :returns: what was done, and the triage report when the item had to be filed.
    :raises CorrectionError: no such item, or an unknown domain.
    """
    async with open_ledger(workspace) as ledger:
        entry = await lookup_entry(ledger, item_id)
        if entry is None:
            raise CorrectionError(
                f"no item {item_id} in the ledger", hint="`signaldesk items` lists item ids"
            )
        writer = NoteWriter(
            workspace.vault, workspace.config.triage, workspace.config.scoring.threshold
        )
        result = await apply_command(ledger, writer, entry, action, domain)
        if not result.needs_filing:
            return result, None
        triager = Triager(
            workspace,
            ledger,
            embedder=embedder,
            decided={entry.id: (True, result.domain)},
        )
        await triager.run_ledger(item_ids=[entry.id])
        return result, await triager.finish()


async def vault_corrections(workspace: Workspace) -> list[Correction]:
    """The corrections this vault's triage learns from, as the scorer takes them (none
    before there is a ledger: reading does not create one)."""
    if not ledger_exists(workspace):
        return []
    async with open_ledger(workspace) as ledger:
        return await scoring_corrections(ledger)


async def list_corrections(workspace: Workspace) -> list[tuple[CorrectionRecord, str]]:
    """The corrections in force with each item's title, oldest first."""
    async with open_ledger(workspace) as ledger:
        rows = await active_corrections(ledger)
        out = []
        for row in rows:
            entry = await ledger.get(row.item_id)
            out.append((row, entry.title if entry is not None else "(item gone)"))
        return out


async def undo(workspace: Workspace, last: int | None) -> int:
    """Undo the ``last`` corrections (``None``: all of them, a reset); returns how many."""
    async with open_ledger(workspace) as ledger:
        return await undo_corrections(ledger, last=last)
