"""`signaldesk init` and `signaldesk doctor`."""

from __future__ import annotations

import shlex
from pathlib import Path

import click
from rich.markup import escape

from signaldesk.pipeline.cli._context import AppContext
from signaldesk.pipeline.cli._doctor import doctor
from signaldesk.pipeline.cli._output import print_json
from signaldesk.pipeline.vault_setup import Layout, init_vault
from signaldesk.retrieval.ignore import template_folders

_FOLDER = click.Path(path_type=str)


@click.command()
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--inbox", type=_FOLDER, help="Use this vault folder as the inbox (default 00-inbox)."
)
@click.option(
    "--signals",
    type=_FOLDER,
    help="File scored signals under this vault folder (default 05-signals).",
)
@click.option(
    "--daily",
    type=_FOLDER,
    help="Write the daily report and captain's log into this vault folder (default 06-daily).",
)
@click.option(
    "--folders/--no-folders",
    default=None,
    help="Create the whole folder convention now, or only what signaldesk needs "
    "(default: the convention for a new or empty folder, the minimum for a vault "
    "that already holds notes).",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was created as JSON.")
@click.pass_obj
def init(
    app: AppContext,
    path: Path,
    inbox: str | None,
    signals: str | None,
    daily: str | None,
    folders: bool | None,
    as_json: bool,
) -> None:
    """Set up a vault at PATH: signaldesk.toml, .indexignore and its state folder, plus
    the folder convention on a new folder. Existing files are kept."""
    layout = Layout(inbox=_rel(inbox), signals=_rel(signals), daily=_rel(daily))
    report = init_vault(path, layout=layout, folders=folders)
    if as_json:
        print_json(report)
        return
    for name in report.created:
        app.console.print(f"[green]created[/] {escape(name)}", highlight=False)
    for name in report.kept:
        app.console.print(f"[dim]kept    {escape(name)}[/]", highlight=False)
    if report.layout_ignored:
        app.console.print(
            "[yellow]signaldesk.toml exists and was kept[/]: --inbox/--signals/--daily "
            "were not applied; edit its \\[vault], \\[triage], \\[report] and \\[captains_log] "
            "settings instead",
            highlight=False,
        )
    if report.existing_vault and folders is None:
        app.console.print(
            "\nThis folder already holds notes, so only signaldesk's own files were added; "
            "its other folders (signals, daily notes, drop folders) are made when first "
            "used. To use folders you already have, set them in signaldesk.toml "
            "([vault] inbox_folder, [triage] signals_folder, [report] path, "
            "[captains_log] path) or run init with --inbox/--signals/--daily on a "
            "vault without a config.",
            markup=False,
            highlight=False,
        )
    templates = template_folders(report.vault)
    if templates:
        names = ", ".join(f"{folder}/" for folder in templates)
        app.console.print(
            f"\nNot indexed: {names} (the templates folder your Obsidian settings name), "
            "like 07-templates/.",
            markup=False,
            highlight=False,
        )
    # The command as a shell takes it (a folder named "my notes"), never read as markup.
    arg = escape(shlex.quote(str(report.vault)))
    app.console.print(f"\nVault ready at [bold]{escape(str(report.vault))}[/].", highlight=False)
    # soft_wrap: never broken into lines by rich, so the command pastes as it reads.
    app.console.print(
        f"Next: [bold]signaldesk --vault {arg} index[/]", highlight=False, soft_wrap=True
    )


def _rel(folder: str | None) -> str | None:
    """A vault-relative folder as given, without surrounding slashes."""
    return folder.strip().strip("/") or None if folder else None


COMMANDS: list[click.Command] = [init, doctor]
