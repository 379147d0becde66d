"""The hybrid retriever against the real indexer and the real bundled model.

One small vault (real-shaped notes with frontmatter, folders, an ignored
folder and real Chinese / Japanese / Korean tldr pages) is indexed once per
module; tests that change an index work on their own copy.
"""

from __future__ import annotations

import os
import shutil
import tarfile
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import anyio
import numpy as np
import numpy.typing as npt
import pytest

from signaldesk.retrieval.context_block import SOURCE_SEPARATOR as SEP
from signaldesk.retrieval.context_block import render_context
from signaldesk.retrieval.embedder import Embedder, load_embedder
from signaldesk.retrieval.errors import IndexUnavailableError, QueryError
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.records import SearchFilters
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.settings import IndexSettings, SearchSettings
from signaldesk.retrieval.store import connect
from tests.hostile_queries import HOSTILE
from tests.index_helpers import CountingEmbedder

pytestmark = pytest.mark.anyio

NOTES: dict[str, str] = {
    "notes/sourdough.md": """---
type: note
domain: cooking
tags: [baking, bread]
status: active
created: 2024-02-01
updated: 2024-03-01
---
# Sourdough bread

## Feeding the starter

A sourdough starter is a culture of wild yeast and lactic bacteria. Feed it
flour and water every day, keep it at room temperature, and discard half before
each feeding so the levain stays active and bubbly.

## Baking day

Mix the levain with flour, water and salt, fold the dough every half hour,
shape a boule and bake it in a hot Dutch oven for a crisp crust.
""",
    "notes/kubernetes.md": """---
type: reference
domain: tech
tags: [k8s, ops]
status: draft
created: 2025-01-01
updated: 2025-01-10
---
# Kubernetes cheat sheet

## Workloads

Pods run one or more containers. A Deployment keeps a number of replica pods
running and rolls out new versions of the container image gradually.

## kubectl

Use kubectl get pods to list workloads, kubectl logs to read container output
and kubectl rollout undo to go back to the previous version.
""",
    "projects/garden.md": """---
type: project
domain: home
tags: [garden]
status: active
created: 2023-05-01
updated: 2023-06-05
---
# Vegetable garden

## Tomatoes

Water the tomato plants deeply twice a week in the morning, mulch with straw,
and pinch off suckers so the plant puts its energy into fruit.

## Compost

Turn the compost heap every few weeks; mix green kitchen scraps with brown
dry leaves to keep it from smelling.
""",
    "projects/security/incident.md": """---
type: report
domain: tech
tags: [security, ops]
status: done
created: 2025-02-18
updated: 2025-02-20
---
# Leaked credential incident

## Timeline

An access key was pushed to a public repository. We revoked it within an
hour, rotated every secret the service used and reviewed the audit logs for
unauthorised access.

## Lessons

Scan commits for secrets before they are pushed, and keep credentials in a
vault rather than in configuration files.
""",
    "notes/history.md": """---
type: note
domain: reading
tags: [history]
created: 2022-01-01
updated: 2022-01-02
---
# Roman roads

## Construction

"""
    + " ".join(
        f"Roman engineers laid layer {i} of gravel, sand and paving stones so the road drained."
        for i in range(40)
    )
    + """

## Legacy

Many modern European highways still follow the straight lines of the old
Roman roads, and milestones survive along several routes.
""",
    "private/secret-plans.md": """# Secret plans

The zanzibar expedition leaves in spring; this note must never be indexed.
""",
}

TLDR_PAGES = {
    "tldr/zh/tar.md": "files/pages.zh/common/tar.md",
    "tldr/zh/ls.md": "files/pages.zh/common/ls.md",
    "tldr/ja/tar.md": "files/pages.ja/common/tar.md",
    "tldr/ja/ls.md": "files/pages.ja/common/ls.md",
    "tldr/ko/tar.md": "files/pages.ko/common/tar.md",
    "tldr/ko/ls.md": "files/pages.ko/common/ls.md",
}

