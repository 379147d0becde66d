"""Canonical URLs and simhash near-duplicate detection."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from signaldesk.pipeline.ledger.dedupe import (
    MIN_SIMHASH_WORDS,
    NEAR_DUPLICATE_DISTANCE,
    SIMHASH_BANDS,
    canonical_url,
    from_signed64,
    hamming,
    simhash64,
    simhash_bands,
    to_signed64,
)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://example.com/post?utm_source=x&utm_medium=email", "https://example.com/post"),
        ("HTTPS://Example.COM/post", "https://example.com/post"),
        ("https://example.com:443/post", "https://example.com/post"),
        ("http://example.com:80/post", "https://example.com/post"),
        ("https://example.com/post#comments", "https://example.com/post"),
        ("https://example.com/post/", "https://example.com/post"),
        ("https://www.example.com/post", "https://example.com/post"),
        ("https://example.com/p?b=2&a=1", "https://example.com/p?a=1&b=2"),
        ("https://example.com", "https://example.com/"),
    ],
)
def test_canonical_url_equates_variants(a: str, b: str) -> None:
    assert canonical_url(a) == canonical_url(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://example.com/post?id=1", "https://example.com/post?id=2"),
        ("https://example.com:8443/post", "https://example.com/post"),
        ("https://example.com/Post", "https://example.com/post"),
        ("https://blog.example.com/post", "https://example.com/post"),
    ],
)
def test_canonical_url_keeps_what_identifies_a_page(a: str, b: str) -> None:
    assert canonical_url(a) != canonical_url(b)


@pytest.mark.parametrize("url", [None, "", "mailto:a@b.c", "not a url", "ftp://x/y", "http://[::1"])
def test_canonical_url_rejects_non_web(url: str | None) -> None:
    assert canonical_url(url) is None


def test_simhash_needs_enough_words() -> None:
    assert simhash64("a few words only") is None
    assert simhash64(" ".join(f"w{i}" for i in range(MIN_SIMHASH_WORDS))) is not None


def test_signed_round_trip() -> None:
    for value in (0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1):
        signed = to_signed64(value)
        assert -(1 << 63) <= signed < 1 << 63
        assert from_signed64(signed) == value


def test_bands_find_every_hash_within_the_threshold() -> None:
    rng = random.Random(7)
    for _ in range(500):
        value = rng.getrandbits(64)
        flipped = value
        for bit in rng.sample(range(64), NEAR_DUPLICATE_DISTANCE):
            flipped ^= 1 << bit
        assert hamming(value, flipped) == NEAR_DUPLICATE_DISTANCE
        assert set(simhash_bands(value)) & set(simhash_bands(flipped))
    assert len(simhash_bands(123)) == SIMHASH_BANDS


def _load_articles(shared_data: Path) -> tuple[dict[str, str], dict[str, str]]:
    folder = shared_data / "articles"
    truth = json.loads((folder / "ground-truth.json").read_text(encoding="utf-8"))
    extracted = json.loads(
        (folder / "baseline_outputs" / "trafilatura.json").read_text(encoding="utf-8")
    )["output"]
    return (
        {k: v["articleBody"] for k, v in truth.items()},
        {k: v["articleBody"] for k, v in extracted.items() if v.get("articleBody")},
    )


def test_threshold_on_real_articles(shared_data: Path) -> None:
    """The same article extracted two ways is mostly within the threshold; different
    articles never are (the numbers behind NEAR_DUPLICATE_DISTANCE)."""
    truth, extracted = _load_articles(shared_data)
    hashes = {k: h for k, text in truth.items() if (h := simhash64(text)) is not None}
    same = [
        hamming(hashes[k], h)
        for k, text in extracted.items()
        if k in hashes and (h := simhash64(text)) is not None
    ]
    close = sum(d <= NEAR_DUPLICATE_DISTANCE for d in same) / len(same)
    assert close >= 0.7, f"only {close:.0%} of re-extractions matched"
    keys = sorted(hashes)[:120]
    distinct = [hamming(hashes[a], hashes[b]) for i, a in enumerate(keys) for b in keys[i + 1 :]]
    assert min(distinct) > NEAR_DUPLICATE_DISTANCE + 3


def test_teaser_plus_footer_is_near_but_other_article_is_not(shared_data: Path) -> None:
    truth, _ = _load_articles(shared_data)
    texts = [t for t in truth.values() if len(t.split()) > 400][:2]
    original, other = texts
    # A newsletter copy: a header and a footer around the same body.
    newsletter = (
        "View this email in your browser\n\n" + original + "\n\nYou are receiving this because "
        "you subscribed. Unsubscribe here. Our mailing address is 1 Main St."
    )
    a, b, c = simhash64(original), simhash64(newsletter), simhash64(other)
    assert a is not None and b is not None and c is not None
    assert hamming(a, b) <= NEAR_DUPLICATE_DISTANCE
    assert hamming(a, c) > NEAR_DUPLICATE_DISTANCE
