"""The kill -9 matrix: ``python -m bench.kill_matrix [--trials 25] [--only index,scan,triage]``.

Three scenarios, each run ``--trials`` times with a ``SIGKILL`` at a random moment
(uniform over 5-95 % of an uninterrupted run's wall time, measured first), then a
rerun of the same command to completion, then every check:

* ``index`` — ``signaldesk index --full`` of the obsidian-hub vault (6.5k real notes,
  ``shared/data/vaults``) that already has a complete index. Right after the kill,
  before the rerun: the live index is the previous one, whole (same counts, same
  answers to fixed queries). The rerun is a plain ``signaldesk index``.
* ``scan`` — ``signaldesk scan`` of 50 feeds from a real HTTP server on 127.0.0.1,
  4 teaser entries each whose article pages are the 181 real pages of
  ``shared/data/articles`` (full text fetched and extracted), triaged, filed and indexed.
* ``triage`` — ``signaldesk triage`` of 200 Web Clipper notes made from the same
  articles' texts.

Checks after each rerun: the rerun exits 0; ``integrity_check`` of the index and of
the ledger; FTS rows = chunks = vectors (same ids); every note of the vault indexed
and nothing else; every ledger item once (one row per feed entry or clipping, none
left in flight, the index queue empty); every filed note exists once, carries its
item id and is indexed; no temporary file anywhere (``.signaldesk-*.tmp``, atomic-write
temporaries, old index generations, pointer temporaries, orphan leases); the user's
own notes byte-identical, and each clipping either untouched in ``Clippings/`` or filed
with its body byte-identical; no process of the killed run (index worker processes)
outlives it by 20 s. A native crash (a negative exit status other than the
kill) of any run is counted and its stderr kept.

Each trial starts from a fresh copy of a prepared vault (``--work`` keeps them).
The load average is printed: on a shared machine the kill points move with load,
the checks do not.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_REPO = Path(__file__).resolve().parent.parent
_DATA = _REPO.parent / "shared" / "data"
_QUERIES = ("plugin settings", "daily notes template", "graph view", "dataview query", "sync")
_USER_NOTES = {
    "01-projects/launch-plan.md": "# Launch plan\n\nShip the beta by Friday; write the docs.\n",
    "02-areas/health.md": "---\ntitle: Health\n---\n# Health\n\nRun three times a week.\n",
    "03-resources/reading.md": "# Reading list\n\n- Designing Data-Intensive Applications\n",
}
# Real news pages score 0.32-0.56 against the default interest profile; a threshold at
# the median files about half of them, so that filing and indexing are both exercised.
_CONFIG = "[scoring]\nthreshold = 0.38\n"
_TEMP_NAME = re.compile(r"^\.(?:signaldesk-[a-z0-9_]{8}|.+\.[a-z0-9_]{8})\.tmp$")


# -- running the CLI ---------------------------------------------------------------------


@dataclass
class Run:
    returncode: int
    seconds: float
    killed: bool
    stderr: str
    orphans: int = 0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(_REPO),
        HF_HUB_OFFLINE="1",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        COLUMNS="200",
        # A native crash prints every thread's Python stack: where it happened.
        PYTHONFAULTHANDLER="1",
    )
    env.pop("SIGNALDESK_CONFIG", None)
    return env


def run_cli(vault: Path, args: list[str], *, kill_after: float | None = None) -> Run:
    """Run ``signaldesk ARGS``; with ``kill_after``, SIGKILL the process (only it, as
    kill -9 would) after that many seconds if it is still running."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "signaldesk", "--vault", str(vault), *args],
            cwd=_REPO,
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
        killed = False
        try:
            try:
                proc.wait(timeout=kill_after if kill_after is not None else 900)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                killed = kill_after is not None
                proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        seconds = time.monotonic() - started
        left = _reap_session(proc.pid)
        err.seek(0)
        text = err.read().decode(errors="replace")
    if left:
        text += f"\n[bench] {left} process(es) of the killed run were still alive after 20 s"
    return Run(proc.returncode, seconds, killed, text, left)


_LEFTOVERS: list[str] = []