TLDR_MTIME = datetime(2021, 6, 1, tzinfo=UTC).timestamp()
SEARCH = SearchSettings()


def _write_vault(root: Path, shared: Path) -> Path:
    vault = root / "vault"
    for rel, text in NOTES.items():
        target = vault / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (vault / ".indexignore").write_text("private/\n", encoding="utf-8")
    with tarfile.open(shared / "vaults" / "tldr-pages.tar.gz") as tar:
        for rel, member in TLDR_PAGES.items():
            source = tar.extractfile(member)
            assert source is not None
            target = vault / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())
            # No frontmatter dates: the index falls back to the file's mtime.
            os.utime(target, (TLDR_MTIME, TLDR_MTIME))
    return vault


def _settings(vault: Path) -> IndexSettings:
    return IndexSettings(db_path=str(vault.parent / "index.db"))


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return load_embedder(IndexSettings())


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Path]:
    """The vault, indexed once for the module (read-only for the tests using it)."""
    from tests.conftest import SHARED_DATA

    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    vault = _write_vault(tmp_path_factory.mktemp("retriever"), SHARED_DATA)
    Indexer(vault, _settings(vault), embedder).run_sync()
    yield vault


async def _open(
    vault: Path, embedder: Embedder | None, search: SearchSettings = SEARCH
) -> Retriever:
    return await Retriever.open(vault, _settings(vault), search, embedder)


def _copy_index(vault: Path, dest_root: Path) -> Path:
    """A consistent copy of the vault's index (VACUUM INTO sees committed WAL pages)."""
    dest_root.mkdir(parents=True, exist_ok=True)
    conn = connect(vault.parent / "index.db", readonly=True)
    conn.execute("VACUUM INTO ?", (str(dest_root / "index.db"),))
    conn.close()
    copy = dest_root / "vault"
    shutil.copytree(vault, copy)
    return copy


# -- ranking -------------------------------------------------------------------


async def test_hybrid_finds_the_expected_note(indexed: Path, embedder: Embedder) -> None:
    async with await _open(indexed, embedder) as retriever:
        results = await retriever.search("how do I keep my bread starter alive", limit=3)
    assert results[0].path == "notes/sourdough.md"
    assert results[0].section == "Feeding the starter"
    assert results[0].title == "Sourdough bread"
    assert results[0].bm25_rank is not None and results[0].vector_rank is not None
    assert results[0].score >= results[-1].score


async def test_a_note_with_most_but_not_all_words_still_ranks(
    indexed: Path, embedder: Embedder
) -> None:
    async with await _open(indexed, embedder) as retriever:
        results = await retriever.search("rotate leaked secrets zebra quasar", limit=3, mode="bm25")
    assert results and results[0].path == "projects/security/incident.md"


async def test_modes_report_their_own_ranks(indexed: Path, embedder: Embedder) -> None:
    async with await _open(indexed, embedder) as retriever:
        bm25 = await retriever.search("tomato watering", mode="bm25")
        vector = await retriever.search("tomato watering", mode="vector")
        explained = await retriever.explain("tomato watering")
    assert bm25[0].path == "projects/garden.md"
    assert all(r.vector_rank is None and r.bm25_rank is not None for r in bm25)
    assert all(r.bm25_rank is None and r.vector_rank is not None for r in vector)
    assert explained.mode == "hybrid" and explained.degraded == ()
    assert explained.match == '"tomato" OR "watering"'
    assert explained.rows[0].bm25_score is not None and explained.rows[0].vector_score is not None
    assert set(explained.weights) == {"note", "bm25", "vector"}
    assert explained.rows[0].note_rank is not None and explained.rows[0].note_score is not None


