"""The layers import only in the allowed direction (SPEC section 1, docs/architecture.md).

Every module's imports are read with ``ast`` (nothing is imported), including imports
inside functions and ``TYPE_CHECKING`` blocks: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# The layers' folders; installed, each is the sub-package ``signaldesk.<folder>``
# (pyproject.toml maps them), and the shared base is ``signaldesk`` itself.
LAYERS = ("signaldesk", "sources", "retrieval", "scoring", "mcp_server", "pipeline")

# What each layer may import besides itself and third-party code, in layer-relative
# names (``signaldesk`` is the shared base). An entry allows the module and everything
# under it; `retrieval.embedder` does not allow `retrieval`.
ALLOWED: dict[str, frozenset[str]] = {
    "signaldesk": frozenset(),
    "sources": frozenset({"signaldesk"}),
    "retrieval": frozenset({"signaldesk"}),
    "scoring": frozenset(
        {"signaldesk", "retrieval.embedder", "retrieval.settings", "retrieval.records"}
    ),
    "mcp_server": frozenset({"signaldesk", "retrieval"}),
    "pipeline": frozenset({"signaldesk", "sources", "scoring", "retrieval", "mcp_server"}),
}

# The program's entry point (``python -m signaldesk``) sits above every layer.
ENTRY_POINTS = frozenset({"signaldesk.__main__"})

# Never imported by any layer: they sit on top of the package, not inside it.
OUTSIDE = ("bench", "tests", "tools")


@dataclass(frozen=True)
class Violation:
    module: str
    line: int
    imported: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.imported}"


def _module_name(root: Path, path: Path) -> str:
    """The installed name: ``retrieval/x.py`` is ``signaldesk.retrieval.x``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] != "signaldesk":
        parts.insert(0, "signaldesk")
    return ".".join(parts)


def _layer_relative(name: str) -> str:
    """``signaldesk.retrieval.x`` -> ``retrieval.x``; ``signaldesk.items`` -> ``signaldesk``."""
    parts = name.split(".")
    if parts[0] != "signaldesk":
        return name
    if len(parts) > 1 and parts[1] in LAYERS:
        return ".".join(parts[1:])
    return "signaldesk"


def _source_path(root: Path, name: str) -> Path:
    """Where the module ``name`` (an installed name) lives in the checkout."""
    parts = name.split(".")
    if parts[0] == "signaldesk" and len(parts) > 1 and parts[1] in LAYERS:
        parts = parts[1:]
    return root.joinpath(*parts)


