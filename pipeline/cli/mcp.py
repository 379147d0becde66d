"""`signaldesk mcp`: serve the vault to AI tools over MCP (stdio or streamable HTTP)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import click

from signaldesk.mcp_server.binding import check_binding
from signaldesk.mcp_server.client_config import CLIENTS, client_config
from signaldesk.mcp_server.tokens import load_principals, new_token
from signaldesk.pipeline.cli._context import AppContext

if TYPE_CHECKING:
    from signaldesk.mcp_server.http import HttpEndpoint

__all__ = ["COMMANDS", "launch_command", "mcp_command"]


def launch_command() -> list[str]:
    """How an MCP client should start signaldesk on this machine (absolute paths).

    The installed ``signaldesk`` script when it is the one running (or on PATH next
    to this interpreter); otherwise this interpreter with ``-m pipeline.cli``.
    """
    argv0 = Path(sys.argv[0])
    if argv0.name == "signaldesk" and argv0.exists():
        return [str(argv0.resolve())]
    beside = Path(sys.executable).parent / "signaldesk"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("signaldesk")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "signaldesk"]


@click.command("mcp")
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default=None, help="HTTP address (default: mcp.host, 127.0.0.1).")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=None, help="HTTP port (0: any free port)."
)
@click.option(
    "--token-env",
    default=None,
    metavar="NAME",
    help="Environment variable holding the bearer token (needed off loopback).",
)
@click.option(
    "--print-config",
    "print_config",
    type=click.Choice(CLIENTS),
    default=None,
    help="Print the client configuration for this machine and exit "
    "(with --http: for the HTTP endpoint).",
)
@click.option(
    "--new-token",
    "new_token_for",
    default=None,
    metavar="NAME",
    help="Print a new bearer token for NAME and its [[mcp.tokens]] entry, and exit.",
)
@click.pass_obj
def mcp_command(
    app: AppContext,
    use_http: bool,
    host: str | None,
    port: int | None,
    token_env: str | None,
    print_config: str | None,
    new_token_for: str | None,
) -> None:
    """Serve the vault to AI tools over MCP (stdio by default; stdout is the protocol).

    Read-only tools: search, get_context, read_note, list_notes, recent_signals,
    latest_report, index_status. The model and index are warmed up before the
    server answers.
    """
    if new_token_for is not None:
        _print_new_token(new_token_for)
        return
    workspace = app.workspace()
    config = workspace.config
    settings = config.mcp
    if print_config is not None:
        url = None
        env_name = token_env if token_env is not None else settings.token_env
        if use_http:
            shown_host = host or settings.host
            shown_host = "127.0.0.1" if shown_host in ("0.0.0.0", "::", "") else shown_host
            url = f"http://{shown_host}:{port or settings.port}{settings.path}"
        snippet = client_config(
            print_config,  # type: ignore[arg-type]  # click.Choice guarantees the literal
            command=launch_command(),
            vault=str(workspace.vault),
            url=url,
            token_env=env_name if use_http else None,
        )
        click.echo(f"# {snippet.where}\n# {snippet.note}", err=True)
        click.echo(snippet.text, nl=False)
        return
    # The runner imports the MCP SDK (over a second): only this verb should pay for it.
    from signaldesk.mcp_server.runner import run_http, run_stdio

    if use_http:
        # Refuse an unsafe binding or a bad token at once, before the model and the index load.
        principals = load_principals(settings, token_env=token_env)
        check_binding(host or settings.host, guarded=bool(principals))

        def ready(endpoint: HttpEndpoint) -> None:
            # Tests and scripts wait for this line; it goes to stderr like every log.
            click.echo(f"signaldesk MCP server ready on {endpoint.url}", err=True)

        anyio.run(
            lambda: run_http(
                workspace.vault,
                config.index,
                config.search,
                settings,
                host=host,
                port=port,
                principals=principals,
                vault_name=workspace.vault_name,
                on_ready=ready,
                layout=config.layout,
                postgres=config.postgres,
            )
        )
        return
    anyio.run(
        run_stdio,
        workspace.vault,
        config.index,
        config.search,
        settings,
        config.layout,
        config.postgres,
    )


def _print_new_token(name: str) -> None:
    """The token on stdout (to hand to its holder once); the config entry, which holds only
    its hash and so may be committed, on stderr."""
    token, digest = new_token()
    click.echo(
        "# give this token to its holder; add the entry below to signaldesk.toml "
        "(list the vaults it may read)",
        err=True,
    )
    click.echo(
        f'[[mcp.tokens]]\nname = "{name}"\ntoken_sha256 = "{digest}"\nvaults = ["*"]\n',
        err=True,
    )
    click.echo(token)


COMMANDS: list[click.Command] = [mcp_command]