async def test_sqlite_vec_fallback_matches_the_matrix(indexed: Path, embedder: Embedder) -> None:
    no_matrix = SearchSettings(vector_matrix=False)
    async with (
        await _open(indexed, embedder) as fast,
        await _open(indexed, embedder, no_matrix) as slow,
    ):
        for query, filters in (
            ("tomato watering", None),
            ("secret rotation", SearchFilters(domain="tech")),
        ):
            a = await fast.search(query, mode="vector", limit=5, filters=filters)
            b = await slow.search(query, mode="vector", limit=5, filters=filters)
            assert [r.path for r in a] == [r.path for r in b]
            # int8 vectors: sqlite-vec also quantises the query, the matrix does not.
            assert [r.score for r in a] == pytest.approx([r.score for r in b], abs=5e-3)
        hybrid_a = await fast.search("tomato watering", limit=5)
        hybrid_b = await slow.search("tomato watering", limit=5)
    assert [r.path for r in hybrid_a] == [r.path for r in hybrid_b]


async def test_results_are_deterministic(indexed: Path, embedder: Embedder) -> None:
    async with await _open(indexed, embedder) as retriever:
        first = await retriever.search("roads", limit=10)
        second = await retriever.search("roads", limit=10)
    assert [(r.path, r.section, r.score) for r in first] == [
        (r.path, r.section, r.score) for r in second
    ]


@pytest.mark.parametrize("query", HOSTILE)
async def test_hostile_queries_do_not_raise(indexed: Path, embedder: Embedder, query: str) -> None:
    async with await _open(indexed, embedder) as retriever:
        await retriever.search(query)
        await retriever.explain(query, mode="bm25")


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
@pytest.mark.parametrize("query", ['"""', "***", "🦀"])
async def test_a_query_of_punctuation_or_symbols_alone_finds_nothing(
    indexed: Path, embedder: Embedder, query: str, mode: str
) -> None:
    # Its vector is zero (no token the model knows): before, the vector list gave the
    # first chunks in storage order, each scored 0.
    assert not embedder.encode([query]).any()
    async with await _open(indexed, embedder) as retriever:
        assert await retriever.search(query, mode=mode) == []  # type: ignore[arg-type]


class _FailsOnQueries(CountingEmbedder):
    """The bundled model, broken after the index was built: every query fails to embed."""

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        raise RuntimeError("the model's weights are gone")


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
async def test_a_query_the_model_cannot_embed_is_a_keyword_search_that_says_so(
    indexed: Path, embedder: Embedder, mode: str
) -> None:
    # A model that loads (its fingerprint matches the index) but fails on the query: the
    # search is the keyword search it can still be, and says why, in both modes.
    query = "feed the sourdough starter"
    async with await _open(indexed, _FailsOnQueries(embedder)) as retriever:
        failed = await retriever.explain(query, mode=mode)  # type: ignore[arg-type]
        keyword = await retriever.explain(query, mode="bm25")
    assert failed.mode == "bm25"
    assert [d for d in failed.degraded if "could not embed the query" in d] == [
        "could not embed the query: the model's weights are gone: keyword search only"
    ]
    shown = [(r.path, r.section, r.score) for r in failed.results]
    assert shown and shown == [(r.path, r.section, r.score) for r in keyword.results]


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
async def test_empty_query_is_a_clear_error(indexed: Path, embedder: Embedder, query: str) -> None:
    async with await _open(indexed, embedder) as retriever:
        with pytest.raises(QueryError, match="empty"):
            await retriever.search(query)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("压缩文件", "tldr/zh/tar.md"),
        ("アーカイブを作成", "tldr/ja/tar.md"),
        ("아카이브 유틸리티", "tldr/ko/tar.md"),
    ],
)
async def test_cjk_phrases_are_found_by_keyword(
    indexed: Path, embedder: Embedder, query: str, expected: str
) -> None:
    async with await _open(indexed, embedder) as retriever:
        results = await retriever.search(query, mode="bm25", limit=3)
    assert results and results[0].path == expected


