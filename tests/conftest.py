"""Shared fixtures. Every test runs with the network closed except loopback."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"

# A closed loopback port: any request that slips past NO_PROXY towards a public
# host fails at once instead of reaching the network.
_CLOSED_PROXY = "http://127.0.0.1:9"


# The layers' folders. Installed, they are `signaldesk.<folder>`; from the checkout's
# root the bare folder names would import as well (a second copy of every module), which
# hides a wrong name such as `resources.files("scoring")` until a user runs the installed
# script. Refuse them in the test process.
_LAYER_FOLDERS = frozenset({"pipeline", "sources", "scoring", "retrieval", "mcp_server"})


class _RefuseBareLayerNames(importlib.abc.MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if path is None and fullname in _LAYER_FOLDERS:
            raise ImportError(f"import signaldesk.{fullname}, not the bare folder name {fullname}")
        return None


sys.meta_path.insert(0, _RefuseBareLayerNames())


def pytest_configure(config: pytest.Config) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        os.environ[name] = _CLOSED_PROXY
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.pop("SIGNALDESK_VAULT", None)
    os.environ.pop("SIGNALDESK_CONFIG", None)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def shared_data() -> Path:
    """`../shared/data`; tests that need it skip with a reason when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[Path]:
    """An initialised empty vault in a temporary folder."""
    from signaldesk.pipeline.vault_setup import init_vault

    path = tmp_path / "vault"
    init_vault(path)
    yield path


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One real PostgreSQL with pgvector for the session (skips with the reason if none)."""
    from tests.postgres_server import start_server

    server = start_server(tmp_path_factory.mktemp("postgres"))
    if isinstance(server, str):
        pytest.skip(server)
    yield server
    server.stop()


@pytest.fixture
def postgres(postgres_server: object) -> Iterator[object]:
    """`PostgresSettings` for a fresh database of this test's own, dropped afterwards."""
    from tests.postgres_server import PostgresServer

    assert isinstance(postgres_server, PostgresServer)
    with postgres_server.database() as settings:
        yield settings


LedgerOpener = Callable[[], AbstractAsyncContextManager[Any]]


@pytest.fixture(params=["sqlite", "postgres"])
def open_any_ledger(request: pytest.FixtureRequest, tmp_path: Path) -> LedgerOpener:
    """Opens a fresh ledger of each backend: the SQLite file, then PostgreSQL (that one
    skips with the reason when no server can start)."""
    if request.param == "sqlite":
        from signaldesk.pipeline.ledger.store import Ledger

        return lambda: Ledger.open(tmp_path / "l.db")
    from signaldesk.pipeline.ledger.pg_store import PostgresLedger

    settings = request.getfixturevalue("postgres")
    return lambda: PostgresLedger.open(settings)
