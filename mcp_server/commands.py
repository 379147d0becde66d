"""Naming a signaldesk command in a hint so that it acts on the vault being served.

A hint such as "run `signaldesk index`" is read by a model that may run it in a shell
(Claude Code, Codex CLI) or by a person who copies it. The client started the server
with ``--vault``; without it the command would act on whatever vault the shell's
configuration names, or on none.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

__all__ = ["for_vault"]

# "`signaldesk index`", "`signaldesk report`": a command quoted in a hint or a message.
_QUOTED_COMMAND = re.compile(r"`signaldesk (?!--vault )(?=[a-z])")


def for_vault(text: str, vault: Path | None) -> str:
    """``text`` with each quoted `signaldesk <verb>` given ``--vault <vault>``
    (unchanged when there is no vault on disk, as in team mode)."""
    if vault is None:
        return text
    return _QUOTED_COMMAND.sub(f"`signaldesk --vault {shlex.quote(str(vault))} ", text)