async def test_ignored_notes_never_appear(indexed: Path, embedder: Embedder) -> None:
    async with await _open(indexed, embedder) as retriever:
        for mode in ("hybrid", "bm25", "vector"):
            results = await retriever.search(
                "zanzibar expedition secret plans", mode=mode, limit=50
            )
            assert all(not r.path.startswith("private/") for r in results)


# -- filters -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filters", "allowed"),
    [
        (SearchFilters(folder="projects"), {"projects/garden.md", "projects/security/incident.md"}),
        (SearchFilters(folder="projects/security/"), {"projects/security/incident.md"}),
        (SearchFilters(type="reference"), {"notes/kubernetes.md"}),
        (SearchFilters(domain="tech"), {"notes/kubernetes.md", "projects/security/incident.md"}),
        (SearchFilters(tags=("ops",)), {"notes/kubernetes.md", "projects/security/incident.md"}),
        (SearchFilters(tags=("ops", "security")), {"projects/security/incident.md"}),
        (SearchFilters(status="active"), {"notes/sourdough.md", "projects/garden.md"}),
        (
            SearchFilters(since=date(2025, 1, 1)),
            {"notes/kubernetes.md", "projects/security/incident.md"},
        ),
        (
            SearchFilters(until=date(2023, 12, 31)),
            {"projects/garden.md", "notes/history.md", *TLDR_PAGES},
        ),
        (
            SearchFilters(since=date(2024, 1, 1), until=date(2024, 12, 31)),
            {"notes/sourdough.md"},
        ),
    ],
)
async def test_each_filter_applies_to_both_lists(
    indexed: Path, embedder: Embedder, filters: SearchFilters, allowed: set[str]
) -> None:
    async with await _open(indexed, embedder) as retriever:
        for mode in ("hybrid", "bm25", "vector"):
            results = await retriever.search(
                "water the plants and rotate the secret pods of bread roads",
                filters=filters,
                mode=mode,
                limit=50,
            )
            paths = {r.path for r in results}
            assert paths, (mode, filters)
            assert paths <= allowed, (mode, filters, paths - allowed)
        notes = await retriever.list_notes(filters)
    assert {n.path for n in notes} == allowed


async def test_list_notes_newest_first(indexed: Path, embedder: Embedder) -> None:
    async with await _open(indexed, embedder) as retriever:
        notes = await retriever.list_notes(limit=3)
    assert [n.path for n in notes] == [
        "projects/security/incident.md",
        "notes/kubernetes.md",
        "notes/sourdough.md",
    ]
    assert all("private/" not in n.path for n in notes)


# -- token budget and context ----------------------------------------------------


async def test_token_budget_cuts_rather_than_drops(indexed: Path, embedder: Embedder) -> None:
    async with await _open(indexed, embedder) as retriever:
        full = await retriever.search("Roman roads gravel paving", limit=5, max_tokens=100_000)
        cut = await retriever.search("Roman roads gravel paving", limit=5, max_tokens=200)
        tiny = await retriever.search("Roman roads gravel paving", limit=5, max_tokens=1)
    assert len(full[0].text) > 800  # the long section really is long
    assert sum(len(r.text) for r in cut) <= 200 * 4
    assert cut[-1].text.endswith("...")
    assert cut[0].path == full[0].path
    assert len(tiny) == 1 and tiny[0].text.endswith("...")


async def test_context_block_has_sources_and_keeps_the_budget(
    indexed: Path, embedder: Embedder
) -> None:
    async with await _open(indexed, embedder) as retriever:
        excerpts = await retriever.context("sourdough starter feeding")
        nothing = await retriever.context("xylophone", filters=SearchFilters(folder="nowhere"))
    block = render_context(excerpts, 60).text
    none = render_context(nothing, 60).text
    assert block.startswith(f"### notes/sourdough.md{SEP}Sourdough bread{SEP}Feeding the starter")
    assert len(block) <= 60 * 4 + 1
    assert block.rstrip().endswith("...")
    assert "No notes" in none


