"""Running the CLI in this process, as a test reads it: exit code, stdout, stderr."""

from __future__ import annotations

import pytest

from signaldesk.pipeline.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``signaldesk ARGS``: its exit code and what it printed."""
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
