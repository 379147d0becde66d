"""Each fact lives in one place: the vault's folder names in ``signaldesk/vault.py``, the
note format (reading and writing frontmatter) in ``signaldesk/frontmatter*.py``, the score
names in ``signaldesk/signal_note.py``. Everything else imports them or reads the
configuration; these tests fail when a second copy appears."""

from __future__ import annotations

import ast
from pathlib import Path

from signaldesk.signal_note import DIMENSIONS
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


def _package_modules(*allowed: str) -> list[Path]:
    homes = {REPO / a for a in allowed}
    return [
        path
        for folder in PACKAGE_FOLDERS
        for path in sorted((REPO / folder).rglob("*.py"))
        if path not in homes
    ]


def yaml_calls(path: Path, root: Path = REPO) -> list[str]:
    """Where ``path`` parses or emits YAML itself (``yaml.load``, ``yaml.safe_dump``, ...)."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "yaml"
            and node.attr in {"load", "safe_load", "load_all", "safe_load_all", "dump", "safe_dump"}
        ):
            hits.append(f"{path.relative_to(root)}:{node.lineno}: yaml.{node.attr}")
    return hits


def score_name_lists(path: Path, root: Path = REPO) -> list[str]:
    """Where ``path`` lists score names itself (a tuple, list or set of two or more)."""
    names = set(DIMENSIONS)
    hits = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            spelled = [
                e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in names
            ]
            if len(spelled) >= 2:
                hits.append(f"{path.relative_to(root)}:{node.lineno}: {spelled}")
    return hits


def test_frontmatter_is_read_and_written_by_the_note_format_only() -> None:
    modules = _package_modules("signaldesk/frontmatter.py", "signaldesk/frontmatter_patch.py")
    assert [hit for path in modules for hit in yaml_calls(path)] == []


def test_score_names_are_listed_once() -> None:
    modules = _package_modules("signaldesk/signal_note.py")
    assert [hit for path in modules for hit in score_name_lists(path)] == []


def test_the_checks_see_a_second_parser_and_a_second_list(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import yaml\n"
        "META = yaml.safe_load(TEXT)\n"
        'SCORES = ("relevance", "depth")\n'
        'ONE = {"relevance": 1}\n'
    )
    assert yaml_calls(sample, tmp_path) == ["sample.py:2: yaml.safe_load"]
    assert score_name_lists(sample, tmp_path) == ["sample.py:3: ['relevance', 'depth']"]


# Walks that list other things than notes: temporary files a killed writer left
# (signaldesk/vault.py), the files in a drop folder (sources/decoding.py), a Maildir.
_NOT_NOTE_WALKS = ("signaldesk/vault.py", "sources/decoding.py", "sources/newsletter.py")


def directory_walks(path: Path, root: Path = REPO) -> list[str]:
    """Where ``path`` walks a folder tree itself (``os.walk``, ``Path.rglob``, ``Path.walk``)."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            is_os_walk = (
                func.attr == "walk" and isinstance(func.value, ast.Name) and func.value.id == "os"
            )
            if is_os_walk or func.attr == "rglob":
                hits.append(f"{path.relative_to(root)}:{node.lineno}: {func.attr}")
    return hits


def test_the_vault_is_walked_by_one_walker() -> None:
    modules = _package_modules("retrieval/ignore.py", *_NOT_NOTE_WALKS)
    assert [hit for path in modules for hit in directory_walks(path)] == []


def test_the_check_sees_a_second_walker(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfor x in os.walk(root): pass\nnotes = list(root.rglob('*.md'))\n")
    assert directory_walks(sample, tmp_path) == ["sample.py:2: walk", "sample.py:3: rglob"]
