"""Commands in hints, as the person can paste them: with the ``--vault`` they typed.

Why: a vault is found through ``--vault``, ``SIGNALDESK_VAULT`` or a config's
``[vault] path``. A person who typed ``signaldesk --vault ~/notes search ...`` and is
told to "run `signaldesk index`" gets "no vault given" from the command as written.
The hints are written once, where the problem is known (often deep in the retrieval
layer, which knows no command line); the command line adds the vault when it prints
them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from functools import cache

__all__ = ["vault_argument", "with_vault"]

# Verbs that take their folder as an argument, or make their own vault.
_OWN_FOLDER = frozenset({"init", "demo"})


def vault_argument(args: Sequence[str]) -> str | None:
    """The ``--vault`` value in a command line (before the verb), ``None`` without one."""
    for i, arg in enumerate(args):
        if arg == "--vault" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--vault="):
            return arg.removeprefix("--vault=")
        if not arg.startswith("-") and (i == 0 or args[i - 1] not in ("--config",)):
            return None  # the verb: the group's options come before it
    return None


@cache
def _verb_pattern() -> re.Pattern[str]:
    # The verbs themselves, so that prose ("signaldesk files notes ...") is left alone.
    from signaldesk.pipeline.cli import _VERBS

    verbs = sorted(set(_VERBS) - _OWN_FOLDER, key=len, reverse=True)
    names = "|".join(re.escape(v) for v in verbs)
    return re.compile(rf"(?<![\w/-])signaldesk (?=(?:{names})\b)")


def with_vault(text: str, vault: str | None) -> str:
    """``text`` with ``--vault VAULT`` put into every ``signaldesk VERB`` it quotes
    (``init`` and ``demo`` left as they are); unchanged without a vault."""
    if not vault or "signaldesk " not in text:
        return text
    return _verb_pattern().sub(f"signaldesk --vault {shlex.quote(vault)} ", text)
