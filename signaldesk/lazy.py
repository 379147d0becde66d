"""Package attributes imported on first use.

Every CLI verb imports ``pipeline.config``, which imports each layer's settings
module, which runs that layer's ``__init__``. Re-exporting the layer's whole
API eagerly there would make `signaldesk --help` pay for trafilatura, numpy and
the MCP SDK. Each ``__init__`` still lists its public names in ``__all__`` (and
imports them under ``TYPE_CHECKING`` for type checkers); this resolves them
when they are first touched.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``exports[name]`` (a module path) on first use."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
