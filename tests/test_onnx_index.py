"""The transformer tier through the real indexer and retriever: dims, rebuilds, errors, progress."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from signaldesk.retrieval.embedder import BUNDLED_MODEL_NAME, LazyEmbedder, load_embedder
from signaldesk.retrieval.errors import ModelError
from signaldesk.retrieval.index_progress import IndexProgress
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.onnx_embedder import ONNX_MODEL_NAME, bundled_onnx_path
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.retrieval.status import index_status
from signaldesk.retrieval.store import connect, get_meta, index_db_path
from signaldesk.retrieval.weights import MEASURED
from tests.index_helpers import check_invariants, write_note

pytestmark = pytest.mark.anyio

NOTES = {
    "plugins/obsidian-git.md": (
        "Obsidian Git",
        "## About\n\nCommit and push the changes of your notes to a remote repository on a "
        "timer, pull on start-up, and see a history of every file.\n",
    ),
    "plugins/kanban.md": (
        "Kanban",
        "## About\n\nMarkdown-backed boards with lanes and cards: drag a card from one lane "
        "to the next as the work on it moves along.\n",
    ),
    "plugins/citations.md": (
        "Citations",
        "## About\n\nLook up entries of a Zotero or BibTeX library and insert a formatted "
        "reference, or open a literature note for the paper.\n",
    ),
    "recipes/bread.md": (
        "Sourdough bread",
        "## Method\n\nFeed the starter, mix flour and water, fold the dough every half hour "
        "and bake in a hot cast-iron pot.\n",
    ),
}


def _vault(root: Path) -> Path:
    vault = root / "vault"
    for rel, (title, body) in NOTES.items():
        write_note(vault, rel, body, title=title)
    return vault


def _settings(vault: Path, model: str = ONNX_MODEL_NAME, **kw: object) -> IndexSettings:
    return IndexSettings(model=model, db_path=str(vault.parent / "index.db"), **kw)  # type: ignore[arg-type]


def _meta(vault: Path, settings: IndexSettings, key: str) -> str | None:
    conn = connect(index_db_path(vault, settings), readonly=True)
    try:
        return get_meta(conn, key)
    finally:
        conn.close()


async def test_the_tier_indexes_384_dim_vectors_and_finds_paraphrases(tmp_path: Path) -> None:
    vault = _vault(tmp_path)
    settings = _settings(vault)
    report = await Indexer(vault, settings, LazyEmbedder(settings), workers=1).run()
    assert report.chunks_embedded == len(NOTES)
    assert check_invariants(vault, settings) == {"notes": 4, "chunks": 4}
    assert _meta(vault, settings, "model_name") == ONNX_MODEL_NAME
    assert _meta(vault, settings, "dimensions") == "384"
    assert _meta(vault, settings, "vector_type") == "int8"
    status = index_status(vault, settings)
    assert status.model == ONNX_MODEL_NAME
    assert status.dimensions == 384
    questions = {
        "back up my notes to a server automatically": "plugins/obsidian-git.md",
        "a board to manage my tasks": "plugins/kanban.md",
        "add a bibliography entry from my reference manager": "plugins/citations.md",
    }
    embedder = LazyEmbedder(settings)
    async with await Retriever.open(vault, settings, SearchSettings(), embedder) as retriever:
        for question, expected in questions.items():
            results = await retriever.search(question, limit=1, mode="vector")
            assert [r.path for r in results] == [expected], question
        # The fusion uses the weights measured for this kind of model, not the static one's.
        explained = await retriever.explain("a board to manage my tasks", limit=3)
        assert explained.weights["note"] == MEASURED["transformer"].note
        assert explained.weights["bm25"] == MEASURED["transformer"].bm25
        assert explained.rows[0].path == "plugins/kanban.md"


async def test_switching_between_tiers_rebuilds_by_itself(tmp_path: Path) -> None:
    vault = _vault(tmp_path)
    static = _settings(vault, BUNDLED_MODEL_NAME)
    await Indexer(vault, static, load_embedder(static), workers=1).run()
    assert _meta(vault, static, "dimensions") == "256"

    tier = _settings(vault)
    report = await Indexer(vault, tier, LazyEmbedder(tier), workers=1).run()
    assert report.full_rebuild
    assert report.rebuild_reason is not None
    assert "embedding model changed" in report.rebuild_reason
    assert ONNX_MODEL_NAME in report.rebuild_reason
    assert report.chunks_embedded == len(NOTES)
    assert _meta(vault, tier, "dimensions") == "384"
    check_invariants(vault, tier)

    again = await Indexer(vault, tier, LazyEmbedder(tier), workers=1).run()
    assert not again.full_rebuild
    assert again.chunks_embedded == 0


async def test_a_tier_that_cannot_load_leaves_the_index_as_it_is(tmp_path: Path) -> None:
    vault = _vault(tmp_path)
    settings = _settings(vault)
    await Indexer(vault, settings, LazyEmbedder(settings), workers=1).run()
    fingerprint = _meta(vault, settings, "model_fingerprint")

    broken = tmp_path / "broken-model"
    shutil.copytree(bundled_onnx_path(), broken)
    (broken / "model.onnx").write_bytes(b"truncated")
    write_note(vault, "recipes/soup.md", "## Method\n\nSimmer the onions for an hour.\n")
    configured = _settings(vault, str(broken))
    with pytest.raises(ModelError, match="does not match its SHA-256"):
        await Indexer(vault, configured, LazyEmbedder(configured), workers=1).run()
    # No fallback to the static model, no rebuild: the vectors are the tier's, untouched.
    assert _meta(vault, settings, "model_fingerprint") == fingerprint
    assert check_invariants(vault, settings) == {"notes": 4, "chunks": 4}


async def test_progress_counts_chunks_while_a_batch_is_embedded(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for i in range(9):
        write_note(vault, f"n{i}.md", f"## Part\n\nNote {i} is about topic {i % 4} and more.\n")
    settings = _settings(vault, batch_size=2)
    seen: list[IndexProgress] = []
    report = await Indexer(vault, settings, LazyEmbedder(settings), workers=1).run(
        progress=seen.append
    )
    assert report.chunks_embedded == 9
    embedded = [p.chunks_embedded for p in seen if p.phase == "indexing"]
    # One transaction holds all nine notes; the count still moves batch by batch before it.
    assert embedded == sorted(embedded)
    assert {2, 4, 6, 8} <= set(embedded)
    assert all(p.files_done == 0 for p in seen if p.phase == "indexing" and p.chunks_embedded < 9)
    assert seen[-1].phase == "done" and seen[-1].chunks_embedded == 9
