"""Links from a generated note (report, log) to a vault note that Obsidian opens.

A wiki-link is what Obsidian writes and shows best, but it cannot carry every file name:
in ``[[C# tips]]`` the ``#`` starts a heading link (to a note "C"), ``^`` a block link,
``|`` the label, and brackets end the link. Such a note gets a markdown link with the
path percent-encoded, which Obsidian resolves from the vault root.
"""

from __future__ import annotations

import re
from urllib.parse import quote

__all__ = ["note_link"]

_WIKI_UNSAFE = re.compile(r"[#^|\[\]]")


def _label(title: str | None) -> str:
    # A bracket in a label would end (or open) the link around it.
    text = " ".join((title or "").split())
    return re.sub(r"\]+", ")", re.sub(r"\[+", "(", text))


def note_link(path: str, title: str | None = None, *, in_table: bool = False) -> str:
    """A link to the vault note ``path`` (vault-relative, ``/``-separated), shown as
    ``title`` (none: the note's name), its ``|`` escaped when it goes in a table cell."""
    target = path[:-3] if path.endswith(".md") else path
    label = _label(title)
    bar = "\\|" if in_table else "|"
    if _WIKI_UNSAFE.search(target):
        href = quote(f"{target}.md", safe="/")
        text = label or target.rsplit("/", 1)[-1]
        return f"[{text.replace('|', bar)}]({href})"
    if not label:
        return f"[[{target}]]"
    return f"[[{target}{bar}{label.replace('|', bar)}]]"
