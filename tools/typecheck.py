"""Run mypy over the installed layout: one package, ``signaldesk``, with the layers under it.

The layers' folders sit at the top of the checkout and setuptools maps them under
``signaldesk`` (``[tool.setuptools.package-dir]`` in pyproject.toml). mypy has no such
mapping and cannot follow the editable install's import hook, so this builds a tree of
symlinks in that shape (``.typecheck/signaldesk/retrieval -> ../../retrieval``) and runs
mypy from it. Errors name ``signaldesk/<layer>/<module>.py``.

Usage: ``python tools/typecheck.py [mypy arguments]``
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / ".typecheck"


def build_tree() -> Path:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    package_dir: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    shutil.rmtree(TREE, ignore_errors=True)
    base = TREE / "signaldesk"
    base.mkdir(parents=True)
    layers = {name.split(".", 1)[1]: folder for name, folder in package_dir.items() if "." in name}
    for entry in (ROOT / package_dir["signaldesk"]).iterdir():
        os.symlink(entry, base / entry.name)
    for layer, folder in layers.items():
        os.symlink(ROOT / folder, base / layer, target_is_directory=True)
    return TREE


def main(argv: list[str]) -> int:
    tree = build_tree()
    config = str(ROOT / "pyproject.toml")
    cache = str(ROOT / ".mypy_cache")
    command = [sys.executable, "-m", "mypy", "--config-file", config, "--cache-dir", cache, *argv]
    return subprocess.run(command, cwd=tree, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
