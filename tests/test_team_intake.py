"""Two `signaldesk scan` workers on one PostgreSQL ledger and one vault (the team bar,
small: ``python -m bench.team_intake`` runs it on 200 feeds).

Real worker processes, a real PostgreSQL, real feeds on 127.0.0.1. Trial 2 kills the
worker that holds the trap feed with SIGKILL while its scan is under way; the other must
finish everything, with nothing lost and nothing doubled (ledger rows, notes, fetches).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.team_intake import run_trial
from signaldesk.postgres import PostgresSettings
from tests.feedserver import FeedServer
from tests.intake_data import serve_feeds

_FEEDS = 10
_ENTRIES = 4


@pytest.mark.parametrize("kill", [False, True], ids=["two-workers", "one-killed"])
def test_two_workers_take_every_entry_in_once(
    postgres: PostgresSettings, tmp_path: Path, kill: bool
) -> None:
    with FeedServer() as server:
        feed_set = serve_feeds(server, _FEEDS, _ENTRIES, teaser_every=3)
        urls = list(feed_set.urls)
        expected = {
            (url, f"urn:signaldesk-test:{f}:{e}")
            for f, url in enumerate(urls)
            for e in range(_ENTRIES)
        }
        result = run_trial("trial", postgres, server, urls, expected, tmp_path, kill=kill)
    assert result.problems() == [], "\n".join(result.lines())
    assert result.missing_entries == 0 and result.doubled_entries == 0
    assert result.statuses["filed"] == result.entries_expected  # threshold 0: all filed
    assert result.notes == result.entries_expected and result.doubled_notes == 0
    if kill:
        assert result.killed in {"worker-a", "worker-b"}
    else:
        assert all(n == 1 for n in result.fetches.values())
        assert len(result.fetches) == _FEEDS