# -- index changes, concurrency, status ------------------------------------------


async def test_open_retriever_sees_another_writers_update(
    indexed: Path, embedder: Embedder, tmp_path: Path
) -> None:
    vault = _copy_index(indexed, tmp_path)
    async with await _open(vault, embedder) as retriever:
        before = await retriever.search("quokka wombat marsupial", mode="bm25")
        assert all(r.path != "notes/quokka.md" for r in before)
        await retriever.search("warm the vector matrix", mode="vector")
        (vault / "notes" / "quokka.md").write_text(
            "# Quokka\n\nThe quokka is a small marsupial from Rottnest Island that looks like "
            "it is smiling; a wombat is a much larger burrowing marsupial.\n",
            encoding="utf-8",
        )
        await Indexer(vault, _settings(vault), embedder).run()
        after_bm25 = await retriever.search("quokka wombat marsupial", mode="bm25")
        after_vec = await retriever.search("quokka wombat marsupial", mode="vector", limit=3)
        (vault / "notes" / "quokka.md").unlink()
        await Indexer(vault, _settings(vault), embedder).run()
        gone = await retriever.search("quokka wombat marsupial", limit=20)
    assert after_bm25[0].path == "notes/quokka.md"
    assert after_vec[0].path == "notes/quokka.md"
    assert all(r.path != "notes/quokka.md" for r in gone)


@pytest.mark.parametrize("dense", [True, False])
async def test_a_server_keeps_its_scan_choice_for_every_generation(
    indexed: Path, embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dense: bool
) -> None:
    """Whichever scan warm-up finds faster here (forced both ways), the results are the
    ones a one-shot search (the rows as stored) gives, and a later generation's matrix
    is scanned the same way."""
    from signaldesk.retrieval import query_vectors

    vault = _copy_index(indexed, tmp_path)
    async with await _open(vault, embedder) as plain:
        expected = await plain.search("sourdough bread starter", limit=5)
    monkeypatch.setattr(
        query_vectors, "faster_scan", lambda matrix: matrix.with_dense() if dense else matrix
    )
    async with await _open(vault, embedder) as retriever:
        await retriever.warm_up()
        matrix = retriever._vectors.matrix
        assert matrix is not None and (matrix.dense is not None) is dense
        assert await retriever.search("sourdough bread starter", limit=5) == expected
        (vault / "notes" / "quokka.md").write_text("# Quokka\n\nA small marsupial.\n")
        await Indexer(vault, _settings(vault), embedder).run()
        found = await retriever.search("quokka marsupial", mode="vector", limit=1)
        later = retriever._vectors.matrix
    assert found[0].path == "notes/quokka.md"
    assert later is not None and later is not matrix and (later.dense is not None) is dense


async def test_concurrent_searches_agree_with_sequential(indexed: Path, embedder: Embedder) -> None:
    queries = [
        "bread starter",
        "kubectl rollout",
        "tomato compost",
        "credential rotation",
        "压缩文件",
    ] * 4
    async with await _open(indexed, embedder) as retriever:
        expected = {
            q: [(r.path, r.section) for r in await retriever.search(q)] for q in set(queries)
        }
        got: list[tuple[str, list[tuple[str, str]]]] = []

        async def one(q: str) -> None:
            got.append((q, [(r.path, r.section) for r in await retriever.search(q)]))

        async with anyio.create_task_group() as tg:
            for q in queries:
                tg.start_soon(one, q)
    assert len(got) == len(queries)
    for q, paths in got:
        assert paths == expected[q]


async def test_status_counts_and_model(indexed: Path, embedder: Embedder) -> None:
    async with await _open(indexed, embedder) as retriever:
        await retriever.warm_up()
        status = await retriever.status()
    assert status.exists and status.notes == len(NOTES) - 1 + len(TLDR_PAGES)
    assert status.chunks >= status.notes and status.vectors == status.chunks
    assert status.model == embedder.name and status.dimensions == embedder.dimensions
    assert status.degraded == ()
    assert status.folders["notes"] == 3 and "private" not in status.folders


