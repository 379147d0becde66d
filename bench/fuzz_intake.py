"""Poison pills: ``python -m bench.fuzz_intake`` (issue 12's bar: 1,000 + 1,000).

Builds a vault subscribed to ``--good`` generated feeds and ``--feeds`` mutated copies
of the shared real feeds (:mod:`bench.mutate`), all served from 127.0.0.1, and fills
the newsletter drop folder with ``--good`` generated newsletters and ``--mails``
mutated copies of the shared real mails. Then it runs ``signaldesk scan`` ``--scans``
times as a subprocess, the network closed (article pages of the mutated feeds are
unreachable), and prints per scan: the exit code, the time, stderr lines and
tracebacks; and at the end how many good items the ledger took in (the bar: all, and
every scan exits 0) and what became of the mutated ones.

``signaldesk.sources`` is also called directly on every mutated input, counting
what raises: the mail parser is documented never to raise, the feed parser to raise
only ``FeedParseError``. ``--seed`` makes a run reproducible.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import anyio

from bench.mutate import feed_seeds, mail_seeds, mutate_feed, mutate_mail

__all__ = ["main", "parse_directly"]

_REPO = Path(__file__).resolve().parent.parent
_DEFAULT_SHARED = _REPO.parent / "shared" / "data"


def parse_directly(feeds: list[bytes], mails: list[bytes]) -> dict[str, Counter[str]]:
    """Call the adapters on each input; count outcomes by kind (and what raised)."""
    from signaldesk.sources.errors import FeedParseError
    from signaldesk.sources.feed_parse import parse_feed
    from signaldesk.sources.newsletter import parse_email_detailed

    out: dict[str, Counter[str]] = {"feeds": Counter(), "mails": Counter()}
    for data in feeds:
        try:
            parsed = parse_feed(data, url="http://127.0.0.1:9/feed.xml")
            out["feeds"]["parsed" if parsed.items else "parsed, no entries"] += 1
        except FeedParseError:
            out["feeds"]["FeedParseError (expected)"] += 1
        except Exception as exc:
            out["feeds"][f"raised {type(exc).__name__}"] += 1
    for data in mails:
        try:
            item, _, skipped = parse_email_detailed(data, location="fuzz.eml")
            out["mails"]["item" if item else f"skipped: {(skipped or '')[:40]}"] += 1
        except Exception as exc:
            out["mails"][f"raised {type(exc).__name__}"] += 1
    return out


def _good_mail(folder: Path, n: int) -> str:
    from tests.intake_data import article_text, newsletter_eml

    path = newsletter_eml(
        folder,
        f"good-{n:04d}.eml",
        subject=f"Good newsletter {n}",
        view_online=f"http://127.0.0.1:9/good-mail/{n}",
        body=article_text(900_000 + n),
    )
    return path.name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz_intake")
    parser.add_argument("--shared", type=Path, default=_DEFAULT_SHARED)
    parser.add_argument("--feeds", type=int, default=1000, help="mutated feeds")
    parser.add_argument("--mails", type=int, default=1000, help="mutated mails")
    parser.add_argument("--good", type=int, default=20, help="good feeds and good mails")
    parser.add_argument("--entries", type=int, default=5, help="entries per good feed")
    parser.add_argument("--scans", type=int, default=2)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--no-triage", action="store_true", help="intake only (faster)")
    parser.add_argument("--vault", type=Path, help="keep the vault here (default: a temp dir)")
    args = parser.parse_args(argv)

    from signaldesk.pipeline.config import resolve_workspace
    from signaldesk.pipeline.intake.feeds import FeedRegistry
    from signaldesk.pipeline.ledger.store import open_ledger
    from signaldesk.pipeline.vault_setup import init_vault
    from tests.feedserver import FeedServer, Reply
    from tests.intake_data import serve_feeds

    rng = random.Random(args.seed)
    feed_pool, mail_pool = feed_seeds(args.shared), mail_seeds(args.shared)
    started = time.perf_counter()
    bad_feeds = [mutate_feed(rng.choice(feed_pool), rng) for _ in range(args.feeds)]
    bad_mails = [mutate_mail(rng.choice(mail_pool), rng) for _ in range(args.mails)]
    print(
        f"{len(bad_feeds)} mutated feeds, {len(bad_mails)} mutated mails (seed {args.seed}, "
        f"made in {time.perf_counter() - started:.1f} s)"
    )
    started = time.perf_counter()
    direct = parse_directly(bad_feeds, bad_mails)
    print(f"adapters called directly ({time.perf_counter() - started:.1f} s):")
    for kind, counts in direct.items():
        print(f"  {kind}: " + ", ".join(f"{n} {what}" for what, n in counts.most_common()))

    closed = "http://127.0.0.1:9"
    env = {
        **os.environ,
        "PYTHONPATH": str(_REPO),
        **{k: closed for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")},
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "HF_HUB_OFFLINE": "1",
    }
    with tempfile.TemporaryDirectory(prefix="fuzz-intake-") as tmp, FeedServer() as server:
        vault = args.vault or Path(tmp) / "vault"
        init_vault(vault)
        if args.no_triage:
            config = vault / "signaldesk.toml"
            text = config.read_text(encoding="utf-8")
            config.write_text(
                text.replace("# after_scan = true", "after_scan = false", 1), encoding="utf-8"
            )
        good = serve_feeds(server, args.good, args.entries, teaser_every=2, prefix="good/")
        urls = list(good.urls)
        for n, body in enumerate(bad_feeds):
            server.route(f"/bad/{n}.xml", Reply(body=body, content_type="application/xml"))
            urls.append(server.url(f"/bad/{n}.xml"))
        drop = vault / "00-inbox" / "newsletters"
        good_mails = {_good_mail(drop, n) for n in range(args.good)}
        for n, data in enumerate(bad_mails):
            (drop / f"bad-{n:04d}.eml").write_bytes(data)
        workspace = resolve_workspace(vault)

        async def subscribe() -> None:
            async with open_ledger(workspace) as ledger:
                registry = FeedRegistry(ledger)
                for url in urls:
                    await registry.add(url)

        anyio.run(subscribe)
        codes: list[int] = []
        for n in range(1, args.scans + 1):
            started = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-m", "signaldesk", "--vault", str(vault), "scan", "--force"],
                capture_output=True,
                env=env,
                check=False,
                timeout=7200,
            )
            stderr = out.stderr.decode("utf-8", "replace")
            codes.append(out.returncode)
            print(
                f"scan {n}: exit {out.returncode} in {time.perf_counter() - started:.1f} s, "
                f"stderr {len(stderr.splitlines())} lines, {stderr.count('Traceback')} tracebacks"
            )
            if out.returncode:
                print(stderr[-3000:])
        with sqlite3.connect(vault / ".signaldesk" / "ledger.db") as db:
            rows = db.execute(
                "SELECT source_kind, status, json_extract(payload, '$.guid'), "
                "json_extract(payload, '$.extra.location') FROM items"
            ).fetchall()
    settled = {"pending", "filed", "rejected", "duplicate"}
    good_feed_items = {r[2]: r[1] for r in rows if r[0] == "rss" and r[2] in good.guids}
    good_mail_items = {r[3]: r[1] for r in rows if r[0] == "newsletter" and r[3] in good_mails}
    taken_feeds = sum(1 for s in good_feed_items.values() if s in settled)
    taken_mails = sum(1 for s in good_mail_items.values() if s in settled)
    print(
        f"good feed entries taken in: {taken_feeds}/{len(good.guids)}; "
        f"good mails taken in: {taken_mails}/{len(good_mails)}"
    )
    other = Counter((r[0], r[1]) for r in rows if r[2] not in good.guids and r[3] not in good_mails)
    print(
        "mutated inputs in the ledger: "
        + ", ".join(f"{n} {k} {s}" for (k, s), n in sorted(other.items()))
    )
    ok = (
        all(c == 0 for c in codes)
        and taken_feeds == len(good.guids)
        and taken_mails == len(good_mails)
    )
    raised = sum(n for c in direct.values() for what, n in c.items() if what.startswith("raised"))
    print(f"bar {'met' if ok and not raised else 'NOT met'}; load average {os.getloadavg()[0]:.2f}")
    print(
        f"(python -m bench.fuzz_intake --feeds {args.feeds} --mails {args.mails} --good {args.good}"
        f" --scans {args.scans} --seed {args.seed}{' --no-triage' if args.no_triage else ''})"
    )
    return 0 if ok and not raised else 1


if __name__ == "__main__":
    raise SystemExit(main())
