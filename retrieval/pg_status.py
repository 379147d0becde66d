"""What the team database's index holds, read without a model (``signaldesk index --status``)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from signaldesk.postgres import PostgresSettings, connect
from signaldesk.retrieval.records import IndexStatus

__all__ = ["pg_index_status", "read_pg_status", "vault_scope"]

logger = logging.getLogger(__name__)


def vault_scope(vaults: frozenset[str] | None, column: str) -> tuple[str, list[Any]]:
    """``AND column = ANY(...)`` for a set of vaults (nothing for ``None``: every vault)."""
    if vaults is None:
        return "", []
    return f"AND {column} = ANY(%s)", [sorted(vaults)]


def read_pg_status(conn: Any, vaults: frozenset[str] | None, dsn: str) -> IndexStatus:
    """Counts, model and last run of ``vaults`` (``None``: all) in one snapshot."""
    scope, params = vault_scope(vaults, "vault")
    where = f"true {scope}"
    rows = conn.execute(
        "SELECT vault, meta, last_indexed, note_rows, chunk_rows FROM index_vaults "
        f"WHERE {where} ORDER BY vault",
        params,
    ).fetchall()
    vectors = int(
        conn.execute(
            f"SELECT count(*) FROM index_chunks WHERE embedding IS NOT NULL AND {where}", params
        ).fetchone()[0]
        if _has_vectors(conn)
        else 0
    )
    folders: dict[str, int] = {}
    for vault, folder, count in conn.execute(
        "SELECT vault, CASE WHEN strpos(path, '/') > 0 THEN split_part(path, '/', 1) "
        f"ELSE '.' END AS folder, count(*) FROM index_notes WHERE {where} "
        "GROUP BY 1, 2 ORDER BY 1, 2",
        params,
    ):
        folders[f"{vault}:{folder}"] = int(count)
    size = int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])
    metas = [r[1] for r in rows]
    model = next((m.get("model_name") for m in metas if m.get("model_name")), None)
    dims = next((str(m.get("dimensions")) for m in metas if m.get("dimensions")), "")
    last: datetime | None = max((r[2] for r in rows if r[2] is not None), default=None)
    notes = sum(int(r[3]) for r in rows)
    chunks = sum(int(r[4]) for r in rows)
    degraded: list[str] = []
    if not rows:
        degraded.append("no vault indexed yet: run `signaldesk index`")
    if model and vectors < chunks:
        degraded.append(f"{chunks - vectors} chunks have no vector: run `signaldesk index`")
    names = ", ".join(r[0] for r in rows) or "none yet"
    return IndexStatus(
        db_path=f"postgresql ({dsn}), vaults: {names}",
        exists=bool(rows),
        notes=notes,
        chunks=chunks,
        vectors=vectors,
        db_bytes=size,
        model=model,
        dimensions=int(dims) if dims.isdigit() and int(dims) > 0 else None,
        last_indexed=last,
        degraded=tuple(degraded),
        folders=folders,
    )


def _has_vectors(conn: Any) -> bool:
    row = conn.execute(
        "SELECT 1 FROM pg_attribute WHERE attrelid = 'index_chunks'::regclass "
        "AND attname = 'embedding' AND NOT attisdropped"
    ).fetchone()
    return row is not None


def pg_index_status(postgres: PostgresSettings) -> IndexStatus:
    """The status of every vault in the team database; an unreachable server or a database
    without the index is reported in ``degraded``, never raised."""
    import psycopg

    from signaldesk.postgres import PostgresError

    where = f"postgresql ({postgres.dsn})"
    try:
        with connect(postgres, autocommit=True) as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            exists = conn.execute("SELECT to_regclass('index_vaults') IS NOT NULL").fetchone()
            if not exists or not exists[0]:
                return IndexStatus(
                    db_path=where, exists=False, degraded=("no index yet: run `signaldesk index`",)
                )
            return read_pg_status(conn, None, postgres.dsn)
    except PostgresError as exc:
        return IndexStatus(db_path=where, exists=False, degraded=(str(exc),))
    except psycopg.Error as exc:
        logger.debug("index status failed", exc_info=True)
        return IndexStatus(db_path=where, exists=True, degraded=(f"index unreadable ({exc})",))
