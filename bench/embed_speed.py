"""Embedding speed of a model on real chunks: ``python -m bench.embed_speed [--model NAME]``.

Prepares the notes of the test corpora exactly as the indexer does (chunking,
scrubbing, the embedding input with its title and heading prefix), takes a fixed
random sample of the chunks (``--sample``, seed 0), and embeds it in the
indexer's batches (``[index] batch_size``, sorted by length as the indexer does)
with ``--threads`` intra-op threads. Prints chunks per wall second and CPU
milliseconds per chunk (steadier than wall time on a shared machine), the token
lengths, and the query encoding time on one thread (p50 / p95 over 200 queries),
each with the load average.

The figure to plan an index with: ``chunks / (chunks per wall second)``; on an idle
2-core machine the CPU figure gives the floor, ``chunks x CPU ms / 2 cores``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tarfile
import tempfile
import time
from pathlib import Path

from signaldesk.retrieval._prepare import FileJob, PreparedNote, PrepareOptions, prepare_file
from signaldesk.retrieval.embedder import load_embedder
from signaldesk.retrieval.onnx_embedder import ONNX_MODEL_NAME
from signaldesk.retrieval.settings import IndexSettings

__all__ = ["main"]

_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "vaults"
_TARBALLS = ("tldr-pages.tar.gz", "obsidian-hub.tar.gz")


def _inputs(data: Path, settings: IndexSettings) -> list[str]:
    options = PrepareOptions(
        settings.chunk_max_chars, settings.chunk_min_chars, settings.embed_max_chars
    )
    with tempfile.TemporaryDirectory(prefix="signaldesk-embed-speed-") as tmp:
        for name in _TARBALLS:
            with tarfile.open(data / name) as archive:
                archive.extractall(tmp, filter="data")
        seen: dict[str, str] = {}
        for path in sorted(Path(tmp).rglob("*.md")):
            stat = path.stat()
            job = FileJob(str(path.relative_to(tmp)), stat.st_mtime_ns, stat.st_size, None, True)
            outcome = prepare_file(tmp, job, options)
            if isinstance(outcome, PreparedNote):
                for chunk in outcome.chunks:
                    seen.setdefault(chunk.embed_hash, chunk.embed_input)
    return list(seen.values())


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.embed_speed", description=__doc__)
    parser.add_argument("--model", default=ONNX_MODEL_NAME, help="[index] model")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (0: all)")
    parser.add_argument("--sample", type=int, default=2000, help="chunks to embed")
    parser.add_argument("--data", type=Path, default=_DATA, help="folder with the tarballs")
    args = parser.parse_args(argv)
    settings = IndexSettings(model=args.model, embed_threads=args.threads)
    texts = _inputs(args.data, settings)
    sample = random.Random(0).sample(texts, min(args.sample, len(texts)))
    sample.sort(key=len)
    embedder = load_embedder(settings)
    embedder.encode(sample[:64])  # the batch session, built outside the timing
    print(f"model {embedder.name}; {len(texts)} distinct chunks, {len(sample)} sampled")
    print(f"load before: {_load()}")
    cpu, wall = time.process_time(), time.perf_counter()
    for start in range(0, len(sample), settings.batch_size):
        embedder.encode(sample[start : start + settings.batch_size])
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"chunks per wall second: {len(sample) / wall:.1f}")
    print(f"CPU ms per chunk (all threads): {1000 * cpu / len(sample):.1f}")
    print(f"load after: {_load()}")
    times = []
    for i in range(200):
        started = time.perf_counter()
        embedder.encode([f"how do I back up my vault with git, question {i}"])
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    print(f"query encoding p50 / p95 ms: {statistics.median(times):.2f} / {times[189]:.2f}")
    print(
        f"reproduce: python -m bench.embed_speed --model {args.model} "
        f"--threads {args.threads} --sample {args.sample}"
    )


if __name__ == "__main__":
    main()
