"""`signaldesk index` and `signaldesk doctor`, through click and through a real process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from signaldesk.pipeline.cli import cli
from signaldesk.retrieval.settings import IndexSettings
from signaldesk.retrieval.store import connect, index_db_path
from tests.index_helpers import check_invariants, section, wait_for, write_note

REPO = Path(__file__).resolve().parent.parent


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def notes(vault: Path, n: int = 3) -> None:
    for i in range(n):
        write_note(vault, f"01-projects/note-{i}.md", section("Topic", f"word{i} lighthouse"))


def test_index_json_then_status_json(vault: Path) -> None:
    notes(vault)
    code, out, _ = invoke("--vault", str(vault), "index", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["added"] == 3 and report["chunks_embedded"] == 3
    assert report["interrupted"] is False and report["errors"] == []
    code, out, _ = invoke("--vault", str(vault), "index", "--json")
    assert json.loads(out)["unchanged"] == 3
    code, out, _ = invoke("--vault", str(vault), "index", "--status", "--json")
    status = json.loads(out)
    assert code == 0
    assert (status["notes"], status["chunks"], status["vectors"]) == (3, 3, 3)
    assert status["exists"] is True and status["dimensions"] == 256
    assert status["model"] and status["degraded"] == []
    assert status["folders"] == {"01-projects": 3}
    assert status["last_indexed"].startswith("20")
    write_note(vault, "04 - Guides, Workflows, & Courses/a.md", section("Guide", "words"))
    write_note(vault, "top.md", section("Top", "words"))
    invoke("--vault", str(vault), "index")
    _, out, _ = invoke("--vault", str(vault), "index", "--status")
    cells = [line.split("│")[2].strip() for line in out.splitlines() if line.count("│") == 3]
    # One folder a line, count first: names with commas stay readable.
    start = cells.index("1  (top level)")
    assert cells[start : start + 3] == [
        "1  (top level)",
        "3  01-projects/",
        "1  04 - Guides, Workflows, & Courses/",
    ]


def test_index_human_output_and_full(vault: Path) -> None:
    notes(vault)
    code, out, _ = invoke("--vault", str(vault), "index")
    assert code == 0
    assert "added" in out and "chunks embedded" in out and "bundled:" in out
    code, out, _ = invoke("--vault", str(vault), "index", "--full")
    assert code == 0 and "full rebuild requested" in out
    code, out, _ = invoke("--vault", str(vault), "index", "--status")
    assert "hybrid" in out and "notes" in out
    check_invariants(vault)


def test_status_without_an_index_says_how_to_build_one(vault: Path) -> None:
    code, out, _ = invoke("--vault", str(vault), "index", "--status", "--json")
    status = json.loads(out)
    assert code == 0 and status["exists"] is False
    assert "signaldesk index" in status["degraded"][0]


def test_doctor_reports_every_check(vault: Path) -> None:
    code, out, _ = invoke("--vault", str(vault), "doctor", "--json")
    assert code == 0
    result = json.loads(out)
    checks = {c["name"]: c for c in result["checks"]}
    assert result["ok"] is True
    assert set(checks) == {
        "python",
        "sqlite",
        "fts5",
        "sqlite-vec",
        "config",
        "model",
        "vault",
        "index",
    }
    assert checks["sqlite"]["outcome"] == "ok" and "SQLite 3." in checks["sqlite"]["detail"]
    assert checks["model"]["outcome"] == "ok" and "256 dims" in checks["model"]["detail"]
    assert checks["index"]["outcome"] == "warn"
    assert checks["index"]["fix"] == f"signaldesk --vault {vault} index"
    notes(vault, 1)
    invoke("--vault", str(vault), "index")
    code, out, _ = invoke("--vault", str(vault), "doctor")
    assert code == 0 and "✓" in out and "matches" in out


def test_doctor_says_when_notes_are_not_indexed(vault: Path) -> None:
    notes(vault, 3)
    invoke("--vault", str(vault), "index")
    write_note(vault, "02-areas/new.md", section("New", "fresh words"))
    write_note(vault, "01-projects/note-0.md", section("Topic", "edited words, longer now"))
    code, out, _ = invoke("--vault", str(vault), "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    index = checks["index"]
    assert code == 0 and index["outcome"] == "warn"
    assert index["fix"] == f"signaldesk --vault {vault} index"
    assert "2 of 4 notes not indexed yet (1 new, 1 changed)" in index["detail"]
    invoke("--vault", str(vault), "index")
    code, out, _ = invoke("--vault", str(vault), "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["index"]["outcome"] == "ok"


def test_doctor_fails_on_a_broken_config(vault: Path) -> None:
    (vault / "signaldesk.toml").write_text("[index]\nbatch_size = 'many'\n", encoding="utf-8")
    code, out, _ = invoke("--vault", str(vault), "doctor", "--json")
    assert code == 1
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["config"]["outcome"] == "fail" and "batch_size" in checks["config"]["detail"]


def test_index_in_a_real_process(vault: Path) -> None:
    notes(vault)
    proc = subprocess.run(
        [sys.executable, "-m", "signaldesk", "--vault", str(vault), "index", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["added"] == 3
    check_invariants(vault)


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_with_exit_130(vault: Path) -> None:
    for i in range(1200):
        write_note(vault, f"03-resources/many/n{i:04d}.md", section("Topic", f"w{i} alpha"))
    db_path = index_db_path(vault, IndexSettings())

    def committed() -> bool:
        try:
            conn = connect(db_path, readonly=True)
            try:
                return int(conn.execute("SELECT count(*) FROM notes").fetchone()[0]) > 0
            finally:
                conn.close()
        except Exception:
            return False

    proc = subprocess.Popen(
        [sys.executable, "-m", "signaldesk", "--vault", str(vault), "index", "--json"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: (db_path.exists() and committed()) or proc.poll() is not None)
        assert proc.poll() is None, "finished before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted — index is consistent" in err
    report = json.loads(out)
    assert report["interrupted"] is True
    state = check_invariants(vault)
    assert 0 < state["notes"] < 1200 and report["added"] == state["notes"]


@pytest.mark.parametrize(
    ("setting", "value", "note", "said"),
    [
        (
            "templates.json",
            '{"folder": "Templates"}',
            "Templates/Meeting.md",
            "templates Templates/ (Obsidian's templates setting): not indexed",
        ),
        (
            "app.json",
            '{"userIgnoreFilters": ["Archive/"]}',
            "Archive/2019 plan.md",
            "Archive/ (Obsidian's excluded files): not indexed",
        ),
    ],
)
def test_what_obsidian_is_told_to_leave_out_leaves_the_index(
    vault: Path, setting: str, value: str, note: str, said: str
) -> None:
    """The templates folder, and the files Obsidian's search excludes."""
    notes(vault, 1)
    write_note(vault, note, section("{{title}}", "agenda attendees lighthouse"))
    invoke("--vault", str(vault), "index")
    _, out, _ = invoke("--vault", str(vault), "search", "agenda attendees", "--json")
    assert json.loads(out)["results"][0]["path"] == note

    (vault / ".obsidian").mkdir(exist_ok=True)
    (vault / ".obsidian" / setting).write_text(value)
    _, out, _ = invoke("--vault", str(vault), "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert said in checks["vault"]["detail"]
    # The file is kept: it is not "deleted", it leaves the index.
    assert (
        "1 indexed note no longer among the vault's notes (deleted, moved or now excluded)"
        in (checks["index"]["detail"])
    )
    _, out, _ = invoke("--vault", str(vault), "index")
    row = next(line for line in out.splitlines() if "removed from the index" in line)
    assert row.split("│")[2].strip() == "1" and "deleted" not in out
    _, out, _ = invoke("--vault", str(vault), "search", "agenda attendees", "--json")
    assert note not in [r["path"] for r in json.loads(out)["results"]]
    assert (vault / note).is_file()  # the note itself is untouched
    check_invariants(vault)


def test_hints_name_the_vault_they_were_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from signaldesk.pipeline.cli._hints import vault_argument, with_vault

    vault = tmp_path / "my notes"
    vault.mkdir()
    # A real process: the error and its hint as a person reads them.
    done = subprocess.run(
        [sys.executable, "-m", "signaldesk", "-v", "--vault", str(vault), "search", "x"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert f"hint: run `signaldesk --vault '{vault}' index` to build it" in done.stderr
    monkeypatch.setenv("COLUMNS", "300")  # the table keeps the command on one line
    _, out, _ = invoke("--vault", str(vault), "index", "--status")
    assert f"no index yet: run `signaldesk --vault '{vault}' index`" in out

    assert vault_argument(["--config", "c.toml", "--vault=v", "index"]) == "v"
    assert vault_argument(["search", "--vault", "v"]) is None  # not the group's option
    # Prose and the verbs that take their own folder are left alone; a quoted or bare
    # command, and one that already names a vault, are not touched twice.
    assert with_vault("signaldesk files notes into the vault", "v") == (
        "signaldesk files notes into the vault"
    )
    assert with_vault("run `signaldesk init /x` or signaldesk demo", "v") == (
        "run `signaldesk init /x` or signaldesk demo"
    )
    assert with_vault("`signaldesk doctor`; signaldesk index --full", "a b") == (
        "`signaldesk --vault 'a b' doctor`; signaldesk --vault 'a b' index --full"
    )
    assert with_vault("signaldesk --vault w index", "v") == "signaldesk --vault w index"
    assert with_vault("run `signaldesk index`", None) == "run `signaldesk index`"


def test_init_says_the_obsidian_templates_folder_is_not_indexed(tmp_path: Path) -> None:
    vault = tmp_path / "notes"
    settings = vault / ".obsidian" / "plugins" / "templater-obsidian" / "data.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"templates_folder": "Meta/Templates"}', encoding="utf-8")
    write_note(vault, "a.md", section("A", "words"))
    code, out, _ = invoke("init", str(vault))
    assert code == 0
    assert "Not indexed: Meta/Templates/ (the templates folder your Obsidian settings name)" in (
        " ".join(out.split())
    )


def test_an_interrupted_rebuild_does_not_report_the_notes_it_dropped_as_added(
    vault: Path,
) -> None:
    from rich.console import Console

    from signaldesk.pipeline.cli.index import _print_report
    from signaldesk.retrieval.records import IndexReport
    from signaldesk.retrieval.status import index_status

    notes(vault)
    assert invoke("--vault", str(vault), "index")[0] == 0
    status = index_status(vault, IndexSettings())

    def shown(report: IndexReport) -> list[str]:
        console = Console(record=True, width=100)
        _print_report(console, report, status, None)
        return [
            " ".join(line.replace("│", " ").split()) for line in console.export_text().splitlines()
        ]

    # Ctrl-C during `index --full`: the new index is dropped, the old one (3 notes) kept.
    dropped = shown(
        IndexReport(
            added=2,
            chunks_embedded=2,
            full_rebuild=True,
            interrupted=True,
            rebuild_reason="full rebuild requested",
        )
    )
    assert dropped[0] == "index: rebuild interrupted, the previous index is kept"
    assert "rebuild dropped after 2 notes" in dropped
    assert "notes / chunks in index 3 / 3" in dropped
    assert not any(line.startswith(("added", "chunks embedded")) for line in dropped)
    # Ctrl-C during `index`: what it did is in the index, and the table says so.
    partial = shown(IndexReport(added=2, chunks_embedded=2, interrupted=True))
    assert partial[0] == "index: interrupted, what it did is kept" and "added 2" in partial
    assert shown(IndexReport(unchanged=3))[0] == "index"


def test_doctor_tells_a_broken_config_from_a_missing_or_wrong_vault(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SIGNALDESK_VAULT", raising=False)
    monkeypatch.delenv("SIGNALDESK_CONFIG", raising=False)

    def checks(*args: str) -> tuple[int, dict[str, dict[str, str]]]:
        code, out, _ = invoke(*args, "doctor", "--json")
        return code, {c["name"]: c for c in json.loads(out)["checks"]}

    # A typo in the config: the config fails; the vault is the one given, not "none".
    (vault / "signaldesk.toml").write_text("[search]\nlimt = 3\n", encoding="utf-8")
    code, found = checks("--vault", str(vault))
    assert code == 1 and found["config"]["outcome"] == "fail"
    assert "limt" in found["config"]["detail"]
    assert found["vault"]["outcome"] == "warn" and str(vault) in found["vault"]["detail"]
    # A vault folder that is not there: the config (defaults) is fine, the vault is not.
    missing = tmp_path / "nowhere"
    code, found = checks("--vault", str(missing))
    assert code == 1 and found["config"]["outcome"] == "ok"
    assert found["vault"]["detail"] == f"vault folder does not exist: {missing}"
    assert "signaldesk init" in found["vault"]["fix"]
    # SIGNALDESK_VAULT naming a file: init would refuse it, so the hint does not say init.
    note = tmp_path / "note.md"
    note.write_text("# a note\n", encoding="utf-8")
    monkeypatch.setenv("SIGNALDESK_VAULT", str(note))
    code, found = checks()
    assert code == 1 and found["config"]["outcome"] == "ok"
    assert "is a file" in found["vault"]["detail"] and "init" not in found["vault"]["fix"]
    monkeypatch.delenv("SIGNALDESK_VAULT")
    code, found = checks()
    assert found["config"]["outcome"] == "ok" and found["vault"]["detail"] == "no vault given"


def test_doctor_on_a_damaged_index_gives_one_command_and_it_repairs_it(vault: Path) -> None:
    notes(vault)
    assert invoke("--vault", str(vault), "index")[0] == 0
    db = index_db_path(vault, IndexSettings())
    db.write_bytes(b"not a database at all" * 100)
    _, out, _ = invoke("--vault", str(vault), "doctor", "--json")
    check = {c["name"]: c for c in json.loads(out)["checks"]}["index"]
    assert check["outcome"] == "fail"
    # The detail and the fix name the same command, and that command repairs the index.
    assert check["fix"] == f"signaldesk --vault {vault} index"
    assert "--full" not in check["fix"] and "index` to rebuild" in check["detail"]
    assert invoke("--vault", str(vault), "index")[0] == 0
    _, out, _ = invoke("--vault", str(vault), "doctor", "--json")
    assert {c["name"]: c for c in json.loads(out)["checks"]}["index"]["outcome"] == "ok"
