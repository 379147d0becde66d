"""Why the PostgreSQL index computes BM25 itself: ``ts_rank`` against FTS5's ``bm25()``.

``python -m bench.quality.pg_tsrank [--keep-index DIR] [--split test]`` ranks SciFact's
notes by one chunk-level keyword list each, nothing fused, on the same chunks:

* FTS5 ``bm25()`` over ``chunks_fts`` (the SQLite index's chunk list);
* the PostgreSQL index's postings BM25 (retrieval/pg_search.py), which should equal it;
* PostgreSQL's own text search: ``to_tsvector('english', text)`` with a GIN index,
  ranked by ``ts_rank`` and by ``ts_rank_cd`` (any query word, as the product's OR query).

Each note scores by its best chunk. Run ``bench.quality --backend postgres --keep-index
DIR --sets scifact`` first: it builds both indexes in DIR and the ``bench_quality``
database, which this reads (the tsvector table is a scratch table of this script).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from bench.pg_server import bench_database
from bench.quality.datasets import Dataset, load_beir
from bench.quality.metrics import evaluate
from signaldesk.retrieval.fts_query import build_match, query_terms
from signaldesk.retrieval.settings import SearchSettings
from signaldesk.retrieval.store import connect as sqlite_connect

_SCIFACT = Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact"


def _by_note(rows: list[tuple[str, float]], dataset: Dataset) -> list[str]:
    best: dict[str, float] = {}
    for path, score in rows:
        doc = dataset.doc_id(path)
        best[doc] = max(score, best.get(doc, score))
    return [d for d, _ in sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))][:100]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.quality.pg_tsrank")
    p.add_argument("--keep-index", type=Path, default=Path("/tmp/pgindex/q"))
    p.add_argument("--split", default="test")
    p.add_argument("--pg-dsn")
    args = p.parse_args(argv)
    dataset = load_beir(_SCIFACT, args.split)
    db = args.keep_index / "scifact" / "index-default.db"
    weights = ", ".join(map(repr, SearchSettings().column_weights))
    lite = sqlite_connect(db, readonly=True)
    with bench_database(args.pg_dsn, "bench_quality", fresh=False) as pg:
        import psycopg

        conn = psycopg.connect(pg.dsn, autocommit=True)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS scratch_tsv AS SELECT c.id, n.path, "
            "to_tsvector('english', c.section || ' ' || c.text) AS tsv "
            "FROM index_chunks c JOIN index_notes n ON n.id = c.note_id"
        )
        conn.execute("CREATE INDEX IF NOT EXISTS scratch_tsv_gin ON scratch_tsv USING gin (tsv)")

        lite_paths = dict(
            lite.execute("SELECT c.id, n.path FROM chunks c JOIN notes n ON n.id = c.note_id")
        )

        def fts5(query: str) -> list[tuple[str, float]]:
            match = build_match(query)
            if match is None:
                return []
            ids = lite.execute(
                f"SELECT rowid, -bm25(chunks_fts, {weights}) FROM chunks_fts "
                "WHERE chunks_fts MATCH ?",
                (match,),
            ).fetchall()
            return [(lite_paths[i], s) for i, s in ids]

        def postings(query: str) -> list[tuple[str, float]]:
            from signaldesk.retrieval.pg_search import PgSource
            from signaldesk.retrieval.ranking import RankRequest

            req = RankRequest(
                mode="bm25",
                match="",
                key="",
                qvec=None,
                depth=1000,
                limit=10,
                filters=None,
                settings=SearchSettings(),
                query=query,
            )
            with conn.transaction():
                _, every = PgSource(conn, None).chunk_bm25(req)
                paths = dict(
                    conn.execute(
                        "SELECT c.id, n.path FROM index_chunks c JOIN index_notes n "
                        "ON n.id = c.note_id WHERE c.id = ANY(%s)",
                        (list(every),),
                    ).fetchall()
                )
            return [(paths[i], s) for i, s in every.items()]

        def ts(function: str) -> Callable[[str], list[tuple[str, float]]]:
            def run(query: str) -> list[tuple[str, float]]:
                terms = query_terms(query)
                if not terms:
                    return []
                q = " | ".join("'" + t.replace("'", "''") + "'" for t in terms)
                return conn.execute(
                    f"SELECT path, {function}(tsv, to_tsquery('english', %s)) FROM scratch_tsv "
                    "WHERE tsv @@ to_tsquery('english', %s)",
                    (q, q),
                ).fetchall()

            return run

        variants = {
            "FTS5 bm25() (SQLite chunk list)": fts5,
            "postings BM25 (PostgreSQL chunk list)": postings,
            "ts_rank, english tsvector + GIN": ts("ts_rank"),
            "ts_rank_cd, english tsvector + GIN": ts("ts_rank_cd"),
        }
        print(f"SciFact {args.split}: {len(dataset.queries)} queries; chunk keyword list only")
        for label, fn in variants.items():
            run = {qid: _by_note(fn(q), dataset) for qid, q in dataset.queries.items()}
            m = evaluate(run, dataset.qrels)
            print(f"  {label:<40} nDCG@10 {m.ndcg10:.4f}  R@100 {m.recall100:.3f}")
        conn.close()
    lite.close()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"reproduce: python -m bench.quality.pg_tsrank --keep-index {args.keep_index}")


if __name__ == "__main__":
    main()
