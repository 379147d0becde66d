"""The MATCH builder: hostile input never reaches FTS5 raw, CJK matches the index side."""

from __future__ import annotations

from pathlib import Path

import pytest

from signaldesk.retrieval.errors import QueryError
from signaldesk.retrieval.fts_query import MAX_TERMS, build_match, query_terms
from signaldesk.retrieval.fts_text import index_text
from signaldesk.retrieval.store import connect, migrate
from tests.hostile_queries import HOSTILE


def test_terms_are_lowercased_distinct_words() -> None:
    assert query_terms("Cats, DOGS and cats!") == ["cats", "dogs"]


def test_stopwords_dropped_unless_the_query_is_only_stopwords() -> None:
    assert query_terms("what is the role of the gut microbiome") == ["role", "gut", "microbiome"]
    assert query_terms("to be or not to be") == ["to", "be", "or", "not"]


def test_match_is_quoted_or_of_terms() -> None:
    assert build_match("vector search: fast") == '"vector" OR "search" OR "fast"'


def test_operators_become_plain_words() -> None:
    assert build_match("cats AND NOT dogs") == '"cats" OR "dogs"'
    assert build_match("NOT") == '"not"'


@pytest.mark.parametrize("query", ["", "   ", "\n\t "])
def test_empty_query_is_a_query_error(query: str) -> None:
    with pytest.raises(QueryError, match="empty"):
        build_match(query)


def test_symbol_only_query_has_no_keyword_match() -> None:
    assert build_match("🙂 -- **") is None


def test_long_query_is_bounded() -> None:
    terms = query_terms(" ".join(f"w{i}" for i in range(5000)))
    assert len(terms) == MAX_TERMS


def test_cjk_query_uses_the_index_bigrams() -> None:
    assert query_terms("压缩文件") == ["压缩", "缩文", "文件"]
    # Every query term is a token of the indexed form of a text containing it.
    indexed = set(index_text("如何压缩文件和目录").split())
    assert set(query_terms("压缩文件")) <= indexed


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_run_in_fts5(tmp_path: Path, query: str) -> None:
    conn = connect(tmp_path / "q.db")
    migrate(conn)
    conn.execute(
        "INSERT INTO chunks_fts (rowid, text, section, context) VALUES (1, ?, '', '')",
        (index_text("hello cats and dogs column value prefix start"),),
    )
    match = build_match(query)
    if match is not None:
        conn.execute(
            "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)
        ).fetchall()
    conn.close()
