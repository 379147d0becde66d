"""Output helpers shared by the verbs: clean JSON for scripts, rich for people."""

from __future__ import annotations

import dataclasses
import json
import sys
from datetime import date, datetime
from pathlib import Path
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Dataclasses, pydantic models, paths and dates as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    return value


def json_text(value: Any, *, lines: bool = False) -> str:
    """``value`` as the JSON text :func:`print_json` writes (a running `serve` answers a
    forwarded search with it, so both outputs are the same bytes)."""
    if lines:
        return json.dumps(to_jsonable(value), ensure_ascii=False) + "\n"
    return json.dumps(to_jsonable(value), ensure_ascii=False, indent=2) + "\n"


def print_json(value: Any, *, lines: bool = False) -> None:
    """Write ``value`` as JSON to stdout (one compact line when ``lines``)."""
    sys.stdout.write(json_text(value, lines=lines))
    sys.stdout.flush()
