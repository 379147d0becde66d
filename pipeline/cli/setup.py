"""`signaldesk init` and `signaldesk doctor`."""

from __future__ import annotations

from pathlib import Path

import click

from signaldesk.pipeline.cli._context import AppContext
from signaldesk.pipeline.cli._doctor import doctor
from signaldesk.pipeline.cli._output import print_json
from signaldesk.pipeline.vault_setup import init_vault


@click.command()
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print what was created as JSON.")
@click.pass_obj
def init(app: AppContext, path: Path, as_json: bool) -> None:
    """Create a vault at PATH (folders, .indexignore, signaldesk.toml); existing files are kept."""
    report = init_vault(path)
    if as_json:
        print_json(report)
        return
    for name in report.created:
        app.console.print(f"[green]created[/] {name}")
    for name in report.kept:
        app.console.print(f"[dim]kept    {name}[/]")
    app.console.print(
        f"\nVault ready at [bold]{report.vault}[/]. Next: "
        f"[bold]signaldesk --vault {report.vault} index[/]"
    )


COMMANDS: list[click.Command] = [init, doctor]
