"""Private keys are redacted as one block: real keys of every size and type, made now by
``ssh-keygen`` and ``openssl``, in the scrubber, in ``index.db`` and in what search returns.

Issue 12 measured 12 of 36 lines of a fresh 3072-bit key, 23 of 47 of a 4096-bit key and
half of an RSA-8192 and a GCP service-account key in the index and in search results.
"""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from bench.secret_samples import key_lines, real_private_keys
from signaldesk.retrieval.context_block import render_context
from signaldesk.retrieval.indexer import Indexer
from signaldesk.retrieval.retriever import Retriever
from signaldesk.retrieval.scrubber import scrub
from signaldesk.retrieval.settings import SearchSettings
from signaldesk.retrieval.store import index_db_path
from tests.index_helpers import SETTINGS, db, real_embedder, section

B64 = string.ascii_letters + string.digits + "+/"


@pytest.fixture(scope="module")
def keys() -> dict[str, str]:
    made = dict(real_private_keys())
    if not made:
        pytest.skip("neither ssh-keygen nor openssl is installed")
    return made


def _places(key: str) -> dict[str, str]:
    body = key.split("-----END")[0] if "-----END" in key else key
    return {
        "alone": key,
        "fenced in a note": f"# Server\n\nThe deploy key:\n\n```\n{key}\n```\n\nRotate it.\n",
        "without its END line": f"Pasted by mistake:\n{body}",
        "as a quote": "\n".join("> " + line for line in key.splitlines()),
        "indented in YAML": "ssh:\n  key: |\n" + "\n".join("    " + ln for ln in key.splitlines()),
    }


# Making the keys (an 8192-bit RSA one among them) takes a while on a busy machine.
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_no_line_of_any_real_key_survives_and_line_counts_are_kept(keys: dict[str, str]) -> None:
    assert {"openssh-rsa-3072", "openssh-rsa-8192", "gcp-service-account-json"} <= set(keys)
    for kind, key in keys.items():
        lines = key_lines(key)
        assert lines, kind
        for place, document in _places(key).items():
            out = scrub(document).text
            survivors = [line for line in lines if line in out]
            assert survivors == [], (kind, place, len(survivors), len(lines))
            assert out.count("\n") == document.count("\n"), (kind, place)
            assert "[REDACTED:private-key]" in out, (kind, place)


def test_text_around_a_key_is_kept() -> None:
    rng = random.Random(7)
    body = ["".join(rng.choice(B64) for _ in range(70)) for _ in range(5)] + ["Zm9v"]
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(body)
    for ending in ("\n-----END OPENSSH PRIVATE KEY-----\n", "\n"):
        text = f"Before the key.\n{key}{ending}\nAfter the key, a sentence.\n"
        out = scrub(text).text
        assert out.startswith("Before the key.\n[REDACTED:private-key]")
        assert out.endswith("\nAfter the key, a sentence.\n")
        assert "Zm9v" not in out and body[0] not in out


def test_a_text_that_starts_inside_a_key_loses_the_key_part() -> None:
    rng = random.Random(8)
    body = ["".join(rng.choice(B64) for _ in range(64)) for _ in range(3)] + ["QUJD"]
    text = "\n".join(body) + "\n-----END RSA PRIVATE KEY-----\nThe end.\n"
    out = scrub(text).text
    assert all(line not in out for line in body)
    assert out.endswith("The end.\n")


def test_a_key_in_a_json_string_and_two_keys_in_a_row() -> None:
    rng = random.Random(9)

    def pem(kind: str) -> str:
        lines = ["".join(rng.choice(B64) for _ in range(64)) for _ in range(4)]
        return f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----"

    escaped = pem("PRIVATE KEY").replace("\n", "\\n")
    tail = '\\n", "client_email": "a@b.iam.gserviceaccount.com"}'
    out = scrub('{"private_key": "' + escaped + tail).text
    assert out == '{"private_key": "[REDACTED:private-key]' + tail
    first, second = pem("EC PRIVATE KEY"), pem("ENCRYPTED PRIVATE KEY")
    result = scrub(f"{first}\n{second}\n")
    assert result.findings == {"private-key": 2}


def test_a_certificate_and_a_public_key_are_not_private_keys() -> None:
    rng = random.Random(10)
    lines = "\n".join("".join(rng.choice(B64) for _ in range(64)) for _ in range(3))
    for kind in ("CERTIFICATE", "PUBLIC KEY"):
        text = f"-----BEGIN {kind}-----\n{lines}\n-----END {kind}-----\n"
        assert "private-key" not in scrub(text).findings


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.anyio
async def test_keys_longer_than_a_chunk_never_reach_the_index_or_search(
    vault: Path, keys: dict[str, str]
) -> None:
    kinds = ("openssh-rsa-3072", "openssh-rsa-4096", "openssh-rsa-8192", "gcp-service-account-json")
    for n, kind in enumerate(kinds):
        note = vault / "03-resources" / f"server-{n}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(
            f"---\ntitle: Server {n} access\n---\n\n"
            + section("Access", "bastion host")
            + f"\n## The {kind} key\n\n```\n{keys[kind]}\n```\n\n"
            + section("Rotation", "yearly rotation"),
            encoding="utf-8",
        )
    embedder = real_embedder()
    await Indexer(vault, SETTINGS, embedder).run()
    conn = db(vault)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        start_lines = [r[0] for r in conn.execute("SELECT start_line FROM chunks ORDER BY 1")]
        texts = [r[0] for r in conn.execute("SELECT text FROM chunks")]
    finally:
        conn.close()
    assert any("[REDACTED:private-key]" in t for t in texts)
    raw = b"".join(p.read_bytes() for p in index_db_path(vault, SETTINGS).parent.glob("index.db*"))
    retriever = await Retriever.open(vault, SETTINGS, SearchSettings(), embedder)
    try:
        for kind in kinds:
            lines = key_lines(keys[kind])
            for line in lines:
                assert line.encode() not in raw, kind
            # The query is a piece of the key itself: nothing of it may come back.
            for probe in (lines[1][:30], lines[len(lines) // 2][:30], lines[-1]):
                results = await retriever.search(probe, limit=10)
                context = render_context(await retriever.context(probe), 4000).text
                shown = "\n".join(r.text for r in results) + context
                assert all(line not in shown for line in lines), kind
    finally:
        await retriever.aclose()
    # The sections after a key start where the file says (the redaction kept the lines).
    for n in range(len(kinds)):
        text = (vault / "03-resources" / f"server-{n}.md").read_text(encoding="utf-8")
        rotation = text.splitlines().index("## Rotation") + 1
        assert rotation in start_lines
