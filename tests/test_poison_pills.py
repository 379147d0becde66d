"""One bad input never stops the others (issue 12, items 5 and 6).

A feed of deeply nested JSON, a mail with a raw 8-bit byte in its Message-ID, and
seeded mutations of the shared real feeds and mails (:mod:`bench.mutate`): the scan
takes in every good item and returns; the adapters never raise what they say they
do not. ``python -m bench.fuzz_intake`` runs the same at 1,000 + 1,000.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.mutate import feed_seeds, mail_seeds, mutate_feed, mutate_mail
from signaldesk.pipeline.cli import cli
from signaldesk.sources.errors import FeedParseError
from signaldesk.sources.feed_parse import parse_feed
from signaldesk.sources.newsletter import parse_email_detailed
from tests.feedserver import FeedServer, Reply
from tests.intake_data import article_text, newsletter_eml, serve_feeds

SETTLED = {"pending", "filed", "rejected", "duplicate"}


@pytest.fixture
def server() -> Iterator[FeedServer]:
    with FeedServer() as s:
        yield s


def _cli(vault: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--vault", str(vault), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def _items(vault: Path) -> list[dict[str, Any]]:
    out = _cli(vault, "items", "--json", "--limit", "100000").stdout
    return list(json.loads(out))


def _bad_message_id_mail(folder: Path) -> None:
    raw = (
        b"From: News <news@example.org>\r\nTo: r@example.net\r\nSubject: Odd id\r\n"
        b"Message-ID: <caf\xe9-\xff\xfe@example.org>\r\nList-Id: <odd.example.org>\r\n"
        b"List-Unsubscribe: <https://example.org/u>\r\nContent-Type: text/plain\r\n\r\n"
        + article_text(77).encode()
    )
    (folder / "odd-id.eml").write_bytes(raw)


def test_a_poison_feed_and_a_poison_mail_do_not_stop_the_scan(
    vault: Path, server: FeedServer
) -> None:
    (vault / "signaldesk.toml").write_text("[triage]\nafter_scan = false\n", encoding="utf-8")
    good = serve_feeds(server, 2, 3)
    nested = b"[" * 200_000 + b"]" * 200_000
    server.route("/nested.json", Reply(body=nested, content_type="application/feed+json"))
    for url in (*good.urls, server.url("/nested.json")):
        _cli(vault, "feeds", "add", url, "--no-check")
    drop = vault / "00-inbox" / "newsletters"
    newsletter_eml(
        drop, "good.eml", subject="Good", view_online="https://g.example/1", body=article_text(78)
    )
    _bad_message_id_mail(drop)
    out = _cli(vault, "scan").stdout
    assert "not a feed at" in out  # the nested feed is one problem line
    items = _items(vault)
    rss = [i for i in items if i["source_kind"] == "rss"]
    assert {i["guid"] for i in rss} == set(good.guids)
    assert all(i["status"] in SETTLED for i in items)
    mails = {i["title"]: i for i in items if i["source_kind"] == "newsletter"}
    assert set(mails) == {"Good", "Odd id"}  # the odd Message-ID is read, not fatal
    assert "\ufffd" in mails["Odd id"]["guid"] or "é" in mails["Odd id"]["guid"]
    # And again: the poison is still there, the scan still returns.
    _cli(vault, "scan", "--force")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_mutated_feeds_and_mails_among_good_ones(
    vault: Path, server: FeedServer, shared_data: Path
) -> None:
    rng = random.Random(5)
    feeds, mails = feed_seeds(shared_data), mail_seeds(shared_data)
    good = serve_feeds(server, 3, 3, teaser_every=2)
    urls = list(good.urls)
    for n in range(40):
        server.route(f"/bad/{n}.xml", Reply(body=mutate_feed(rng.choice(feeds), rng)))
        urls.append(server.url(f"/bad/{n}.xml"))
    for url in urls:
        _cli(vault, "feeds", "add", url, "--no-check")
    drop = vault / "00-inbox" / "newsletters"
    for n in range(3):
        newsletter_eml(
            drop,
            f"good-{n}.eml",
            subject=f"Good {n}",
            view_online=f"https://g.example/{n}",
            body=article_text(600 + n),
        )
    for n in range(40):
        (drop / f"bad-{n}.eml").write_bytes(mutate_mail(rng.choice(mails), rng))
    for _ in range(2):
        result = CliRunner().invoke(cli, ["--vault", str(vault), "scan", "--force"])
        assert result.exit_code == 0, result.output
    items = _items(vault)
    taken = {i["guid"] for i in items if i["status"] in SETTLED}
    assert set(good.guids) <= taken
    good_mails = {i["title"] for i in items if i["source_kind"] == "newsletter"}
    assert {"Good 0", "Good 1", "Good 2"} <= good_mails


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_adapters_never_raise_on_mutated_input(shared_data: Path) -> None:
    rng = random.Random(12)
    feeds, mails = feed_seeds(shared_data), mail_seeds(shared_data)
    for _ in range(150):
        data = mutate_mail(rng.choice(mails), rng)
        item, _, _ = parse_email_detailed(data, location="m.eml", accept_all=rng.random() < 0.3)
        if item is not None:
            json.dumps(item.title + (item.guid or "") + item.text).encode("utf-8")
    for _ in range(60):
        data = mutate_feed(rng.choice(feeds), rng)
        with contextlib.suppress(FeedParseError):  # the one error it may raise
            parse_feed(data, url="http://127.0.0.1:9/f.xml")
