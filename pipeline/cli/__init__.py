"""The `signaldesk` command line: one entry point, one verb per job.

Each verb lives in a small module of this package; this module only assembles
them and turns :class:`~signaldesk.errors.SignaldeskError` into a clean message
and exit code.
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import shlex
import sys
from pathlib import Path

import click

from signaldesk.errors import SignaldeskError
from signaldesk.faults import is_corruption_error, is_disk_full_error, is_read_only_error
from signaldesk.pipeline.cli._context import AppContext
from signaldesk.pipeline.cli._examples import add_examples, examples_epilog
from signaldesk.retrieval.scrub_logging import ScrubbingFilter

__all__ = ["cli", "explain_fault", "main"]

# Verb -> the module of this package that defines it, in the order `--help` lists
# them. Only the invoked verb's module is imported: the verbs between them pull
# in numpy, trafilatura, APScheduler and the MCP SDK, which a quick
# `signaldesk index` or `signaldesk search` should not pay for.
_VERBS: dict[str, str] = {
    "init": "setup",
    "doctor": "setup",
    "index": "index",
    "search": "search",
    "context": "search",
    "feeds": "feeds",
    "scan": "intake",
    "items": "intake",
    "capture": "intake",
    "triage": "triage",
    "score": "triage",
    "report": "operate",
    "log": "operate",
    "serve": "operate",
    "status": "operate",
    "mcp": "mcp",
    "demo": "operate",
}


class _LazyGroup(click.Group):
    """A group whose verbs are imported when they are invoked (or listed in help)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(_VERBS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = _VERBS.get(cmd_name)
        if module_name is None:
            return None
        module = importlib.import_module(f"signaldesk.pipeline.cli.{module_name}")
        commands: list[click.Command] = module.COMMANDS
        command = next(command for command in commands if command.name == cmd_name)
        return add_examples(command, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            # click suggests from ``self.commands``, which a lazy group leaves empty:
            # `signaldesk serch` would get no "Did you mean 'search'?".
            raise click.exceptions.NoSuchCommand(
                args[0], possibilities=list(_VERBS), ctx=ctx
            ) from exc


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=examples_epilog(""),
)
@click.option(
    "--vault",
    type=click.Path(file_okay=False, path_type=Path),
    help="Vault folder (default: $SIGNALDESK_VAULT, then the config's vault.path).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Config file (default: $SIGNALDESK_CONFIG, then <vault>/signaldesk.toml).",
)
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.version_option(package_name="signaldesk", prog_name="signaldesk")
@click.pass_context
def cli(ctx: click.Context, vault: Path | None, config_path: Path | None, verbose: int) -> None:
    """signaldesk: intake, triage and hybrid search for a markdown vault."""
    _setup_logging(verbose)
    ctx.obj = AppContext(vault_option=vault, config_option=config_path)


def _setup_logging(verbose: int) -> None:
    """Log to stderr at the level ``-v`` asks for (as basicConfig: once per process)."""
    level = logging.WARNING - 10 * min(verbose, 2)
    handler = _RichOnFirstRecord()
    # What signaldesk logs is scrubbed (issue 12): every record, whoever logged it.
    handler.addFilter(ScrubbingFilter())
    if level > logging.DEBUG:
        handler.addFilter(_without_traceback)  # tracebacks are for -vv
    logging.basicConfig(level=level, format="%(message)s", handlers=[handler])
    # aiosqlite logs every statement with its parameters at DEBUG: values, not news.
    logging.getLogger("aiosqlite").setLevel(max(level, logging.INFO))


class _RichOnFirstRecord(logging.Handler):
    """rich's log handler on stderr, made when the first record gets through.

    Trigger: every verb installs the handler, and importing rich costs ~40 ms,
    which a one-shot `signaldesk search --json` (a hook's call) pays for nothing
    when it logs nothing. Outcome: the same output, formatted by the same
    formatter, from the first record on; this handler's filters run before it.
    """

    def __init__(self) -> None:
        super().__init__()
        self._rich: logging.Handler | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self._rich is None:
            from rich.console import Console
            from rich.logging import RichHandler

            self._rich = RichHandler(console=Console(stderr=True), show_path=False)
            self._rich.setFormatter(self.formatter)
        self._rich.emit(record)


def _without_traceback(record: logging.LogRecord) -> bool:
    """Tracebacks are for ``-vv``: below it a problem is its one-line message."""
    record.exc_info = None
    record.exc_text = None
    record.stack_info = None
    return True


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; library errors become a message, a hint and exit code 1.

    :param argv: the arguments; by default this process's command line, and the
        process ends here.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    one_shot = _is_one_shot(args)
    paused = one_shot and gc.isenabled()
    if paused:
        # Trigger: a one-shot search imports numpy, the search modules and the model, and
        # the cyclic collector's passes over those new objects cost it ~10 ms (issue 15).
        # Why it may: one search allocates a bounded amount, freed with the process.
        gc.disable()
    try:
        _run(args)
    except SystemExit as done:
        if argv is None and one_shot:
            _quick_exit(done)
        raise
    finally:
        if argv is None:
            # The process ends now, and its last garbage collection would walk every
            # object left (numpy's, the model's, click's). Frozen objects are not
            # walked; the memory goes back to the system with the process.
            gc.freeze()
        elif paused:
            gc.enable()


# The verbs that search once and exit; `--batch` runs many searches, collector on.
_ONE_SHOT_VERBS = frozenset({"search", "context"})
# The options of `signaldesk` itself that take a value (--vault, --config), which go
# before the verb: read from the group, so a new one is known here too.
_GLOBAL_OPTIONS = frozenset(
    name
    for param in cli.params
    if isinstance(param, click.Option) and not (param.is_flag or param.count)
    for name in param.opts
)


def _is_one_shot(args: list[str]) -> bool:
    """Whether ``args`` run one search and end (`search QUERY`, `context TOPIC`)."""
    if "--batch" in args or any(a.startswith("--batch=") for a in args):
        return False
    takes_value = False
    for arg in args:
        if takes_value:
            takes_value = False
        elif arg in _GLOBAL_OPTIONS:
            takes_value = True
        elif not arg.startswith("-"):
            return arg in _ONE_SHOT_VERBS
    return False


def _quick_exit(done: SystemExit) -> None:
    """End a one-shot search's process now that its output is written.

    Trigger: the interpreter's shutdown then frees every module and object one by one
    (numpy's, the tokenizer's, click's), ~10 ms of a one-shot search (issue 15). Why it
    may: the search closed its database connection and released its lease when its
    block ended, logs only to stderr and starts no process; what is left is memory,
    which the system takes back. Outcome: the same output and exit code; a stream
    that cannot be flushed (a closed pipe) ends the process the usual way.
    """
    code = done.code
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    if code is None or isinstance(code, int):
        logging.shutdown()
        os._exit(code or 0)


def _run(args: list[str]) -> None:
    try:
        # A one-shot `search --json` is answered by a running serve when there is one
        # (issue 15); anything else, or any doubt, runs in this process.
        code = None
        if "search" in args:  # nothing else is handed over: the others skip its imports
            from signaldesk.pipeline.cli._forward import forward_search

            code = forward_search(cli, args, _setup_logging)
        if code is None:
            # Without standalone mode click returns (rather than exits with) the code a
            # verb asked for through ctx.exit().
            code = cli.main(args=args, prog_name="signaldesk", standalone_mode=False)
    except click.exceptions.Abort:
        from rich.console import Console

        Console(stderr=True).print("[yellow]aborted[/]")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        if isinstance(exc, click.UsageError):
            _hint_misplaced_global_option(args)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:
        error = explain_fault(exc)
        if error is None:
            raise
        if not isinstance(exc, SignaldeskError):
            logging.getLogger(__name__).debug("what failed:", exc_info=exc)
        from rich.console import Console
        from rich.markup import escape

        from signaldesk.pipeline.cli._hints import vault_argument, with_vault

        console = Console(stderr=True)
        # soft_wrap: the terminal folds a long line; rich would cut a command in the hint.
        console.print(
            f"[bold red]error:[/] {escape(error.message)}", highlight=False, soft_wrap=True
        )
        if error.hint:
            hint = with_vault(error.hint, vault_argument(args))
            console.print(f"[bold]hint:[/] {escape(hint)}", highlight=False, soft_wrap=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


def _hint_misplaced_global_option(args: list[str]) -> None:
    """After a usage error: `signaldesk index --vault ~/v` (the README's order is
    `signaldesk --vault ~/v index`) gets a line saying where the option goes."""
    verb = next((i for i, arg in enumerate(args) if arg in _VERBS), None)
    if verb is None:
        return
    rest = args[verb + 1 :]
    rest = rest[: rest.index("--")] if "--" in rest else rest
    for i, arg in enumerate(rest):
        name, _, value = arg.partition("=")
        if name not in _GLOBAL_OPTIONS:
            continue
        if not value and i + 1 < len(rest):
            value = rest[i + 1]
            moved = rest[:i] + rest[i + 2 :]
        else:
            moved = rest[:i] + rest[i + 1 :]
        fixed = ["signaldesk", *args[:verb], name, value, args[verb], *moved]
        click.echo(
            f"hint: {name} goes before the verb: {shlex.join(w for w in fixed if w)}",
            err=True,
        )
        return


def explain_fault(exc: BaseException) -> SignaldeskError | None:
    """What to tell a person about ``exc``: a :class:`SignaldeskError` as it is (also
    from inside a task group's exception group), a full disk, a read-only file or a
    damaged database as one message with a hint; ``None`` for a bug (a traceback)."""
    leaves = list(_leaves(exc))
    for leaf in leaves:
        if isinstance(leaf, SignaldeskError):
            return leaf
    for leaf in leaves:
        where = f" ({leaf.filename})" if isinstance(leaf, OSError) and leaf.filename else ""
        if is_disk_full_error(leaf):
            return SignaldeskError(
                f"the disk is full or a file size limit was reached{where}: {leaf}",
                hint="free some space (or raise `ulimit -f`) and run the command again; what "
                "was done so far is kept and the next run goes on from there",
            )
        if is_read_only_error(leaf):
            return SignaldeskError(
                f"cannot write{where}: {leaf}",
                hint="signaldesk files notes into the vault and keeps its state in "
                "<vault>/.signaldesk: make them writable for this user (a read-only vault "
                "can still be searched: `signaldesk search`, `signaldesk mcp`)",
            )
        if is_corruption_error(leaf):
            return SignaldeskError(
                f"a database file is damaged: {leaf}",
                hint="`signaldesk doctor` shows which; `signaldesk index` rebuilds the index "
                "from the vault",
            )
    return None


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]
