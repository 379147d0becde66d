"""CLI verbs (filled in by the issue that owns them)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