# -- degraded modes ------------------------------------------------------------


async def test_no_index_names_the_command(tmp_path: Path, embedder: Embedder) -> None:
    with pytest.raises(IndexUnavailableError) as info:
        await Retriever.open(tmp_path, _settings(tmp_path / "vault"), SEARCH, embedder)
    assert "signaldesk index" in (info.value.hint or "")


async def test_no_model_means_bm25_only(indexed: Path) -> None:
    async with await _open(indexed, None) as retriever:
        explained = await retriever.explain("bread starter")
        status = await retriever.status()
    assert explained.mode == "bm25" and explained.results[0].path == "notes/sourdough.md"
    assert any("model" in d for d in explained.degraded)
    assert status.degraded


async def test_index_without_vectors_means_bm25_only(
    indexed: Path, embedder: Embedder, tmp_path: Path
) -> None:
    vault = _copy_index(indexed, tmp_path)
    conn = connect(tmp_path / "index.db")
    conn.execute("DROP TABLE chunk_vectors")
    conn.commit()
    conn.close()
    async with await _open(vault, embedder) as retriever:
        explained = await retriever.explain("bread starter", mode="vector")
        status = await retriever.status()
    assert explained.mode == "bm25" and explained.results[0].path == "notes/sourdough.md"
    assert explained.degraded and status.degraded and status.vectors == 0


async def test_index_without_fts_means_vectors_only(
    indexed: Path, embedder: Embedder, tmp_path: Path
) -> None:
    vault = _copy_index(indexed, tmp_path)
    conn = connect(tmp_path / "index.db")
    conn.execute("DROP TRIGGER IF EXISTS chunks_fts_delete")
    conn.execute("DROP TABLE chunks_fts")
    conn.commit()
    conn.close()
    async with await _open(vault, embedder) as retriever:
        explained = await retriever.explain("bread starter", mode="bm25")
    assert explained.mode == "vector" and explained.match is None
    assert explained.results and all(r.vector_rank is not None for r in explained.results)
    assert any("FTS5" in d for d in explained.degraded)


async def test_vectors_from_another_model_are_not_used(indexed: Path, embedder: Embedder) -> None:
    class OtherModel:
        name = "other"
        fingerprint = "not-the-index-model"
        dimensions = embedder.dimensions

        def encode(self, texts: object) -> object:
            return embedder.encode(list(texts))  # type: ignore[call-overload]

    async with await _open(indexed, OtherModel()) as retriever:  # type: ignore[arg-type]
        explained = await retriever.explain("bread starter")
    assert explained.mode == "bm25"
    assert any("signaldesk index" in d for d in explained.degraded)


async def test_one_long_note_cannot_crowd_out_the_others(
    indexed: Path, embedder: Embedder, tmp_path: Path
) -> None:
    vault = _copy_index(indexed, tmp_path)
    sections = "\n\n".join(
        f"## Lemur fact {n}\n\n" + f"Ring-tailed lemurs of Madagascar, observation {n}. " * 30
        for n in range(6)
    )
    (vault / "notes" / "lemurs.md").write_text(f"# Lemurs\n\n{sections}\n", encoding="utf-8")
    (vault / "notes" / "madagascar.md").write_text(
        "# Madagascar trip\n\nWe saw ring-tailed lemurs near the Madagascar coast.\n",
        encoding="utf-8",
    )
    await Indexer(vault, _settings(vault), embedder).run()
    async with await _open(vault, embedder) as retriever:
        capped = await retriever.search("ring-tailed lemurs Madagascar", limit=5)
    uncapped_settings = SearchSettings(**{**SEARCH.model_dump(), "per_note": 0})
    async with await _open(vault, embedder, uncapped_settings) as retriever:
        uncapped = await retriever.search("ring-tailed lemurs Madagascar", limit=5)
    assert sum(r.path == "notes/lemurs.md" for r in uncapped) > 2
    assert sum(r.path == "notes/lemurs.md" for r in capped) == 1  # one result per note
    assert "notes/madagascar.md" in [r.path for r in capped]
    two_settings = SearchSettings(**{**SEARCH.model_dump(), "per_note": 2})
    async with await _open(vault, embedder, two_settings) as retriever:
        two = await retriever.search("ring-tailed lemurs Madagascar", limit=5)
    paths = [r.path for r in two]
    assert paths.count("notes/lemurs.md") == 2
    # A note's chunks are shown together, right after its best one.
    first = paths.index("notes/lemurs.md")
    assert paths[first + 1] == "notes/lemurs.md"


