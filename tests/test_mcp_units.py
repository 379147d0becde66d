"""Small pieces of the MCP server: budgets, scores, context filtering, client snippets,
transport safety helpers, settings."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from datetime import date
from pathlib import Path

import pytest
from mcp_vault import REPO_ROOT, SECRET_NOTE, SECRETS

from signaldesk.mcp_server.arguments import parse_day
from signaldesk.mcp_server.binding import check_binding, is_loopback, read_token
from signaldesk.mcp_server.budget import cap_text, estimate_tokens, token_chars
from signaldesk.mcp_server.client_config import client_config
from signaldesk.mcp_server.commands import for_vault
from signaldesk.mcp_server.errors import (
    InvalidArgumentError,
    NoteNotFoundError,
    TransportConfigError,
)
from signaldesk.mcp_server.http import transport_security
from signaldesk.mcp_server.instructions import build_instructions, vault_heading
from signaldesk.mcp_server.notes import (
    find_latest_report,
    scrub_preserving_lines,
    split_lines,
    title_of,
)
from signaldesk.mcp_server.results import error_info, error_result
from signaldesk.mcp_server.scrubbing import scrub_data
from signaldesk.mcp_server.settings import McpSettings
from signaldesk.retrieval.context_block import ContextExcerpts, Excerpt, render_context
from signaldesk.retrieval.errors import ModelError, RetrievalError
from signaldesk.retrieval.records import IndexStatus, SearchResult
from signaldesk.signal_note import signal_scores
from signaldesk.vault import SignalLayout

# -- budget ------------------------------------------------------------------------------


def test_cap_text_never_exceeds_and_marks_the_cut() -> None:
    text = "alpha beta gamma delta " * 50
    for limit in (0, 2, 3, 10, 57, 100, 1000):
        capped = cap_text(text, limit)
        assert len(capped) <= limit
        if limit >= 10:
            assert capped.endswith("...")
    assert cap_text("short", 100) == "short"
    # Cuts fall on a word boundary when one is near.
    assert cap_text("one two three four five six", 16) == "one two three..."


def test_token_arithmetic() -> None:
    assert token_chars(2000) == 8000
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2


# -- notes -------------------------------------------------------------------------------


def test_scrub_preserving_lines_keeps_line_numbers() -> None:
    scrubbed = scrub_preserving_lines(SECRET_NOTE)
    assert len(split_lines(scrubbed)) == len(split_lines(SECRET_NOTE))
    for secret in SECRETS.values():
        assert secret not in scrubbed
    # Lines after the redacted key block are where they were.
    assert split_lines(scrubbed)[-1] == split_lines(SECRET_NOTE)[-1]
    plain = "# Title\n\nNothing secret here.\n"
    assert scrub_preserving_lines(plain) == plain


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ({"composite": 0.7, "relevance": 0.9}, {"composite": 0.7, "relevance": 0.9}),
        ({"score": "0.61"}, {"composite": 0.61}),
        (
            {"scores": {"composite": 0.5, "depth": {"score": 0.4, "why": "short"}}},
            {"composite": 0.5, "depth": 0.4},
        ),
        ({"composite": True, "relevance": "high", "depth": float("nan")}, {}),
        ({}, {}),
    ],
)
def test_signal_scores_tolerate_shapes(
    frontmatter: dict[str, object], expected: dict[str, float]
) -> None:
    assert signal_scores(frontmatter) == expected


def test_title_falls_back_to_heading_then_name() -> None:
    assert title_of("---\ntitle: From YAML\n---\n# Heading\n", "a/b.md") == "From YAML"
    assert title_of("# The Heading\n\ntext\n", "a/b.md") == "The Heading"
    assert title_of("no heading\n", "a/some-note.md") == "some-note"


def test_context_excerpts_of_excluded_notes_are_dropped_before_rendering() -> None:
    def result(path: str, section: str, text: str) -> SearchResult:
        return SearchResult(path=path, section=section, text=text, score=1.0, title=path)

    excerpts = ContextExcerpts(
        "topic",
        (
            Excerpt(result("03-resources/a.md", "Intro", "alpha")),
            Excerpt(result("private/diary.md", "Secret", "PRIVATE")),
            Excerpt(result("03-resources/b.md", "", "beta"), linked_from="03-resources/a.md"),
        ),
    )
    rendered = render_context(excerpts.without(lambda rel: rel.startswith("private/")), 1000)
    assert "PRIVATE" not in rendered.text and "alpha" in rendered.text
    assert "### 03-resources/b.md (linked from 03-resources/a.md)" in rendered.text
    assert rendered.sources == ("03-resources/a.md", "03-resources/b.md")


def test_latest_report_prefers_the_newest_dated_name(tmp_path: Path) -> None:
    daily = tmp_path / "06-daily"
    daily.mkdir()
    for name in ("2026-11-01-triage.md", "2026-11-12-triage.md", "2026-11-12-captains-log.md"):
        (daily / name).write_text("# r\n")
    assert find_latest_report(tmp_path) == "06-daily/2026-11-12-triage.md"
    assert (
        find_latest_report(tmp_path, lambda rel: rel.endswith("11-12-triage.md"))
        == "06-daily/2026-11-01-triage.md"
    )


def test_latest_report_follows_a_configured_report_path(tmp_path: Path) -> None:
    layout = SignalLayout(report_path="Journal/{date}/triage.md")
    assert (layout.reports, layout.report_glob) == ("Journal", "triage.md")
    for day in ("2026-11-01", "2026-11-12"):
        (tmp_path / "Journal" / day).mkdir(parents=True)
        (tmp_path / "Journal" / day / "triage.md").write_text("# r\n")
    assert find_latest_report(tmp_path, layout=layout).startswith("Journal/2026-11-")
    with pytest.raises(NoteNotFoundError, match="Journal/"):
        find_latest_report(tmp_path / "Journal" / "2026-11-01", layout=layout)


def test_days_parse_absolute_and_relative() -> None:
    today = date(2026, 11, 30)
    assert parse_day("2026-11-02", "since", today=today) == date(2026, 11, 2)
    assert parse_day("7d", "since", today=today) == date(2026, 11, 23)
    assert parse_day("2w", "since", today=today) == date(2026, 11, 16)
    assert parse_day(None, "since") is None and parse_day(" ", "since") is None
    with pytest.raises(InvalidArgumentError):
        parse_day("yesterday", "since")


def test_hint_commands_name_the_vault_served() -> None:
    hint = "run `signaldesk index` to build it; `signaldesk report` writes one"
    assert for_vault(hint, Path("/home/me/My Vault")) == (
        "run `signaldesk --vault '/home/me/My Vault' index` to build it; "
        "`signaldesk --vault '/home/me/My Vault' report` writes one"
    )
    assert for_vault(for_vault(hint, Path("/v")), Path("/v")) == for_vault(hint, Path("/v"))
    assert for_vault(hint, None) == hint  # team mode: no vault on disk
    assert for_vault("the `signaldesk` package", Path("/v")) == "the `signaldesk` package"


def test_instructions_without_and_with_an_index(tmp_path: Path) -> None:
    (tmp_path / "05-signals" / "security").mkdir(parents=True)
    (tmp_path / "05-signals" / "security" / "x.md").write_text("# x\n")
    (tmp_path / "05-signals" / "web").mkdir()
    missing = build_instructions(vault_heading(tmp_path.name), None, vault=tmp_path)
    assert f"`signaldesk --vault {tmp_path} index`" in missing
    assert "security" in missing and "web" not in missing
    status = IndexStatus(
        db_path="x", exists=True, notes=12, chunks=40, folders={"03-resources": 9, "05-signals": 3}
    )
    present = build_instructions(vault_heading(tmp_path.name), status, vault=tmp_path)
    assert "12 notes in 40 chunks" in present
    assert present.index("03-resources/") < present.index("05-signals/ (3)")


# -- client snippets -------------------------------------------------------------------------


COMMAND = ["/opt/venv/bin/python", "-m", "signaldesk"]


def test_claude_snippet_is_json_with_this_machines_paths() -> None:
    snippet = client_config("claude", command=COMMAND, vault="/home/me/My Vault")
    entry = json.loads(snippet.text)["mcpServers"]["signaldesk"]
    assert entry["command"] == "/opt/venv/bin/python"
    assert entry["args"] == ["-m", "signaldesk", "--vault", "/home/me/My Vault", "mcp"]
    assert "claude mcp add" in snippet.note and "'/home/me/My Vault'" in snippet.note


def test_codex_snippet_is_toml() -> None:
    snippet = client_config("codex", command=["/usr/local/bin/signaldesk"], vault="/v")
    table = tomllib.loads(snippet.text)["mcp_servers"]["signaldesk"]
    assert table["command"] == "/usr/local/bin/signaldesk"
    assert table["args"] == ["--vault", "/v", "mcp"]
    http = client_config(
        "codex", command=COMMAND, vault="/v", url="http://127.0.0.1:8765/mcp", token_env="SD_TOKEN"
    )
    table = tomllib.loads(http.text)["mcp_servers"]["signaldesk"]
    assert table["url"] == "http://127.0.0.1:8765/mcp"
    assert table["bearer_token_env_var"] == "SD_TOKEN"


def test_cursor_http_snippet_refers_to_the_token_variable_never_the_token() -> None:
    snippet = client_config(
        "cursor", command=COMMAND, vault="/v", url="http://127.0.0.1:1/mcp", token_env="SD_TOKEN"
    )
    entry = json.loads(snippet.text)["mcpServers"]["signaldesk"]
    assert entry["headers"]["Authorization"] == "Bearer ${env:SD_TOKEN}"


# -- transport helpers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("example.org", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_read_token_rules() -> None:
    assert read_token(None) is None
    assert read_token("T", {"T": "a-long-enough-token-value"}) == "a-long-enough-token-value"
    with pytest.raises(TransportConfigError, match="not set"):
        read_token("T", {})
    with pytest.raises(TransportConfigError, match="too short"):
        read_token("T", {"T": "short"})
    check_binding("127.0.0.1", guarded=False)
    check_binding("0.0.0.0", guarded=True)
    with pytest.raises(TransportConfigError, match="without a token"):
        check_binding("0.0.0.0", guarded=False)


def test_settings_import_does_not_load_the_mcp_sdk() -> None:
    # Every command imports McpSettings through pipeline.config; only `mcp` needs the SDK.
    code = "import sys, mcp_server.settings, mcp_server; print('mcp.server' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_transport_security_allows_loopback_and_configured_names() -> None:
    settings = McpSettings(allowed_hosts=["vault.lan:*"], allowed_origins=["https://app.lan"])
    loop = transport_security("127.0.0.1", 8765, settings)
    assert loop.enable_dns_rebinding_protection
    assert "127.0.0.1:*" in loop.allowed_hosts and "localhost:*" in loop.allowed_hosts
    assert "vault.lan:*" in loop.allowed_hosts
    assert "https://app.lan" in loop.allowed_origins
    assert not any("evil" in h for h in loop.allowed_hosts)
    lan = transport_security("192.168.1.20", 9000, McpSettings())
    assert "192.168.1.20:9000" in lan.allowed_hosts


def test_every_setting_is_documented() -> None:
    for name, field in McpSettings.model_fields.items():
        assert field.description, name


def test_scrub_data_scrubs_nested_strings_and_leaves_clean_data_alone() -> None:
    clean = {"path": "a.md", "hits": [{"text": "nothing here", "score": 0.5}], "n": 3}
    assert scrub_data(clean) is clean  # one joined pass found nothing: no copy made
    dirty = {
        "path": "a.md",
        "hits": [{"text": f"key {SECRETS['github_token']}", "tags": [SECRETS["aws_access_key"]]}],
        "n": 3,
    }
    scrubbed = scrub_data(dirty)
    dumped = json.dumps(scrubbed)
    assert SECRETS["github_token"] not in dumped and SECRETS["aws_access_key"] not in dumped
    assert scrubbed["path"] == "a.md" and scrubbed["n"] == 3
    # A secret split over two strings is in neither string: nothing to redact, nothing leaked.
    halves = {"a": SECRETS["github_token"][:20], "b": SECRETS["github_token"][20:]}
    assert scrub_data(halves) == halves


@pytest.mark.parametrize(
    ("client", "filename", "url"),
    [
        ("claude", "claude-code.mcp.json", None),
        ("claude", "claude-code-http.mcp.json", "http://127.0.0.1:8765/mcp"),
        ("codex", "codex-config.toml", None),
        ("cursor", "cursor-mcp.json", None),
        ("cursor", "cursor-http-mcp.json", "http://127.0.0.1:8765/mcp"),
    ],
)
def test_deploy_examples_match_what_print_config_writes(
    client: str, filename: str, url: str | None
) -> None:
    # The examples in deploy/mcp/ cannot drift from the generator.
    text = (REPO_ROOT / "deploy" / "mcp" / filename).read_text()
    snippet = client_config(
        client,  # type: ignore[arg-type]
        command=["/home/you/.local/bin/signaldesk"],
        vault="/home/you/vault",
        url=url,
        token_env="SIGNALDESK_MCP_TOKEN" if url else None,
    )
    if filename.endswith(".toml"):
        expected = tomllib.loads(snippet.text)["mcp_servers"]["signaldesk"]
        assert tomllib.loads(text)["mcp_servers"]["signaldesk"] == expected
    else:
        assert json.loads(text) == json.loads(snippet.text)


def test_http_listener_names_tcp_so_accepted_sockets_skip_nagle() -> None:
    # asyncio disables Nagle only on sockets whose proto is IPPROTO_TCP; accepted
    # sockets inherit the listener's, and without it every HTTP call waited ~40 ms.
    import socket

    from signaldesk.mcp_server.http import _bind

    listener = _bind("127.0.0.1", 0)
    try:
        assert listener.proto == socket.IPPROTO_TCP
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
        assert accepted.proto == socket.IPPROTO_TCP
        accepted.close()
        client.close()
    finally:
        listener.close()


@pytest.mark.parametrize(
    "exc",
    [ModelError("no embedding model could be loaded"), RetrievalError("the index is odd")],
    ids=["model", "retrieval"],
)
def test_every_error_result_says_what_to_do(exc: Exception) -> None:
    # Raised without a hint by the layer below: the client still gets one.
    info = error_info(error_result(exc))
    assert info is not None and info.hint and "signaldesk doctor" in info.hint
