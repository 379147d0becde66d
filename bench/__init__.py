"""Benchmarks and the retrieval-quality harness (``python -m bench.<name>``)."""
