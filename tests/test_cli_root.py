"""The top of the command line: what a newcomer's mistyped verb or option gets back."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from signaldesk.pipeline.cli import cli


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [("serch", "'search'"), ("feds", "'feeds'"), ("stat", "'status'"), ("indx", "'index'")],
)
def test_a_mistyped_verb_gets_the_verb_it_was_meant_to_be(typed: str, suggested: str) -> None:
    result = CliRunner().invoke(cli, [typed, "x"])
    assert result.exit_code == 2
    assert f"No such command '{typed}'" in result.stderr
    assert "Did you mean" in result.stderr and suggested in result.stderr


def test_a_word_like_no_verb_gets_no_suggestion() -> None:
    result = CliRunner().invoke(cli, ["xyzzy"])
    assert result.exit_code == 2
    assert "No such command 'xyzzy'" in result.stderr and "Did you mean" not in result.stderr


@pytest.mark.parametrize(
    ("args", "fixed"),
    [
        (["index", "--vault", "{v}"], "signaldesk --vault {v} index"),
        (
            ["search", "foo bar", "--vault={v}", "--limit", "3"],
            "signaldesk --vault {v} search 'foo bar' --limit 3",
        ),
        (
            ["feeds", "list", "--config", "{v}/signaldesk.toml"],
            "signaldesk --config {v}/signaldesk.toml feeds list",
        ),
    ],
)
def test_a_global_option_after_the_verb_is_shown_where_it_goes(
    args: list[str], fixed: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from signaldesk.pipeline.cli import main

    typed = [a.replace("{v}", str(tmp_path)) for a in args]
    with pytest.raises(SystemExit) as stopped:
        main(typed)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "No such option" in err
    option = next(a for a in typed if a.startswith("--")).partition("=")[0]
    hint = f"hint: {option} goes before the verb: "
    assert hint + fixed.replace("{v}", str(tmp_path)) in err


def test_a_query_after_double_dash_is_not_taken_for_an_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from signaldesk.pipeline.cli import main

    with pytest.raises(SystemExit):
        main(["--vault", str(tmp_path / "none"), "search", "--", "--vault"])
    assert "goes before the verb" not in capsys.readouterr().err
