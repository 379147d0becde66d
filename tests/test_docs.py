"""Docs that cannot drift (HOUSE_RULES 11): the generated references match the code, and
the README's commands, verbs, sections, tools and paths match what exists.

When one of these fails after a change to a verb, an option or a setting, run
``python tools/gendocs.py`` and commit the result; when the README is out of
step, edit the README.
"""

from __future__ import annotations

import ast
import importlib
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from signaldesk.pipeline.cli import cli
from signaldesk.pipeline.config import Config
from tools.gendocs import (
    check_docs,
    main,
    render_cli_doc,
    render_config_doc,
    walk_commands,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"
REGENERATE = "run `python tools/gendocs.py` and commit docs/"

SETUP_COMMANDS = (
    "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/signaldesk demo",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest",
)


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section, up to the next ``## ``."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README.md has no '## {heading}' section"
    return match.group(1)


# -- generated docs ---------------------------------------------------------------------


def test_generated_docs_are_current() -> None:
    stale = check_docs(REPO_ROOT)
    assert not stale, (
        f"generated docs are stale ({', '.join(d.path for d in stale)}): {REGENERATE}\n\n"
        + "\n".join(d.diff for d in stale)[:6000]
    )


def test_check_fails_on_a_stale_doc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(tmp_path)]) == 0
    cli_doc = tmp_path / "docs" / "cli.md"
    assert "## `signaldesk search`" in cli_doc.read_text(encoding="utf-8")
    assert main(["--check", "--root", str(tmp_path)]) == 0
    cli_doc.write_text(cli_doc.read_text(encoding="utf-8").replace("--json", "--jsn"), "utf-8")
    capsys.readouterr()
    assert main(["--check", "--root", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert "+| `--json`" in out.out and "docs/cli.md" in out.err


def test_generated_docs_do_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "30")
    narrow = render_cli_doc(), render_config_doc()
    monkeypatch.setenv("COLUMNS", "300")
    assert (render_cli_doc(), render_config_doc()) == narrow
    for text in narrow:
        assert str(REPO_ROOT) not in text and str(Path.home()) not in text


def test_cli_doc_covers_every_command_and_option() -> None:
    doc = render_cli_doc()
    for ctx, command in walk_commands():
        assert f"`{ctx.command_path}`" in doc
        for param in command.get_params(ctx):
            if isinstance(param, click.Option) and not param.hidden:
                assert any(opt in doc for opt in param.opts), (ctx.command_path, param.opts)


def test_config_doc_covers_every_setting() -> None:
    doc = render_config_doc()
    for section, field in Config.model_fields.items():
        assert f"## `[{section}]`" in doc
        model = field.annotation
        assert isinstance(model, type)
        for name in model.model_fields:
            assert f"| `{name}` |" in doc, f"[{section}] {name}"


def test_every_command_a_cli_module_defines_is_registered() -> None:
    """A verb added to a module's ``COMMANDS`` but not to the CLI would be missing from
    `--help`, from docs/cli.md and from the README check alike."""
    registered = {id(command) for _, command in walk_commands()}
    for path in sorted((REPO_ROOT / "pipeline" / "cli").glob("*.py")):
        if path.name.startswith("_"):
            continue
        module = importlib.import_module(f"signaldesk.pipeline.cli.{path.stem}")
        for command in getattr(module, "COMMANDS", []):
            assert id(command) in registered, f"{path.stem}.{command.name} is not registered"


# -- the README -------------------------------------------------------------------------


def test_readme_starts_with_the_setup_commands() -> None:
    lines = _readme().splitlines()
    assert lines[:6] == ["# signaldesk", "", "```bash", *SETUP_COMMANDS, "```"], (
        "the README must open with the two set-up commands, exactly"
    )
    ci = REPO_ROOT / ".ci" / "run"
    if ci.is_file():
        # CI runs the second command (quietly); the README must show what CI runs.
        assert SETUP_COMMANDS[1] in ci.read_text(encoding="utf-8").replace(" -q ", " ")


def _command_paths() -> dict[str, click.Command]:
    return {ctx.command_path: command for ctx, command in walk_commands()}


def _verb_path(words: list[str]) -> str:
    """The longest command path at the start of ``words`` (``signaldesk feeds add``)."""
    paths = _command_paths()
    path = "signaldesk"
    for word in words:
        if f"{path} {word}" not in paths:
            break
        path = f"{path} {word}"
    return path


def test_every_verb_is_in_the_readme_table() -> None:
    table = _section(_readme(), "Commands")
    rows = re.findall(r"^\| `(signaldesk [^`]*)` \|", table, re.M)
    assert rows, "no command table in the README's Commands section"
    listed = {_verb_path(shlex.split(row)[1:]) for row in rows}
    assert "signaldesk" not in listed, f"a row names no verb: {rows}"
    paths = _command_paths()
    leaves = {p for p, c in paths.items() if not isinstance(c, click.Group)}
    missing = sorted(leaves - listed)
    assert not missing, f"verbs missing from the README's command table: {missing}"


# Where a command line starts inside a shell line: its start, or after one of these.
_SEPARATORS = {"|", "||", "&&", ";", "(", "&"}


def _invocations(line: str) -> Iterator[list[str]]:
    """The argument lists of every ``signaldesk`` run on a shell line."""
    # `PATH|URL` (no spaces) is an alternative in prose, not a pipe.
    line = re.sub(r"(?<=\w)\|(?=\w)", "/", line)
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    tokens = list(lexer)
    at_command = True
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in _SEPARATORS:
            at_command = True
        elif at_command and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", token):
            pass  # an environment assignment before the command
        elif at_command and (token == "signaldesk" or token.endswith("/signaldesk")):
            args: list[str] = []
            i += 1
            while i < len(tokens) and tokens[i] not in _SEPARATORS and tokens[i][0] not in "<>":
                args.append(tokens[i])
                i += 1
            yield args
            continue
        else:
            at_command = False
        i += 1


def _readme_commands() -> list[tuple[str, list[str]]]:
    """Every ``signaldesk`` command line the README quotes: in shell blocks, as ``$``
    lines or command lines in output blocks, and in inline code spans."""
    text = _readme()
    found: list[tuple[str, list[str]]] = []
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, re.M | re.S):
        for raw in body.replace("\\\n", " ").splitlines():
            line = raw.strip()
            shell = lang in ("bash", "sh", "shell", "console")
            if not (shell or line.startswith(("$ signaldesk ", "signaldesk "))):
                continue
            line = line.removeprefix("$ ")
            found += [(line, args) for args in _invocations(line)]
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    for span in re.findall(r"`(signaldesk [^`]+)`", prose):
        found += [(span, args) for args in _invocations(span)]
    return found


