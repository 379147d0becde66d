"""The parameters of `signaldesk search` (and the filters `context` shares), declared once.

Their own module, which imports nothing but click, so that the one-shot search client
(:mod:`pipeline.cli._forward`) parses a command line with exactly the options the
`search` verb has, without importing the verb's module (the retriever, numpy, pydantic).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = ["MODES", "QueryCommand", "filter_options", "search_parameters"]

F = TypeVar("F", bound=Callable[..., Any])

MODES = ("hybrid", "bm25", "vector")

_DATE = click.DateTime(formats=["%Y-%m-%d"])


class QueryCommand(click.Command):
    """A verb whose argument is text to search for: a query that starts with ``-``
    ("-kanban", "--no-verify") is read as an option, and click's "No such option '-k'"
    does not say why; the error then says how to search for it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # click consumes the list it parses
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            if exc.possibilities:
                raise  # a mistyped option: click's "Did you mean" says it
            typed = next((a for a in given if a.startswith(exc.option_name)), exc.option_name)
            message = (
                f"{exc.message.rstrip('.')}; to search for text that starts with '-', put -- "
                f"before it: signaldesk {self.name} -- {shlex.quote(typed)}"
            )
            raise click.NoSuchOption(exc.option_name, message, ctx=exc.ctx) from exc


def _apply(fn: F, decorators: list[Callable[[F], F]]) -> F:
    for decorator in reversed(decorators):
        fn = decorator(fn)
    return fn


def filter_options(fn: F) -> F:
    """``--folder``, ``--type``, ``--domain``, ``--tag``, ``--status``, ``--since``,
    ``--until``."""
    return _apply(
        fn,
        [
            click.option("--folder", help="Only notes under this vault folder."),
            click.option("--type", "note_type", help="Only notes of this `type`."),
            click.option("--domain", help="Only notes of this domain."),
            click.option(
                "--tag", "tags", multiple=True, help="Only notes with this tag (repeatable: all)."
            ),
            click.option("--status", help="Only notes with this `status`."),
            click.option("--since", type=_DATE, help="Only notes updated on or after YYYY-MM-DD."),
            click.option("--until", type=_DATE, help="Only notes updated on or before YYYY-MM-DD."),
        ],
    )


def search_parameters(fn: F) -> F:
    """QUERY and every option of `signaldesk search`."""
    return _apply(
        fn,
        [
            click.argument("query", required=False),
            click.option(
                "--limit", type=click.IntRange(min=1), help="Number of results (default: config)."
            ),
            click.option(
                "--mode",
                type=click.Choice(MODES),
                help="Keyword and semantic fused (default), or one of them alone.",
            ),
            filter_options,
            click.option(
                "--max-tokens",
                type=click.IntRange(min=1),
                help="Token budget for result text: long excerpts are shortened, no result is "
                "dropped.",
            ),
            click.option(
                "--explain",
                is_flag=True,
                help="Show every list's ranks and scores and the MATCH used.",
            ),
            click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table."),
            click.option(
                "--batch",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                help='Run every {"id", "query"} line of a JSONL file; print one JSON line per '
                "query.",
            ),
        ],
    )
