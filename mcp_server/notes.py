"""Reading notes for the tools: text, titles, signal scores, the latest report."""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from signaldesk.frontmatter import first_heading, note_title, parse_note
from signaldesk.mcp_server.errors import NoteNotFoundError
from signaldesk.mcp_server.paths import ExcludedPredicate
from signaldesk.mcp_server.scrubbing import scrub_text
from signaldesk.retrieval.ignore import VaultFilter, excluded_by_frontmatter, iter_vault_notes
from signaldesk.vault import DEFAULT_LAYOUT, SignalLayout

__all__ = [
    "ExcludedPredicate",
    "find_latest_report",
    "is_board_or_drawing",
    "newest_report",
    "read_note_text",
    "scrub_preserving_lines",
    "similar_notes",
    "split_lines",
    "title_of",
]

# The `### <path> \u203a <heading>` line that opens each excerpt of a context block.


def read_note_text(path: Path) -> str:
    """A note's text: UTF-8 (undecodable bytes replaced), no BOM, ``\\n`` line ends."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` as an editor numbers them (a final newline adds no line)."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def is_board_or_drawing(text: str) -> bool:
    """Excalidraw drawings and Kanban boards are markdown files but not notes."""
    return excluded_by_frontmatter(parse_note(text[:20_000]).frontmatter)


def title_of(text: str, relative: str) -> str:
    """The frontmatter title, else the first H1, else the file name."""
    parsed = parse_note(text[:50_000])
    return note_title(parsed.frontmatter, relative, heading=first_heading(parsed.body))


def scrub_preserving_lines(text: str) -> str:
    """``text`` scrubbed, with the same number of lines as before.

    A redaction that swallows line breaks (a private key block) would shift every
    later line number away from what the editor shows. Where that happens, the
    redacted lines are padded back to the original count with empty lines.
    """
    scrubbed = scrub_text(text)
    if scrubbed.count("\n") == text.count("\n"):
        return scrubbed
    before, after = text.split("\n"), scrubbed.split("\n")
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(after[b0:b1])
            continue
        replaced = after[b0:b1]
        width = a1 - a0
        if len(replaced) > width and width > 0:
            # More lines than before cannot come from a redaction; keep the count anyway.
            replaced = [*replaced[: width - 1], " ".join(replaced[width - 1 :])]
        out.extend(replaced + [""] * (width - len(replaced)))
    return "\n".join(out)


def similar_notes(
    vault: Path, wanted: str, excluded: ExcludedPredicate | None = None, *, most: int = 3
) -> list[str]:
    """Notes a client probably meant by a path that names none: the same path in another
    case, or the same file name in another folder (a wiki-link names a note by its name
    alone, ``[[Note]]``, wherever it is); at most ``most``, by path.
    """
    path = PurePosixPath(wanted.strip().strip("/"))
    name = path.name.casefold()
    stem = name if path.suffix.lower() not in (".md", ".markdown") else path.stem.casefold()
    found: list[str] = []
    # The walk never follows a link, and `excluded` adds the user's rules.
    for relative, _ in iter_vault_notes(vault, VaultFilter(vault, with_indexignore=False)):
        if excluded is not None and excluded(relative):
            continue
        if PurePosixPath(relative).stem.casefold() == stem:
            found.append(relative)
    # The same path in another case first: it is almost certainly the one.
    found.sort(key=lambda r: (r.casefold() != path.as_posix().casefold(), r))
    return found[:most]


def find_latest_report(
    vault: Path,
    excluded: ExcludedPredicate | None = None,
    *,
    layout: SignalLayout = DEFAULT_LAYOUT,
) -> str:
    """The vault-relative path of the newest triage report (by dated name, then mtime).

    :param layout: where the configuration puts reports.
    :raises NoteNotFoundError: there is no report yet.
    """
    # The walk never follows a link (one may lead out of the vault and be refused, and
    # one bad entry must not hide the real reports); `excluded` adds the user's rules.
    rules = VaultFilter(vault, with_indexignore=False)
    found = [
        (relative, info.st_mtime)
        for relative, info in iter_vault_notes(vault, rules, under=layout.reports)
        if not (excluded is not None and excluded(relative))
    ]
    return newest_report(found, layout)


def newest_report(paths: Iterable[tuple[str, float]], layout: SignalLayout) -> str:
    """Of ``(path, mtime)`` pairs, the newest report (its name matches the layout's report
    pattern) by dated name, then mtime.

    :raises NoteNotFoundError: none of them is a report.
    """
    candidates = [
        (PurePosixPath(path).name, mtime, path)
        for path, mtime in paths
        if fnmatch.fnmatchcase(PurePosixPath(path).name, layout.report_glob)
    ]
    if not candidates:
        raise NoteNotFoundError(
            f"no triage report in {layout.reports}/ yet",
            hint="`signaldesk report` writes one (the scheduler does it daily)",
        )
    return max(candidates)[2]
