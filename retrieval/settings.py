"""Settings for the index and the retriever (the `[index]` and `[search]` TOML sections)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from signaldesk.settings import SettingsModel


class IndexSettings(SettingsModel):
    """How the vault is chunked, embedded and stored."""

    model: str = Field(
        "minishlab/potion-base-8M",
        description=(
            "Embedding model: a Model2Vec model name or local folder (when it cannot be "
            "loaded, offline or not cached, the static model bundled with signaldesk is "
            "used), or `minilm-l6-onnx`: the transformer tier shipped with signaldesk "
            "(all-MiniLM-L6-v2 on ONNX Runtime; better search, slower indexing, needs "
            "`pip install 'signaldesk[onnx]'`; see docs/ranking.md). A transformer that "
            "cannot be loaded is an error, never a silent switch. The index records which "
            "model built its vectors and rebuilds when it changes."
        ),
    )
    allow_download: bool = Field(
        False,
        description=(
            "Let the embedding library download `model` from the Hugging Face hub when it is "
            "not cached. Off by default: signaldesk makes no network calls of its own."
        ),
    )
    batch_size: int = Field(64, ge=1, description="Chunks embedded per batch.")
    embed_threads: int = Field(
        0,
        ge=0,
        description=(
            "Threads the transformer tier (`minilm-l6-onnx`) uses to embed chunks while "
            "indexing (0: every core). A query is always embedded on one thread."
        ),
    )
    chunk_max_chars: int = Field(
        1800,
        ge=200,
        description="Sections longer than this are split at paragraph boundaries.",
    )
    chunk_min_chars: int = Field(
        200,
        ge=0,
        description="Fragments shorter than this are merged into a neighbouring chunk.",
    )
    embed_max_chars: int = Field(
        800,
        ge=0,
        description=(
            "Characters of each chunk (after its title and heading path) given to the "
            "embedding model; 0 embeds all of it. A static model averages every token, so "
            "a long tail dilutes the vector (docs/ranking.md has the measurements)."
        ),
    )
    db_path: str = Field(
        ".signaldesk/index.db",
        description="Index database, relative to the vault root (or absolute).",
    )


class SearchSettings(SettingsModel):
    """How a query is ranked."""

    limit: int = Field(5, ge=1, description="Results returned when no limit is given.")
    max_tokens: int = Field(
        2000, ge=50, description="Token budget for returned text (about 4 characters a token)."
    )
    mode: Literal["hybrid", "bm25", "vector"] = Field(
        "hybrid",
        description=(
            "Default search mode: keyword and semantic lists fused (hybrid), or one list alone."
        ),
    )
    fusion: Literal["blend", "rrf"] = Field(
        "blend",
        description=(
            "How the keyword and vector lists are fused: `blend` mixes normalised scores "
            "(measured best, see docs/ranking.md); `rrf` is weighted Reciprocal Rank Fusion."
        ),
    )
    bm25_weight: float = Field(
        0.75, ge=0.0, description="Weight of the keyword (BM25) list in fusion."
    )
    vector_weight: float = Field(
        0.25, ge=0.0, description="Weight of the vector (semantic) list in fusion."
    )
    rrf_k: int = Field(
        60, ge=1, description="RRF constant k: larger flattens the difference between ranks."
    )
    candidates: int = Field(
        100,
        ge=1,
        description="Candidates taken from each list before fusion (the fusion depth).",
    )
    column_weights: tuple[float, float, float] = Field(
        (1.0, 0.5, 0.3),
        description="BM25 weights of the chunk text, its section heading and its context "
        "(title, tags, heading path).",
    )
    vector_matrix: bool = Field(
        True,
        description=(
            "Keep an in-memory copy of the vectors for fast exact KNN (about 1 KB per chunk). "
            "Off: sqlite-vec is queried directly, slower but using no extra memory."
        ),
    )
    context_results: int = Field(
        8, ge=1, description="Chunks considered when building a `context` block for a topic."
    )
    context_links: int = Field(
        3,
        ge=0,
        description=(
            "Notes that the top excerpts link to ([[wiki-links]]) added after them in a "
            "`context` block while the token budget allows (0: none)."
        ),
    )
    per_note: int = Field(
        2,
        ge=0,
        description=(
            "At most this many chunks of one note among the results, so one long note "
            "cannot crowd out the others (0: no limit)."
        ),
    )