def _parse(args: list[str]) -> None:
    """Parse a command line the way ``signaldesk`` would, without running anything.

    Verbs and options must exist and option values must be valid; a missing argument
    is accepted (prose names a verb without its argument), and so is an argument value
    click rejects (an example file that does not exist here).
    """
    command: click.Command = cli
    parent: click.Context | None = None
    name = "signaldesk"
    while True:
        if isinstance(command, click.Group):
            if not args:
                return  # a group named on its own (`signaldesk feeds`)
            ctx = command.make_context(name, list(args), parent=parent)
            # click 8.2 made `protected_args` private; 8.1 only has the public name.
            protected = getattr(ctx, "_protected_args", None)
            if protected is None:
                protected = ctx.protected_args
            rest = [*protected, *ctx.args]
            if not rest:
                return
            sub_name, sub, args = command.resolve_command(ctx, rest)
            assert sub is not None and sub_name is not None  # strict parsing raised otherwise
            command, parent, name = sub, ctx, sub_name
            continue
        try:
            command.make_context(name, list(args), parent=parent)
        except click.exceptions.Exit as exc:  # --help, --version
            assert exc.exit_code == 0
        except click.MissingParameter:
            pass
        except click.BadParameter as exc:
            if not isinstance(exc.param, click.Argument):
                raise
        return


def test_readme_commands_parse(capsys: pytest.CaptureFixture[str]) -> None:
    commands = _readme_commands()
    assert len(commands) > 30, "fewer signaldesk commands found in the README than expected"
    failures = []
    for line, args in commands:
        try:
            _parse(args)
        except click.ClickException as exc:
            failures.append(f"{line!r}: {exc.format_message()}")
    capsys.readouterr()  # --help output
    assert not failures, "README commands that signaldesk would reject:\n" + "\n".join(failures)


