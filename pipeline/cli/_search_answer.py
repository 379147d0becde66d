"""A forwarded `search QUERY --json`, answered by serve with the `search` verb's own code.

serve's search socket (:mod:`pipeline.service.search_socket`) is handed
:func:`answer_forwarded`: the options become ``Retriever.search``'s arguments as the verb
builds them (``search_arguments``), and the results its JSON (``search_payload``, through
``json_text``, what ``print_json`` writes), so a forwarded search prints the bytes the
in-process one would.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from signaldesk.pipeline.cli._output import json_text
from signaldesk.pipeline.cli._search_options import MODES
from signaldesk.pipeline.cli.search import _filters, search_arguments, search_payload
from signaldesk.retrieval.retriever import Retriever

__all__ = ["answer_forwarded"]


async def answer_forwarded(retriever: Retriever, search: Any) -> str:
    """What ``search --json`` prints for a request's ``"search"`` object.

    :raises QueryError: the query cannot be searched (empty, say).
    :raises KeyError, TypeError, ValueError: ``search`` is malformed.
    """
    query, kwargs = _search_arguments(search)
    results = await retriever.search(query, **kwargs)
    return json_text(search_payload(query, results))


def _search_arguments(search: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(search, dict):
        raise TypeError("the request has no search object")
    query = search["query"]
    tags = search.get("tags") or []
    strings = {name: search.get(name) for name in ("folder", "type", "domain", "status")}
    if not isinstance(query, str) or not isinstance(tags, list):
        raise TypeError("query must be a string and tags a list")
    if not all(isinstance(v, str | None) for v in strings.values()) or not all(
        isinstance(t, str) for t in tags
    ):
        raise TypeError("folder, type, domain, status and tags must be strings")
    mode = search.get("mode")
    if mode is not None and mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    filters = _filters(
        strings["folder"],
        strings["type"],
        strings["domain"],
        tuple(tags),
        strings["status"],
        _day(search.get("since")),
        _day(search.get("until")),
    )
    return query, search_arguments(
        _count(search.get("limit")), filters, mode, _count(search.get("max_tokens"))
    )


def _day(value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError("a day must be a YYYY-MM-DD string")
    return datetime.strptime(value, "%Y-%m-%d")


def _count(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{value!r} is not a positive integer")
    return value
