"""What signaldesk logs is scrubbed: the filter the CLI puts on its log handler."""

from __future__ import annotations

import io
import logging
import random
import string
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from signaldesk.pipeline.cli import cli
from signaldesk.retrieval.scrub_logging import ScrubbingFilter

_RNG = random.Random(12)
TOKEN = "gh" + "p_" + "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(36))


@pytest.fixture
def logger() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ScrubbingFilter())
    log = logging.getLogger("signaldesk.test.scrub_logging")
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    log.propagate = False
    yield log, stream
    log.removeHandler(handler)


def test_messages_arguments_and_tracebacks_are_scrubbed(
    logger: tuple[logging.Logger, io.StringIO],
) -> None:
    log, stream = logger
    log.info("fetching %s", f"https://bot:{TOKEN}@git.example.org/x.git")
    log.debug("token in the message itself: " + TOKEN)
    try:
        raise ValueError(f"bad header Authorization: Bearer {TOKEN}")
    except ValueError:
        log.exception("request failed")
    out = stream.getvalue()
    assert TOKEN not in out and TOKEN[4:20] not in out
    assert "fetching https://bot:[REDACTED:" in out
    assert "request failed" in out and "ValueError" in out and "Traceback" in out


def test_the_cli_installs_the_filter_and_quiets_aiosqlites_statement_log() -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        root.handlers.clear()
        result = CliRunner().invoke(cli, ["-vv", "feeds", "--help"])  # the group runs
        assert result.exit_code == 0
        assert any(
            isinstance(f, ScrubbingFilter) for handler in root.handlers for f in handler.filters
        )
        assert logging.getLogger("aiosqlite").getEffectiveLevel() >= logging.INFO
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


def test_a_refused_path_is_scrubbed_before_it_is_cut() -> None:
    from signaldesk.mcp_server.errors import PathRefusedError
    from signaldesk.mcp_server.paths import check_relative_path

    # The token straddles the 120-character cut: cut first, it would no longer be
    # recognised and its first half would be shown.
    raw = "../" + "a/" * 50 + TOKEN + ".md"
    with pytest.raises(PathRefusedError) as refused:
        check_relative_path(raw)
    assert TOKEN[:12] not in refused.value.message
    assert "path refused" in refused.value.message