def _reap_session(sid: int) -> int:
    """Worker processes of a killed indexer must exit by themselves; give them 20 s,
    then kill what is left (and say how many there were: a failed check)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if not _session_members(sid):
            return 0
        time.sleep(0.1)
    left = _session_members(sid)
    for pid in left:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            _LEFTOVERS.append(command.decode(errors="replace")[:160])
        except OSError:
            pass
        os.kill(pid, signal.SIGKILL)
    return len(left)


def _session_members(sid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == sid:
                    members.append(int(entry))
            except OSError:
                pass
    return members


# -- checks ------------------------------------------------------------------------------


def _db(path: Path) -> Any:
    from signaldesk.retrieval.store import connect

    return connect(path, readonly=True)


def index_state(vault: Path) -> dict[str, Any]:
    """Integrity, counts and ids of the live index; raises AssertionError on a problem."""
    from signaldesk.retrieval.settings import IndexSettings
    from signaldesk.retrieval.store import index_db_path

    conn = _db(index_db_path(vault, IndexSettings()))
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        assert integrity == "ok", f"index integrity_check: {integrity}"
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 0)")
        chunk_ids = {r[0] for r in conn.execute("SELECT id FROM chunks")}
        fts_ids = {r[0] for r in conn.execute("SELECT rowid FROM chunks_fts")}
        vec_ids = {r[0] for r in conn.execute("SELECT rowid FROM chunk_vectors")}
        assert chunk_ids == fts_ids == vec_ids, (
            f"chunks {len(chunk_ids)}, fts {len(fts_ids)}, vectors {len(vec_ids)}"
        )
        paths = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT path, mtime_ns, size FROM notes")}
        return {"chunks": len(chunk_ids), "paths": paths}
    finally:
        conn.close()


def vault_notes(vault: Path) -> dict[str, tuple[int, int]]:
    from signaldesk.retrieval.ignore import VaultFilter, iter_vault_notes

    return {
        rel: (st.st_mtime_ns, st.st_size) for rel, st in iter_vault_notes(vault, VaultFilter(vault))
    }


def check_index_matches_vault(vault: Path) -> dict[str, Any]:
    state = index_state(vault)
    notes = vault_notes(vault)
    indexed = state["paths"]
    missing = sorted(set(notes) - set(indexed))
    stale = sorted(set(indexed) - set(notes))
    assert not missing, f"{len(missing)} notes not indexed, e.g. {missing[:3]}"
    assert not stale, f"{len(stale)} indexed paths gone from the vault, e.g. {stale[:3]}"
    return state


def temp_files(vault: Path) -> list[str]:
    """Our temporary leftovers anywhere in the vault, and stale index files."""
    found = []
    for folder, _dirs, files in os.walk(vault):
        for name in files:
            if _TEMP_NAME.match(name):
                found.append(os.path.relpath(os.path.join(folder, name), vault))
    state = vault / ".signaldesk"
    from signaldesk.retrieval.generations import read_pointer

    live = read_pointer(state / "index.db")
    for path in state.iterdir():
        name = path.name
        is_db = re.fullmatch(r"index(-\d+)?\.db", name) is not None
        if is_db and name != live.name:
            found.append(f".signaldesk/{name} (old generation)")
        if name.endswith(".readers"):
            db = path.with_name(name.removesuffix(".readers"))
            if not db.exists():
                found.append(f".signaldesk/{name} (orphan lease)")
        for companion in ("-wal", "-shm"):
            if name.endswith(companion) and not path.with_name(name[: -len(companion)]).exists():
                found.append(f".signaldesk/{name} (orphan {companion})")
    return found


def ledger_rows(vault: Path) -> list[sqlite3.Row]:
    conn = sqlite3.connect(f"file:{vault / '.signaldesk' / 'ledger.db'}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        assert integrity == "ok", f"ledger integrity_check: {integrity}"
        queued = conn.execute("SELECT count(*) FROM index_queue").fetchone()[0]
        assert queued == 0, f"{queued} path(s) still queued for indexing"
        return list(conn.execute("SELECT * FROM items"))
    finally:
        conn.close()


def note_ids(vault: Path) -> Counter[str]:
    """How many notes in the vault carry each ``signaldesk_id``."""
    from signaldesk.pipeline.triage.filing import read_note_id

    counts: Counter[str] = Counter()
    for rel in vault_notes(vault):
        found = read_note_id(vault / rel)
        if found:
            counts[found] += 1
    return counts


def check_filed(vault: Path, rows: list[sqlite3.Row], indexed: dict[str, Any]) -> int:
    moving = ("discovered", "fetched", "extracted")
    in_flight = [r["id"][:10] for r in rows if r["status"] in moving]
    assert not in_flight, f"{len(in_flight)} item(s) left in flight"
    ids = note_ids(vault)
    doubled = [i[:10] for i, n in ids.items() if n > 1]
    assert not doubled, f"items with two notes: {doubled[:3]}"
    filed = [r for r in rows if r["status"] == "filed"]
    for row in filed:
        path = row["note_path"]
        assert path and (vault / path).is_file(), f"filed note missing: {path}"
        assert path in indexed["paths"], f"filed note not indexed: {path}"
    return len(filed)


def user_hashes(vault: Path) -> dict[str, bytes]:
    return {rel: (vault / rel).read_bytes() for rel in _USER_NOTES}


# -- preparing vaults --------------------------------------------------------------------


def _init(vault: Path, config: str = "") -> None:
    from signaldesk.pipeline.vault_setup import init_vault

    init_vault(vault)
    for rel, text in _USER_NOTES.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text, encoding="utf-8")
    if config:
        (vault / "signaldesk.toml").write_text(config, encoding="utf-8")


def _articles() -> list[tuple[str, str, bytes]]:
    """(id, article text, page HTML) of the 181 benchmark pages."""
    truth = json.loads((_DATA / "articles" / "ground-truth.json").read_text(encoding="utf-8"))
    out = []
    for key in sorted(truth):
        html = gzip.decompress((_DATA / "articles" / "html" / f"{key}.html.gz").read_bytes())
        out.append((key, truth[key]["articleBody"], html))
    return out


def _title(text: str, n: int) -> str:
    words = re.findall(r"[A-Za-z][A-Za-z'-]+", text)[:8]
    return (" ".join(words) or "Article") + f" ({n})"


def prepare_index(root: Path) -> Path:
    vault = root / "index-template"
    with tarfile.open(_DATA / "vaults" / "obsidian-hub.tar.gz") as archive:
        archive.extractall(root / "hub", filter="data")
    shutil.move(str(root / "hub" / "vault"), vault)
    _init(vault)
    assert run_cli(vault, ["index"]).returncode == 0
    return vault


def prepare_triage(root: Path) -> Path:
    vault = root / "triage-template"
    _init(vault, _CONFIG)
    articles = _articles()
    texts = [text for _, text, _ in articles]
    # 19 more, distinct: the second halves of the longest articles.
    for text in sorted(texts, key=len, reverse=True)[:19]:
        texts.append(text[len(text) // 2 :])
    for n, text in enumerate(texts[:200]):
        body = "\n\n".join(p for p in text.split("\n") if p.strip())
        title = _title(text, n).replace('"', "'")
        (vault / "Clippings").mkdir(exist_ok=True)
        (vault / "Clippings" / f"clip-{n:03d}.md").write_text(
            f'---\ntitle: "{title}"\nsource: "https://news{n % 17}.example/a/{n}"\n'
            'author:\n  - "[[Ada Writer]]"\npublished: 2026-11-20\ncreated: 2026-11-21\n'
            'description: "A clipped article."\ntags:\n  - clippings\n---\n\n' + body + "\n",
            encoding="utf-8",
        )
    assert run_cli(vault, ["index"]).returncode == 0
    return vault


@dataclass
class FeedSite:
    server: Any
    urls: list[str]
    guids: set[str]


def serve_feeds(server: Any) -> FeedSite:
    from tests.feedserver import Reply
    from tests.intake_data import Entry, rss_document

    articles = _articles()
    urls, guids = [], set()
    epoch = 1_780_000_000
    for f in range(50):
        entries = []
        for e in range(4):
            n = f * 4 + e
            _, text, html = articles[n % len(articles)]
            path = f"/a/{f}/{e}"
            server.route(path, Reply(body=html, content_type="text/html; charset=utf-8"))
            guid = f"urn:kill-matrix:{f}:{e}"
            guids.add(guid)
            from datetime import UTC, datetime

            entries.append(
                Entry(
                    guid=guid,
                    title=_title(text, n),
                    link=server.url(path),
                    description=text[:150] + " …",
                    published=datetime.fromtimestamp(epoch + n * 3600, UTC),
                )
            )
        feed = rss_document(f"Feed {f}", server.url(f"/site/{f}"), entries)
        etag = f'"f{f}"'

        def handler(request: Any, feed: bytes = feed, etag: str = etag) -> Any:
            if request.headers.get("if-none-match") == etag:
                return Reply(status=304, headers={"ETag": etag}, content_type=None)
            return Reply(body=feed, headers={"ETag": etag}, content_type="application/rss+xml")

        server.route(f"/feeds/{f}.xml", handler)
        urls.append(server.url(f"/feeds/{f}.xml"))
    return FeedSite(server, urls, guids)


def prepare_scan(root: Path, site: FeedSite) -> Path:
    import anyio

    from signaldesk.pipeline.config import resolve_workspace
    from signaldesk.pipeline.intake.feeds import FeedRegistry
    from signaldesk.pipeline.ledger.store import open_ledger

    vault = root / "scan-template"
    _init(vault, _CONFIG + "[http]\nper_host = 16\n")
    workspace = resolve_workspace(vault, None)

    async def subscribe() -> None:
        async with open_ledger(workspace) as ledger:
            registry = FeedRegistry(ledger)
            for url in site.urls:
                await registry.add(url)

    anyio.run(subscribe)
    assert run_cli(vault, ["index"]).returncode == 0
    return vault


# -- trials ------------------------------------------------------------------------------


@dataclass
class Tally:
    name: str
    trials: int = 0
    killed_mid_run: int = 0
    finished_before_kill: int = 0
    failures: list[str] = field(default_factory=list)
    native_crashes: list[str] = field(default_factory=list)
    rerun_seconds: list[float] = field(default_factory=list)
    notes: Counter[str] = field(default_factory=Counter)

    crash_dir: Path | None = None

    def crash(self, what: str, run: Run) -> None:
        if run.orphans:
            self.notes[f"orphan processes after {what}"] += run.orphans
        if run.returncode < 0 and not (run.killed and run.returncode == -signal.SIGKILL):
            first = next(
                (line for line in run.stderr.splitlines() if "pointer" in line or "Fatal" in line),
                run.stderr.strip().splitlines()[-1] if run.stderr.strip() else "",
            )
            kept = ""
            if self.crash_dir is not None:
                path = self.crash_dir / f"crash-{self.name}-{len(self.native_crashes)}.txt"
                path.write_text(run.stderr, encoding="utf-8")
                kept = f" (stderr: {path})"
            self.native_crashes.append(f"{what}: rc {run.returncode}: {first}{kept}")


def _search_baseline(vault: Path) -> dict[str, list[str]]:
    import anyio

    from signaldesk.retrieval.retriever import Retriever
    from signaldesk.retrieval.settings import IndexSettings, SearchSettings

    async def go() -> dict[str, list[str]]:
        async with await Retriever.open(vault, IndexSettings(), SearchSettings(), None) as r:
            return {q: [x.path for x in await r.search(q, mode="bm25")] for q in _QUERIES}

    return anyio.run(go)


def trial_index(template: Path, work: Path, rng: random.Random, tally: Tally, span: float) -> None:
    # The same vault throughout: each trial kills a rebuild of a complete index.
    vault = work / "index"
    if not vault.exists():
        shutil.copytree(template, vault, symlinks=True)
    before = index_state(vault)
    answers = _search_baseline(vault)
    users = user_hashes(vault)
    when = rng.uniform(0.05, 0.95) * span
    killed = run_cli(vault, ["index", "--full"], kill_after=when)
    tally.crash("index --full", killed)
    assert not killed.orphans, f"{killed.orphans} process(es) of the killed run lived on"
    if killed.killed:
        tally.killed_mid_run += 1
        # Before any rerun: the previous index answers, whole.
        after = index_state(vault)
        if after["paths"] != before["paths"] or after["chunks"] != before["chunks"]:
            raise AssertionError("the live index changed under a killed rebuild")
        if _search_baseline(vault) != answers:
            raise AssertionError("searches after the kill differ from the previous index")
    else:
        tally.finished_before_kill += 1
        assert killed.returncode == 0, killed.stderr[-2000:]
    rerun = run_cli(vault, ["index"])
    tally.crash("index rerun", rerun)
    tally.rerun_seconds.append(rerun.seconds)
    assert rerun.returncode == 0, f"rerun exit {rerun.returncode}: {rerun.stderr[-2000:]}"
    check_index_matches_vault(vault)
    leftovers = temp_files(vault)
    assert not leftovers, f"leftovers: {leftovers[:5]}"
    assert user_hashes(vault) == users, "a user note changed"


def trial_scan(
    template: Path, work: Path, rng: random.Random, tally: Tally, span: float, guids: set[str]
) -> None:
    vault = work / f"scan-{tally.trials}"
    shutil.copytree(template, vault, symlinks=True)
    users = user_hashes(vault)
    kill_then_rerun(vault, "scan", rng.uniform(0.05, 0.95) * span, tally)
    indexed = check_index_matches_vault(vault)
    rows = ledger_rows(vault)
    rss = Counter(json.loads(r["payload"]).get("guid") for r in rows if r["source_kind"] == "rss")
    assert set(rss) == guids, f"{len(guids - set(rss))} entries missing from the ledger"
    assert max(rss.values()) == 1, "an entry is in the ledger twice"
    tally.notes["filed"] += check_filed(vault, rows, indexed)
    leftovers = temp_files(vault)
    assert not leftovers, f"leftovers: {leftovers[:5]}"
    assert user_hashes(vault) == users, "a user note changed"
    shutil.rmtree(vault)


def kill_then_rerun(vault: Path, verb: str, kill_after: float, tally: Tally) -> None:
    """Run ``signaldesk VERB``, kill -9 it after ``kill_after`` s, then run it again to the end."""
    killed = run_cli(vault, [verb], kill_after=kill_after)
    tally.crash(verb, killed)
    assert not killed.orphans, f"{killed.orphans} process(es) of the killed run lived on"
    if killed.killed:
        tally.killed_mid_run += 1
    else:
        tally.finished_before_kill += 1
    rerun = run_cli(vault, [verb])
    tally.crash(f"{verb} rerun", rerun)
    tally.rerun_seconds.append(rerun.seconds)
    assert rerun.returncode == 0, f"rerun exit {rerun.returncode}: {rerun.stderr[-2000:]}"


def _body(data: bytes) -> bytes:
    """What follows the frontmatter (filing may add keys to it, never touch the body)."""
    end = data.find(b"\n---\n", 4)
    return data[end + 5 :] if data.startswith(b"---\n") and end > 0 else data


def trial_triage(template: Path, work: Path, rng: random.Random, tally: Tally, span: float) -> None:
    vault = work / f"triage-{tally.trials}"
    shutil.copytree(template, vault, symlinks=True)
    users = user_hashes(vault)
    clippings = {p.name: p.read_bytes() for p in (vault / "Clippings").iterdir()}
    kill_then_rerun(vault, "triage", rng.uniform(0.05, 0.95) * span, tally)
    indexed = check_index_matches_vault(vault)
    rows = ledger_rows(vault)
    origins = Counter(
        json.loads(r["payload"]).get("origin_path") for r in rows if r["source_kind"] == "clipper"
    )
    expected = {f"Clippings/{name}" for name in clippings}
    assert set(origins) == expected, f"{len(expected - set(origins))} clippings not in the ledger"
    assert max(origins.values()) == 1, "a clipping is in the ledger twice"
    tally.notes["filed"] += check_filed(vault, rows, indexed)
    filed_bodies = Counter(
        _body((vault / r["note_path"]).read_bytes())
        for r in rows
        if r["status"] == "filed" and r["note_path"]
    )
    for name, data in clippings.items():
        here = vault / "Clippings" / name
        if here.exists():
            assert here.read_bytes() == data, f"clipping {name} changed in place"
            if filed_bodies[_body(data)]:
                tally.notes["kept both (killed between link and unlink)"] += 1
        else:
            assert filed_bodies[_body(data)] >= 1, f"clipping {name} gone and not filed"
    leftovers = temp_files(vault)
    assert not leftovers, f"leftovers: {leftovers[:5]}"
    assert user_hashes(vault) == users, "a user note changed"
    shutil.rmtree(vault)


def _measure(prepare_copy: Callable[[], Path], args: list[str]) -> float:
    vault = prepare_copy()
    run = run_cli(vault, args)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.seconds


def _report(tally: Tally, span: float) -> None:
    ok = tally.trials - len(tally.failures)
    reruns = sorted(tally.rerun_seconds)
    median = reruns[len(reruns) // 2] if reruns else 0.0
    print(
        f"\n{tally.name}: {tally.trials} trials (uninterrupted run {span:.1f} s), "
        f"{tally.killed_mid_run} killed mid-run, {tally.finished_before_kill} finished before "
        f"the kill; all checks passed in {ok}/{tally.trials}; native crashes "
        f"{len(tally.native_crashes)}; rerun median {median:.1f} s"
    )
    for key, value in sorted(tally.notes.items()):
        print(f"  {key}: {value}")
    for failure in tally.failures:
        print(f"  FAILED {failure}")
    for crash in tally.native_crashes:
        print(f"  CRASH {crash}")
    for command in sorted(set(_LEFTOVERS))[:5]:
        print(f"  left alive: {command}")
    _LEFTOVERS.clear()


def _fresh(template: Path, target: Path) -> Path:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(template, target, symlinks=True)
    return target


def _scenario(
    name: str, work: Path, rng: random.Random, site: FeedSite | None, trials: int
) -> None:
    tally = Tally(name, crash_dir=work)
    if name == "index":
        template = prepare_index(work)
        span = _measure(lambda: template, ["index", "--full"])

        def step() -> None:
            trial_index(template, work, rng, tally, span)

    elif name == "scan":
        assert site is not None
        guids = site.guids
        template = prepare_scan(work, site)
        span = _measure(lambda: _fresh(template, work / "scan-measure"), ["scan"])

        def step() -> None:
            trial_scan(template, work, rng, tally, span, guids)

    elif name == "triage":
        template = prepare_triage(work)
        span = _measure(lambda: _fresh(template, work / "triage-measure"), ["triage"])

        def step() -> None:
            trial_triage(template, work, rng, tally, span)

    else:
        raise SystemExit(f"unknown scenario {name!r}")
    # A run can finish before its kill point (the load moves); those do not count as
    # kill points, so trials go on until ``trials`` kills have landed (at most twice).
    while tally.killed_mid_run < trials and tally.trials < 2 * trials:
        failed = len(tally.failures)
        try:
            step()
        except AssertionError as exc:
            tally.failures.append(f"trial {tally.trials + 1}: {exc}")
        tally.trials += 1
        verdict = "FAILED" if len(tally.failures) > failed else "ok"
        print(f"  {name} trial {tally.trials}: {verdict}", flush=True)
    _report(tally, span)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.kill_matrix", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--trials", type=int, default=25)
    parser.add_argument("--only", default="index,scan,triage")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--work", type=Path, default=None, help="Keep the vaults here.")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    sys.path.insert(0, str(_REPO))
    work = args.work or Path(tempfile.mkdtemp(prefix="kill-matrix-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    wanted = [s.strip() for s in args.only.split(",") if s.strip()]
    print(f"kill matrix: {args.trials} trials each of {', '.join(wanted)}; seed {args.seed}")
    print(f"load average at start: {os.getloadavg()}; work folder {work}")
    print(
        f"command: python -m bench.kill_matrix --trials {args.trials} --only {args.only} "
        f"--seed {args.seed}"
    )
    from http.server import ThreadingHTTPServer

    from tests.feedserver import FeedServer

    # A killed client resets its connections; that is expected here, not news.
    ThreadingHTTPServer.handle_error = lambda self, request, address: None  # type: ignore[method-assign]
    with FeedServer() as server:
        site = serve_feeds(server) if "scan" in wanted else None
        for name in wanted:
            _scenario(name, work, rng, site, args.trials)
    print(f"\nload average at end: {os.getloadavg()}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