def _imports(root: Path, path: Path) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` for every import statement in the file."""
    module = _module_name(root, path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                target = ".".join(p for p in (base, node.module) if p)
            else:
                target = node.module or ""
            # `from retrieval import embedder` imports the submodule when it is one.
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                sub = _source_path(root, candidate)
                is_module = sub.with_suffix(".py").is_file() or (sub / "__init__.py").is_file()
                found.append((node.lineno, candidate if is_module else target))
    return found


def _allowed(layer: str, imported: str) -> bool:
    imported = _layer_relative(imported)
    top = imported.split(".")[0]
    if top in OUTSIDE:
        return False
    if top not in LAYERS or top == layer:
        return True
    return any(imported == ok or imported.startswith(ok + ".") for ok in ALLOWED[layer])


def find_violations(root: Path) -> tuple[int, list[Violation]]:
    """How many modules were read under ``root``, and every import that breaks the rules."""
    count = 0
    violations: list[Violation] = []
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            count += 1
            if _module_name(root, path) in ENTRY_POINTS:
                continue
            for line, imported in _imports(root, path):
                if not _allowed(layer, imported):
                    violations.append(
                        Violation(_module_name(root, path), line, _layer_relative(imported))
                    )
    return count, violations


def test_layers_import_only_downwards() -> None:
    count, violations = find_violations(REPO_ROOT)
    assert count > 50, f"only {count} modules found under {REPO_ROOT}: wrong root?"
    assert not violations, (
        "imports against the layer rules (see docs/architecture.md):\n"
        + "\n".join(f"  {v}" for v in violations)
    )


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("rel", "source", "expected"),
    [
        (
            "sources/rss.py",
            "from signaldesk.pipeline.ledger.store import Ledger\n",
            "pipeline.ledger.store",
        ),
        ("retrieval/x.py", "def f():\n    import signaldesk.scoring.scorer\n", "scoring.scorer"),
        ("retrieval/x.py", "from signaldesk.sources import clipper\n", "sources.clipper"),
        ("mcp_server/x.py", "from signaldesk.pipeline import config\n", "pipeline.config"),
        ("mcp_server/x.py", "import signaldesk.sources\n", "sources"),
        ("scoring/x.py", "from signaldesk.retrieval.indexer import I\n", "retrieval.indexer"),
        ("scoring/x.py", "from signaldesk.retrieval import Retriever\n", "retrieval"),
        ("signaldesk/x.py", "from signaldesk.retrieval.records import N\n", "retrieval.records"),
        ("signaldesk/x.py", "from signaldesk import retrieval\n", "retrieval"),
        ("pipeline/x.py", "from bench.scale import main\n", "bench.scale"),
        (
            "retrieval/sub/x.py",
            "from ..sub import x\nimport signaldesk.pipeline.config\n",
            "pipeline.config",
        ),
    ],
)
def test_a_forbidden_import_is_reported(
    tmp_path: Path, rel: str, source: str, expected: str
) -> None:
    for layer in LAYERS:
        _write(tmp_path, f"{layer}/__init__.py", "")
    _write(tmp_path, "pipeline/config.py", "")
    _write(tmp_path, "pipeline/ledger/store.py", "")
    _write(tmp_path, "sources/clipper.py", "")
    _write(tmp_path, "scoring/scorer.py", "")
    _write(tmp_path, "retrieval/sub/__init__.py", "")
    _write(tmp_path, rel, source)
    _, violations = find_violations(tmp_path)
    assert [v.imported for v in violations] == [expected]


def test_allowed_imports_pass(tmp_path: Path) -> None:
    for layer in LAYERS:
        _write(tmp_path, f"{layer}/__init__.py", "")
    _write(tmp_path, "retrieval/embedder.py", "")
    _write(
        tmp_path,
        "scoring/x.py",
        "from signaldesk.retrieval.embedder import Embedder\nfrom signaldesk.items import Item\n"
        "from . import y\nimport numpy\n",
    )
    _write(tmp_path, "mcp_server/x.py", "from signaldesk.retrieval.records import NoteInfo\n")
    _write(
        tmp_path,
        "pipeline/x.py",
        "import signaldesk.sources, signaldesk.scoring, signaldesk.retrieval, signaldesk\n",
    )
    _, violations = find_violations(tmp_path)
    assert violations == []


# Inside `pipeline/`, the rooms by level: a room imports only rooms on lower levels (and
# the modules at pipeline's top: config, settings, errors, ...). `cli` is on top.
PIPELINE_LEVELS: tuple[frozenset[str], ...] = (
    frozenset({"cli"}),
    frozenset({"service", "demo"}),
    frozenset({"reports", "triage"}),
    frozenset({"intake"}),
    frozenset({"ledger"}),
)


def room_violations(root: Path) -> list[Violation]:
    """Imports from a pipeline room into a room on its own level or above."""
    level = {room: i for i, rooms in enumerate(PIPELINE_LEVELS) for room in rooms}
    found: list[Violation] = []
    for room, own in level.items():
        for path in sorted((root / "pipeline" / room).rglob("*.py")):
            for line, imported in _imports(root, path):
                parts = imported.split(".")
                if parts[:2] != ["signaldesk", "pipeline"] or len(parts) < 3:
                    continue
                other = level.get(parts[2])
                if other is not None and parts[2] != room and other <= own:
                    found.append(Violation(_module_name(root, path), line, imported))
    return found


def test_pipeline_rooms_import_only_downwards() -> None:
    assert room_violations(REPO_ROOT) == []


def test_a_room_importing_upwards_is_reported(tmp_path: Path) -> None:
    _write(tmp_path, "pipeline/ledger/store.py", "from signaldesk.pipeline.triage.run import x\n")
    _write(tmp_path, "pipeline/triage/run.py", "from signaldesk.pipeline.ledger.store import y\n")
    assert [str(v) for v in room_violations(tmp_path)] == [
        "signaldesk.pipeline.ledger.store:1 imports signaldesk.pipeline.triage.run"
    ]
