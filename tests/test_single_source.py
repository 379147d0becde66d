"""Each fact lives in one place: the vault's folder names are spelled only in
``signaldesk/vault.py``; everything else imports them (or reads the configuration)."""

from __future__ import annotations

import ast
from pathlib import Path

from signaldesk.vault import VAULT_FOLDERS

REPO = Path(__file__).resolve().parents[1]
PACKAGE_FOLDERS = ("signaldesk", "sources", "retrieval", "scoring", "mcp_server", "pipeline")
HOME = REPO / "signaldesk" / "vault.py"


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def folder_literals(path: Path, root: Path = REPO) -> list[str]:
    """Where ``path`` spells a vault folder as a string of its own (not in prose)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            text = node.value.strip("/")
            if any(text == f or text.startswith(f + "/") for f in VAULT_FOLDERS):
                hits.append(f"{path.relative_to(root)}:{node.lineno}: {node.value!r}")
    return hits


def test_vault_folders_are_spelled_in_one_module() -> None:
    hits = [
        hit
        for folder in PACKAGE_FOLDERS
        for path in sorted((REPO / folder).rglob("*.py"))
        if path != HOME
        for hit in folder_literals(path)
    ]
    assert hits == []


def test_the_check_sees_a_spelled_folder(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('"""05-signals/ in prose is fine."""\nWHERE = "05-signals/security"\n')
    assert folder_literals(sample, tmp_path) == ["sample.py:2: '05-signals/security'"]
