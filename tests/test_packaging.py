"""Installed, signaldesk is one import package (SPEC section 1): ``signaldesk`` with the
layers under it, while the layers' folders stay at the top of the checkout."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def _source_packages() -> set[str]:
    """Every package in the checkout, by its installed name."""
    found: set[str] = set()
    for name, folder in SETUPTOOLS["package-dir"].items():
        base = REPO_ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base).parts
            found.add(".".join((name, *rel)))
    return found


def test_every_package_folder_is_listed() -> None:
    # A sub-package left out of `packages` is missing from the wheel but works in an
    # editable install, so only this test notices.
    listed = set(SETUPTOOLS["packages"])
    assert listed == _source_packages()


@pytest.mark.slow
def test_the_wheel_adds_one_top_level_package(tmp_path: Path) -> None:
    # Built from a copy: setuptools writes build/ and *.egg-info next to the sources.
    source = tmp_path / "src"
    shutil.copytree(
        REPO_ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "node_modules", "build", "*.egg-info", ".*cache", ".typecheck"
        ),
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            # Offline: the test extra installs the build backend into this venv.
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("signaldesk-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"signaldesk"}
    # Dev tools stay in the checkout.
    assert not [name for name in names if "gendocs" in name or "build_bundled_model" in name]
    assert "signaldesk/retrieval/models/minilm-l6-distilled/model.safetensors" in names
    for name in ("model.onnx", "tokenizer.json", "config.json", "SHA256SUMS", "LICENSE"):
        assert f"signaldesk/retrieval/models/minilm-l6-onnx/{name}" in names
    assert not [name for name in names if "export_onnx_model" in name]
    assert "signaldesk/py.typed" in names


def _imported_distributions() -> dict[str, str]:
    """Third-party distributions the layers import: ``{distribution: first module seen}``."""
    import ast
    from importlib import metadata

    by_module = metadata.packages_distributions()
    found: dict[str, str] = {}
    for folder in SETUPTOOLS["package-dir"].values():
        for path in sorted((REPO_ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    tops = [alias.name.split(".")[0] for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    tops = [node.module.split(".")[0]]
                else:
                    continue
                for top in tops:
                    if top in sys.stdlib_module_names or top in {"signaldesk", "__future__"}:
                        continue
                    for dist in by_module.get(top, [top]):
                        found.setdefault(dist, f"{path.relative_to(REPO_ROOT)} imports {top}")
    return found


def _requirement_name(requirement: str) -> str:
    import re

    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0]


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def test_every_imported_distribution_is_declared() -> None:
    # An extra counts: its imports are lazy and say which extra to install when missing.
    extras = PYPROJECT["project"]["optional-dependencies"]
    requirements = [*PYPROJECT["project"]["dependencies"], *extras["onnx"], *extras["postgres"]]
    declared = {_normalise(_requirement_name(r)) for r in requirements}
    missing = {
        dist: where
        for dist, where in _imported_distributions().items()
        if _normalise(dist) not in declared
    }
    assert not missing, f"imported but not in [project] dependencies: {missing}"
