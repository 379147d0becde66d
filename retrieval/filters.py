"""SearchFilters as SQL: one WHERE fragment over the ``notes`` table (alias ``n``).

Every value is a bound parameter; nothing from the caller is spliced into SQL.
"""

from __future__ import annotations

from typing import Any

from signaldesk.retrieval.records import SearchFilters

__all__ = ["filters_sql", "normalise_folder"]


def normalise_folder(folder: str) -> str:
    """A vault-relative folder as stored paths spell it ('/'-separated, no edge slashes,
    no ``.`` segments: ``./05-signals/`` as a shell completes it is ``05-signals``)."""
    parts = folder.replace("\\", "/").strip().split("/")
    return "/".join(part for part in parts if part not in ("", "."))


def filters_sql(filters: SearchFilters | None) -> tuple[str, list[Any]]:
    """``(sql, params)`` where ``sql`` is ``"1"`` or an AND of conditions on ``n``."""
    if filters is None:
        return "1", []
    clauses: list[str] = []
    params: list[Any] = []
    if filters.folder:
        folder = normalise_folder(filters.folder)
        if folder:
            # A prefix on whole path segments: "notes" matches "notes/a.md",
            # never "notes-old/a.md".
            prefix = folder + "/"
            clauses.append("(substr(n.path, 1, ?) = ? OR n.path = ?)")
            params += [len(prefix), prefix, folder]
    if filters.type:
        clauses.append("n.type = ?")
        params.append(filters.type)
    if filters.domain:
        clauses.append("n.domain = ?")
        params.append(filters.domain)
    for tag in filters.tags:
        tag = tag.strip().lstrip("#").casefold()
        if not tag:
            continue
        # Every listed tag must be present; a nested tag (`ai/llm`) counts as
        # carrying its parent (`ai`), as in Obsidian's tag search.
        clauses.append(
            "EXISTS (SELECT 1 FROM json_each(n.tags) AS t WHERE "
            "lower(ltrim(t.value, '#')) = ? OR substr(lower(ltrim(t.value, '#')), 1, ?) = ?)"
        )
        params += [tag, len(tag) + 1, tag + "/"]
    if filters.status:
        clauses.append("n.status = ?")
        params.append(filters.status)
    # Dates are compared on their first ten characters (YYYY-MM-DD), which
    # covers plain dates and full ISO timestamps alike.
    if filters.since is not None:
        clauses.append("substr(COALESCE(n.updated, n.created), 1, 10) >= ?")
        params.append(filters.since.isoformat())
    if filters.until is not None:
        clauses.append("substr(COALESCE(n.updated, n.created), 1, 10) <= ?")
        params.append(filters.until.isoformat())
    if not clauses:
        return "1", []
    return " AND ".join(clauses), params
