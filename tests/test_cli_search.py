"""`signaldesk search` and `signaldesk context` through the real entry point."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from signaldesk.pipeline.cli import main
from signaldesk.pipeline.config import resolve_workspace
from signaldesk.retrieval.context_block import SOURCE_SEPARATOR as SEP
from signaldesk.retrieval.embedder import LazyEmbedder
from signaldesk.retrieval.indexer import Indexer

NOTES = {
    "03-resources/sourdough.md": """---
type: note
domain: cooking
tags: [baking]
---
# Sourdough bread

## Feeding the starter

Feed the sourdough starter flour and water every day and discard half before
each feeding so the levain stays active.
""",
    "03-resources/kubernetes.md": """---
type: reference
domain: tech
tags: [ops]
---
# Kubernetes

## kubectl

Use kubectl get pods to list workloads and kubectl rollout undo to go back.
""",
}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    # rich folds long paths at 80 columns; a wide "terminal" keeps them whole.
    monkeypatch.setenv("COLUMNS", "240")


@pytest.fixture
def indexed_vault(vault: Path) -> Path:
    for rel, text in NOTES.items():
        target = vault / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    workspace = resolve_workspace(vault, None)
    Indexer(vault, workspace.config.index, LazyEmbedder(workspace.config.index)).run_sync()
    return vault


def test_missing_index_is_a_clean_error(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "--vault", str(vault), "search", "anything")
    assert code == 1
    assert "Traceback" not in err
    assert f"run `signaldesk --vault {vault} index` to build it" in err
    assert out == ""


def test_json_output_shape(indexed_vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, "--vault", str(indexed_vault), "search", "starter feeding", "--json", "--limit", "2"
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["query"] == "starter feeding"
    first = payload["results"][0]
    assert first["path"] == "03-resources/sourdough.md"
    for key in ("section", "text", "score", "bm25_rank", "vector_rank", "title", "heading_path"):
        assert key in first
    assert len(payload["results"]) <= 2


def test_explain_json_and_table(indexed_vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, "--vault", str(indexed_vault), "search", "kubectl pods", "--explain", "--json"
    )
    assert code == 0
    explain = json.loads(out)["explain"]
    assert explain["match"] == '"kubectl" OR "pods"'
    assert explain["mode"] == "hybrid"
    assert explain["rows"][0]["bm25_rank"] == 1
    code, out, _ = _run(
        capsys, "--vault", str(indexed_vault), "search", "kubectl pods", "--explain"
    )
    assert code == 0
    assert "MATCH" in out and "kubernetes.md" in out


def test_the_explain_table_shows_its_sources_at_80_columns(
    indexed_vault: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = _run(
        capsys, "--vault", str(indexed_vault), "search", "kubectl pods", "--explain"
    )
    assert code == 0
    table = out[out.index("candidate notes") : out.index("Results for")]
    assert "…" not in table  # no header or figure cut short
    assert "rank" in table and "cosine" in table
    # The source column has room: the path reads whole once the folded lines are joined.
    lines = table.splitlines()
    start = next(line.index("source") for line in lines if "cosine" in line)
    sources = "".join(line[start:].strip() for line in lines)
    assert "03-resources/kubernetes.md" in sources


def test_human_output_and_filters(indexed_vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "--vault",
        str(indexed_vault),
        "search",
        "starter",
        "--mode",
        "bm25",
        "--tag",
        "baking",
    )
    assert code == 0
    assert "sourdough.md" in out and "kubernetes.md" not in out
    code, out, _ = _run(
        capsys, "--vault", str(indexed_vault), "search", "starter", "--domain", "tech", "--json"
    )
    assert code == 0
    assert {r["path"] for r in json.loads(out)["results"]} <= {"03-resources/kubernetes.md"}


def test_batch_jsonl(
    indexed_vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = tmp_path / "queries.jsonl"
    batch.write_text(
        '{"id": "a", "query": "starter feeding"}\n\n{"id": "b", "query": "kubectl rollout"}\n'
        '{"id": "c", "query": "   "}\n',
        encoding="utf-8",
    )
    code, out, _ = _run(
        capsys, "--vault", str(indexed_vault), "search", "--batch", str(batch), "--json"
    )
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["id"] for line in lines] == ["a", "b", "c"]
    assert lines[0]["results"][0]["path"] == "03-resources/sourdough.md"
    assert lines[1]["results"][0]["path"] == "03-resources/kubernetes.md"
    assert "empty" in lines[2]["error"]


def test_a_bad_batch_line_costs_only_itself(
    indexed_vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = tmp_path / "queries.jsonl"
    batch.write_text(
        '{"id": "a", "query": "starter feeding"}\nnot json\n["a list"]\n'
        '{"id": "d", "query": "kubectl rollout"}\n',
        encoding="utf-8",
    )
    code, out, err = _run(capsys, "--vault", str(indexed_vault), "search", "--batch", str(batch))
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["id"] for line in lines] == ["a", 2, 3, "d"]
    assert lines[3]["results"][0]["path"] == "03-resources/kubernetes.md"
    assert lines[1]["error"].startswith('line 2: not a {"id", "query"} JSON object')
    # The run still says it was not clean: exit 1 and one line naming the bad lines.
    assert code == 1 and "2 lines not a query (2, 3); the others were run" in err
    assert "Traceback" not in err


def test_query_and_batch_are_exclusive(
    indexed_vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "--vault", str(indexed_vault), "search")
    assert code == 2 and "QUERY" in err


def test_context_block(indexed_vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, "--vault", str(indexed_vault), "context", "sourdough starter", "--max-tokens", "40"
    )
    assert code == 0
    assert out.startswith(f"### 03-resources/sourdough.md{SEP}Sourdough bread")
    assert len(out) <= 40 * 4 + 1


def test_limit_is_honoured_and_the_budget_only_trims_text(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 40 long notes that all match: the default budget (2000 tokens, ~8000 chars)
    # holds about four of them whole, yet --limit 30 must give 30 results.
    paragraph = "Compost heaps need turning, moisture and a mix of greens and browns. " * 30
    for i in range(40):
        target = vault / "03-resources" / f"compost-{i:02d}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# Compost note {i}\n\n{paragraph}\n", encoding="utf-8")
    workspace = resolve_workspace(vault, None)
    Indexer(vault, workspace.config.index, LazyEmbedder(workspace.config.index)).run_sync()
    code, out, _ = _run(
        capsys, "--vault", str(vault), "search", "compost heap", "--limit", "30", "--json"
    )
    assert code == 0
    results = json.loads(out)["results"]
    assert len(results) == 30
    assert len({r["path"] for r in results}) == 30  # thirty notes, not chunks of a few
    total = sum(len(r["text"]) for r in results)
    assert total <= 2000 * 4  # the budget still holds: the texts were shortened
    assert all(r["text"].endswith("...") for r in results)
    code, out, _ = _run(
        capsys,
        "--vault",
        str(vault),
        "search",
        "compost heap",
        "--limit",
        "30",
        "--max-tokens",
        "50",
        "--json",
    )
    assert code == 0
    assert len(json.loads(out)["results"]) == 30  # a tiny budget trims, never drops


def test_a_one_shot_search_imports_only_what_it_searches_with(indexed_vault: Path) -> None:
    """`signaldesk search` in a new process (a hook's call) must not pay for the indexer,
    the scrubber's rules, the team backend, the MCP SDK, rich (its --json output) or an
    event loop (asyncio: the SQLite search runs in the process's own thread); from the
    second search on, the settings come from the first one's snapshot: no pydantic."""
    watch = (
        "asyncio",
        "signaldesk.retrieval.indexer",
        "signaldesk.retrieval.scrubber",
        "signaldesk.retrieval.chunker",
        "signaldesk.retrieval.pg_retriever",
        "psycopg",
        "model2vec",
        "rich",
        "mcp",
    )
    # The process ends with os._exit once its output is written (no atexit): what it
    # loaded is printed there.
    code = (
        "import os, sys\n"
        "watch = sys.argv[1].split(',')\n"
        "real_exit = os._exit\n"
        "def _exit(status):\n"
        "    print('LOADED', [m for m in watch if m in sys.modules], status, flush=True)\n"
        "    real_exit(status)\n"
        "os._exit = _exit\n"
        f"sys.argv = ['signaldesk', '--vault', {str(indexed_vault)!r}, 'search', 'lighthouse',"
        " '--json']\n"
        "import runpy\n"
        "runpy.run_module('signaldesk', run_name='__main__')\n"
    )
    for watched in (watch, (*watch, "pydantic")):
        done = subprocess.run(
            [sys.executable, "-c", code, ",".join(watched)], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert "LOADED [] 0" in done.stdout, done.stdout[-500:]


def test_the_table_links_each_note_and_cuts_snippets_between_words(
    vault: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    long_words = " ".join(["lighthouse", "keeper", "maintenance"] * 40)
    note = vault / "03 - Guides & more" / "Light house.md"
    note.parent.mkdir(parents=True)
    note.write_text(f"# Lighthouse\n\n{long_words}\n", encoding="utf-8")
    workspace = resolve_workspace(vault, None)
    Indexer(vault, workspace.config.index, LazyEmbedder(workspace.config.index)).run_sync()
    code, out, _ = _run(capsys, "--vault", str(vault), "search", "lighthouse keeper")
    assert code == 0
    flat = " ".join(out.replace("│", " ").split())
    # 220 characters of the text, cut after a whole word.
    assert re.search(r"\b(lighthouse|keeper|maintenance)\.\.\.", flat)
    assert not re.search(
        r"[a-z]\.\.\.",
        flat.replace("lighthouse...", "").replace("keeper...", "").replace("maintenance...", ""),
    )
    # A terminal (forced here) gets an OSC 8 link to the file, spaces and '&' quoted.
    monkeypatch.setenv("FORCE_COLOR", "1")
    code, out, _ = _run(capsys, "--vault", str(vault), "search", "lighthouse keeper")
    assert code == 0
    assert (vault / "03 - Guides & more" / "Light house.md").as_uri() in out
    assert "Light%20house.md" in out


def test_an_empty_answer_says_what_the_filters_narrowed_it_to(
    indexed_vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v = str(indexed_vault)
    code, out, _ = _run(capsys, "--vault", v, "search", "starter", "--folder", "resources")
    assert code == 0
    flat = " ".join(out.split())
    assert "No results for starter (only notes under resources/, a folder this vault" in flat
    code, out, _ = _run(
        capsys, "--vault", v, "search", "starter", "--tag", "ops", "--since", "2031-01-02"
    )
    flat = " ".join(out.split())
    assert "(only notes tagged ops; updated on or after 2031-01-02)." in flat
    # A folder as a shell completes it (./ and a trailing slash) is the same folder.
    code, out, _ = _run(
        capsys, "--vault", v, "search", "starter", "--folder", "./03-resources/", "--json"
    )
    assert [r["path"] for r in json.loads(out)["results"]][:1] == ["03-resources/sourdough.md"]


def test_a_query_that_starts_with_a_dash_says_how_to_search_for_it(
    indexed_vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "--vault", str(indexed_vault), "search", "-kubectl")
    assert code == 2
    assert "put -- before it: signaldesk search -- -kubectl" in " ".join(err.split())
    code, out, _ = _run(capsys, "--vault", str(indexed_vault), "search", "--json", "--", "-kubectl")
    assert code == 0 and json.loads(out)["results"][0]["path"] == "03-resources/kubernetes.md"
    # A mistyped option keeps click's own suggestion, without the search hint.
    code, _, err = _run(capsys, "--vault", str(indexed_vault), "search", "--limti", "2", "x")
    assert code == 2 and "Did you mean '--limit'" in err and "put --" not in err


def test_a_query_of_symbols_alone_says_why_it_found_nothing(
    indexed_vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "--vault", str(indexed_vault), "search", "***")
    assert code == 0 and "No results for ***." in out
    assert "has no letters or digits" in " ".join(out.split())
    code, out, _ = _run(capsys, "--vault", str(indexed_vault), "search", "zzqx")
    assert "letters or digits" not in out


def test_a_snippet_starts_after_the_heading_its_source_ends_with() -> None:
    from signaldesk.pipeline.cli.search import _snippet

    text = "# Task List **Kanban**\n\nOrganizes all of the tasks into a kanban view."
    assert _snippet(text, "Task List Kanban") == "Organizes all of the tasks into a kanban view."
    # Another heading, or a heading alone, is kept: it is all the chunk says.
    assert _snippet(text, "Other").startswith("Task List Kanban Organizes")
    assert _snippet("# Alone", "Alone") == "Alone"


def test_a_table_in_a_snippet_keeps_its_cells_apart() -> None:
    # A daily report's "Filed" table read "note domain composite Path traversal in
    # tarsafe security 0.76 SQLite WAL mode data 0.75": header and rows run together.
    from signaldesk.pipeline.cli.search import _snippet

    text = (
        "## Filed\n\n| note | domain | composite |\n| --- | --- | ---: |\n"
        "| [[05-signals/x\\|Path traversal in tarsafe]] | security | 0.76 |\n"
        "| SQLite WAL mode | data | 0.75 |\n"
    )
    assert _snippet(text, "Filed") == (
        "note · domain · composite; Path traversal in tarsafe · security · 0.76; "
        "SQLite WAL mode · data · 0.75;"
    )
    assert _snippet("A line | with a bar", "") == "A line with a bar"  # not a row: as before
