"""Each layer's public surface is exactly what its ``__init__`` lists in ``__all__``."""

from __future__ import annotations

import importlib
import inspect

import pytest

PACKAGES = [
    "signaldesk",
    "signaldesk.pipeline",
    "signaldesk.sources",
    "signaldesk.scoring",
    "signaldesk.retrieval",
    "signaldesk.mcp_server",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_complete_and_importable(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    for member in exported:
        assert hasattr(module, member), f"{name}.__all__ lists {member!r} but it is missing"
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_") and not inspect.ismodule(value) and attr not in {"annotations"}
    }
    assert public <= exported, f"{name} exposes {sorted(public - exported)} outside __all__"
