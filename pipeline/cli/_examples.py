"""The examples each verb's ``--help`` ends with, one place for all of them.

A newcomer reads ``signaldesk search --help`` before the README: the help says what
a verb does, and these lines show how it is typed. They are the README tour's own
commands where the tour has one. ``tools/gendocs.py`` writes them into docs/cli.md,
and ``tests/test_docs.py`` parses every line, so an example that a verb would
reject fails the tests.
"""

from __future__ import annotations

import click

__all__ = ["EXAMPLES", "add_examples", "examples_epilog"]

# Command path after "signaldesk" ("" is the group itself) -> example command lines.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "": (
        "signaldesk demo",
        "signaldesk init ~/vault",
        'signaldesk --vault ~/vault search "wal checkpoints"',
    ),
    "init": (
        "signaldesk init ~/vault",
        'signaldesk init ~/notes --inbox "00 - Inbox" --signals "20 - Signals" '
        '--daily "50 - Journal"',
    ),
    "demo": ("signaldesk demo", "signaldesk demo /tmp/d"),
    "doctor": ("signaldesk doctor", "signaldesk --vault ~/vault doctor --json"),
    "index": ("signaldesk index", "signaldesk index --status", "signaldesk index --full"),
    "search": (
        'signaldesk search "sqlite busy timeout" --limit 3',
        'signaldesk search "backups" --folder 03-resources --tag sqlite --since 2026-01-01',
        "signaldesk search \"sqlite busy timeout\" --json | jq -r '.results[].path'",
        "signaldesk search -- -webkit",
    ),
    "context": ('signaldesk context "sqlite busy timeout" --max-tokens 800',),
    "feeds": ("signaldesk feeds list", "signaldesk feeds add https://blog.example/"),
    "feeds add": (
        "signaldesk feeds add https://blog.example/",
        "signaldesk feeds add https://blog.example/feed.xml --prior 0.9",
    ),
    "feeds list": ("signaldesk feeds list", "signaldesk feeds list --json"),
    "feeds remove": ("signaldesk feeds remove https://blog.example/feed.xml",),
    "feeds enable": ("signaldesk feeds enable https://blog.example/feed.xml",),
    "feeds import": ("signaldesk feeds import subscriptions.opml",),
    "feeds export": (
        "signaldesk feeds export subscriptions.opml",
        "signaldesk feeds export > subscriptions.opml",
    ),
    "scan": ("signaldesk scan", "signaldesk scan --force"),
    "items": (
        "signaldesk items --limit 5",
        "signaldesk items --status rejected",
        "signaldesk items --source rss --json",
    ),
    "triage": (
        "signaldesk triage --dry-run",
        "signaldesk triage",
        "signaldesk triage --rescore",
    ),
    "triage accept": ("signaldesk triage accept 42246ba427",),
    "triage reject": ("signaldesk triage reject 42246ba427",),
    "triage move": ("signaldesk triage move 42246ba427 data",),
    "triage corrections": (
        "signaldesk triage corrections",
        "signaldesk triage corrections --undo 1",
    ),
    "score": (
        "signaldesk score Clippings/an-article.md --explain",
        "signaldesk score https://blog.example/posts/wal",
    ),
    "capture": (
        'echo "Use BEGIN IMMEDIATE for write transactions." | signaldesk capture '
        '--title "SQLite write transactions" --tags sqlite,decision',
        'signaldesk capture "Deploy checklist: run migrations first" '
        "--source https://wiki.example/deploy",
    ),
    "report": (
        "signaldesk report",
        "signaldesk report --date 2026-11-29",
        "signaldesk report --json",
    ),
    "log": ("signaldesk log", "signaldesk log --date 2026-11-29"),
    "mcp": (
        "signaldesk mcp --print-config claude > .mcp.json",
        "signaldesk mcp",
        "signaldesk mcp --http",
    ),
    "serve": ("signaldesk serve",),
    "status": ("signaldesk status", "signaldesk status --json"),
}


def examples_epilog(path: str) -> str | None:
    """The ``Examples:`` block for the command at ``path`` (``"feeds add"``), laid out
    as typed (click's ``\\b`` keeps its lines unwrapped)."""
    lines = EXAMPLES.get(path)
    if not lines:
        return None
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


def add_examples(command: click.Command, path: str) -> click.Command:
    """Give ``command`` (and, for a group, each of its sub-commands) its examples."""
    command.epilog = examples_epilog(path)
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            add_examples(sub, f"{path} {name}".strip())
    return command