async def test_context_follows_wiki_links_from_the_top_excerpts(
    indexed: Path, embedder: Embedder, tmp_path: Path
) -> None:
    vault = _copy_index(indexed, tmp_path)
    notes = vault / "notes"
    (notes / "okapi.md").write_text(
        "# Okapi\n\nThe okapi is a forest giraffe of the Congo; see [[Ituri|the forest]] "
        "and [[okapi-diet#Leaves]], but not ![[okapi.png]] or [[Nowhere]].\n",
        encoding="utf-8",
    )
    (notes / "Ituri.md").write_text(
        "# Ituri\n\nA rainforest in the north-east of the DRC with dense canopy.\n",
        encoding="utf-8",
    )
    (notes / "okapi-diet.md").write_text(
        "---\ntitle: Browsing habits\n---\n# Browsing habits\n\n## Leaves\n\n"
        "It browses the understory for shoots, fruit and fungi.\n",
        encoding="utf-8",
    )
    await Indexer(vault, _settings(vault), embedder).run()
    # One search result, so every other note can only come in through a link.
    linked = SearchSettings(**{**SEARCH.model_dump(), "context_results": 1})
    async with await _open(vault, embedder, linked) as retriever:
        block = render_context(await retriever.context("okapi forest giraffe"), 2000).text
    from signaldesk.retrieval.one_shot import open_one_shot

    with open_one_shot(vault, _settings(vault), linked, embedder) as one:  # the CLI's way
        assert render_context(one.context("okapi forest giraffe"), 2000).text == block
    unlinked = SearchSettings(**{**linked.model_dump(), "context_links": 0})
    async with await _open(vault, embedder, unlinked) as retriever:
        plain = render_context(await retriever.context("okapi forest giraffe"), 2000).text
    assert f"### notes/okapi.md{SEP}Okapi" in block
    assert f"### notes/Ituri.md{SEP}Ituri (linked from notes/okapi.md)" in block
    assert "(linked from notes/okapi.md)" in block.split("okapi-diet.md", 1)[1].split("\n")[0]
    assert "understory" in block and "Nowhere" not in block.split("### ", 2)[-1]
    assert "(linked from" not in plain


# -- the one-shot search (the CLI's, in its own thread) -------------------------


