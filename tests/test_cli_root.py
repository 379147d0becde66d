"""The top of the command line: what a newcomer's mistyped verb or option gets back."""

from __future__ import annotations

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