@pytest.mark.parametrize(
    "line",
    [
        "signaldesk serach foo",
        "signaldesk search foo --explian",
        "signaldesk feeds ad https://x.example/feed",
        "signaldesk mcp --print-config claud",
        "signaldesk --vualt v index",
    ],
)
def test_a_wrong_command_is_caught(line: str) -> None:
    [args] = list(_invocations(line))
    with pytest.raises(click.ClickException):
        _parse(args)


def test_invocations_are_found_after_pipes_and_env() -> None:
    line = "echo hi | SIGNALDESK_VAULT=v .venv/bin/signaldesk capture --tags a,b > out # note"
    assert list(_invocations(line)) == [["capture", "--tags", "a,b"]]
    assert list(_invocations("claude mcp add signaldesk -- x")) == []
    assert list(_invocations("signaldesk score PATH|URL --explain")) == [
        ["score", "PATH/URL", "--explain"]
    ]


def test_readme_lists_every_config_section() -> None:
    body = _section(_readme(), "Configuration")
    named = re.findall(r"`\[(\w+)\]`", body)
    assert set(Config.model_fields) <= set(named), (
        f"sections missing from the README: {sorted(set(Config.model_fields) - set(named))}"
    )


def _tool_names() -> tuple[str, ...]:
    # Read from the source: importing the MCP SDK only to list seven names costs seconds.
    tree = ast.parse((REPO_ROOT / "mcp_server" / "server.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "TOOL_NAMES":
            assert node.value is not None
            value = ast.literal_eval(node.value)
            assert isinstance(value, tuple)
            return value
    raise AssertionError("TOOL_NAMES not found in mcp_server/server.py")


def test_readme_lists_every_mcp_tool() -> None:
    body = _section(_readme(), "Using it from AI tools (MCP)")
    rows = re.findall(r"^\| `(\w+)` \|", body, re.M)
    assert sorted(rows) == sorted(_tool_names())


def test_paths_named_in_the_docs_exist() -> None:
    text = _readme() + (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    paths = set(re.findall(r"`((?:deploy|docs|retrieval/models|tests|bench)/[^`\s*<]+)`", text))
    paths |= set(re.findall(r"\]\(((?:deploy|docs)/[^)#]+)\)", text))
    assert paths
    missing = sorted(p for p in paths if not (REPO_ROOT / p.rstrip("/")).exists())
    # docs/ranking.md is written by the ranking work; it may land after this file.
    missing = [p for p in missing if p != "docs/ranking.md"]
    assert not missing, (
        f"paths named in README.md / docs/architecture.md that do not exist: {missing}"
    )
    for module in set(re.findall(r"python -m (bench(?:\.\w+)+)", _readme())):
        parts = module.split(".")
        assert (REPO_ROOT.joinpath(*parts).with_suffix(".py")).is_file() or (
            REPO_ROOT.joinpath(*parts) / "__main__.py"
        ).is_file(), module


def _slug(heading: str) -> str:
    # GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens.
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_links_to_its_own_headings() -> None:
    text = re.sub(r"^```.*?^```", "", _readme(), flags=re.M | re.S)
    headings = {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}
    broken = sorted(set(re.findall(r"\]\(#([^)]+)\)", text)) - headings)
    assert not broken, f"README links to headings that do not exist: {broken}"


def test_every_verbs_help_ends_with_examples_that_parse(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from signaldesk.pipeline.cli._examples import EXAMPLES

    paths = _command_paths()
    assert set(EXAMPLES) == {p.removeprefix("signaldesk").strip() for p in paths}
    failures = []
    for path, command in paths.items():
        ctx = command.make_context(path.split()[-1], [], resilient_parsing=True)
        shown = command.get_help(ctx)
        examples = EXAMPLES[path.removeprefix("signaldesk").strip()]
        assert "Examples:" in shown, f"`{path} --help` shows no examples"
        for line in examples:
            assert line in shown, f"`{path} --help` wraps or drops {line!r}"
            [args] = list(_invocations(line))
            words = list(args)
            while words[:1] in (["--vault"], ["--config"]):  # global options, then the verb
                words = words[2:]
            ran = _verb_path(words)
            # A group's examples run its sub-commands; a verb's run that verb.
            mine = ran.startswith(path) if isinstance(command, click.Group) else ran == path
            assert mine, f"an example of `{path}` runs another verb: {line}"
            try:
                _parse(args)
            except click.ClickException as exc:
                failures.append(f"{line!r}: {exc.format_message()}")
    capsys.readouterr()
    assert not failures, "examples in --help that signaldesk would reject:\n" + "\n".join(failures)