def test_note_lists_read_beside_come_from_the_searchs_own_commit(
    indexed: Path, embedder: Embedder, tmp_path: Path
) -> None:
    """A side connection on a later commit is not used; on the same commit it ranks alike."""
    from signaldesk.retrieval.one_shot import open_one_shot
    from signaldesk.retrieval.search_core import SearchRequest

    vault = _copy_index(indexed, tmp_path)
    db = vault.parent / "index.db"
    writer = connect(db)
    writer.execute("PRAGMA journal_mode = WAL")  # as the indexer made it: readers never block
    writer.close()
    request = SearchRequest("marsupial bread starter", None, None, "hybrid", None, "drop")
    conn, side = connect(db, readonly=True), connect(db, readonly=True)
    with open_one_shot(vault, _settings(vault), SEARCH, embedder) as one:
        conn.execute("BEGIN")
        alone = one.execute_in(conn, request, explain=True)  # the snapshot starts here
        (vault / "notes" / "quokka.md").write_text(
            "# Quokka\n\nThe quokka is a small marsupial; its bread starter is a myth.\n",
            encoding="utf-8",
        )
        Indexer(vault, _settings(vault), embedder).run_sync()
        stale = one.execute_in(conn, request, explain=True, side=side)
        conn.execute("COMMIT")
        conn.execute("BEGIN")
        fresh_alone = one.execute_in(conn, request, explain=True)
        fresh = one.execute_in(conn, request, explain=True, side=side)
        conn.execute("COMMIT")
    conn.close()
    side.close()
    # The new note changes every note's BM25 statistics: a note list read on the
    # side's newer commit would change the rows.
    _same(stale, alone)
    _same(fresh, fresh_alone)
    assert fresh.results[0].path == "notes/quokka.md"
    assert fresh.rows != alone.rows


def _same(a: object, b: object) -> None:
    """Two explanations agree on everything but the clock."""
    import dataclasses

    assert dataclasses.replace(a, timings_ms={}) == dataclasses.replace(b, timings_ms={})  # type: ignore[type-var]


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "vector"])
async def test_a_one_shot_search_is_the_retrievers_search(
    indexed: Path, embedder: Embedder, mode: str
) -> None:
    from signaldesk.retrieval.one_shot import open_one_shot

    queries = ("how do I keep my bread starter alive", "kubectl rollout", "花园")
    filters = SearchFilters(folder="notes")
    async with await _open(indexed, embedder) as retriever:
        expected = [
            await retriever.explain(q, mode=mode, filters=f)  # type: ignore[arg-type]
            for q in queries
            for f in (None, filters)
        ]
    with open_one_shot(indexed, _settings(indexed), SEARCH, embedder) as one:
        got = [one.explain(q, mode=mode, filters=f) for q in queries for f in (None, filters)]  # type: ignore[arg-type]
        plain = one.explain(queries[0], mode=mode, explain=False)  # type: ignore[arg-type]
    for e, g in zip(expected, got, strict=True):
        _same(e, g)
    assert expected[0].rows and not plain.rows  # rows only when asked for
    assert plain.results == expected[0].results


async def test_a_one_shot_search_fails_as_the_retriever_does(
    indexed: Path, embedder: Embedder, tmp_path: Path
) -> None:
    from signaldesk.retrieval.one_shot import open_one_shot

    with (
        pytest.raises(IndexUnavailableError) as info,
        open_one_shot(tmp_path, _settings(tmp_path / "vault"), SEARCH, embedder),
    ):
        pass
    assert "signaldesk index" in (info.value.hint or "")
    with open_one_shot(indexed, _settings(indexed), SEARCH, None) as one:
        with pytest.raises(QueryError):
            one.explain("  ")
        keyword = one.explain("bread starter")
    assert keyword.mode == "bm25" and any("model" in d for d in keyword.degraded)


async def test_a_one_shot_context_is_the_retrievers_context(
    indexed: Path, embedder: Embedder
) -> None:
    from signaldesk.retrieval.one_shot import open_one_shot

    topics = ("how do I keep my bread starter alive", "kubectl rollout undo")
    async with await _open(indexed, embedder) as retriever:
        expected = [await retriever.context(t) for t in topics]
        expected.append(await retriever.context(topics[0], filters=SearchFilters(folder="notes")))
    with open_one_shot(indexed, _settings(indexed), SEARCH, embedder) as one:
        got = [one.context(t) for t in topics]
        got.append(one.context(topics[0], filters=SearchFilters(folder="notes")))
    assert [render_context(c, 2000).text for c in got] == [
        render_context(c, 2000).text for c in expected
    ]
    assert got == expected
