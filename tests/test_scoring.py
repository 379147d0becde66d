"""The four scorers, the composite and the settings, on real-shaped items."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pydantic import ValidationError

from signaldesk.items import Item
from signaldesk.scoring import (
    DIMENSIONS,
    ScoreCard,
    Scorer,
    ScoreWeights,
    ScoringSettings,
    TopicSettings,
)
from signaldesk.scoring.catalogue import build_reputation
from signaldesk.scoring.keywords import KeywordMatcher

HOW_TO = """Kubernetes upgrades go wrong in predictable ways. This guide walks through the
checks we run before every minor version upgrade of a cluster.

## Before you start

1. Read the changelog and the deprecated API guide.
2. Find manifests that use removed APIs.
3. Take an etcd snapshot.
4. Check the kubelet version skew.

Drain nodes in small batches and watch PodDisruptionBudgets, which can block a
drain forever. Compare error rates with the previous week afterwards.
""" + " ".join(["Every step is explained with the reason behind it."] * 20)

CODE_BLOCK = """

```bash
kubectl get --raw /metrics | grep apiserver_requested_deprecated_apis
kubectl drain node-1 --ignore-daemonsets
```
"""


def _item(**fields: object) -> Item:
    base: dict[str, object] = {
        "source_kind": "rss",
        "source_id": "https://feeds.example/a.xml",
        "title": "Upgrading Kubernetes clusters safely",
        "text": HOW_TO,
        "url": "https://platform.example.com/blog/k8s-upgrade",
        "author": "Platform Team",
    }
    base.update(fields)
    return Item(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def scorer() -> Scorer:
    return Scorer(ScoringSettings(), None)


def test_scores_are_bounded_and_explained(scorer: Scorer) -> None:
    card = scorer.score(_item())
    for name in DIMENSIONS:
        dim = card.dimension(name)
        assert 0.0 <= dim.value <= 1.0
        assert dim.reason and "\n" not in dim.reason
        assert dim.features
    assert 0.0 <= card.composite <= 1.0
    front = card.as_frontmatter()
    assert set(front["scores"]) == set(DIMENSIONS)
    assert front["domain"] == card.route.domain
    assert set(front["why"]) == {*DIMENSIONS, "route"}


def test_code_block_raises_actionability(scorer: Scorer) -> None:
    plain = scorer.score(_item())
    with_code = scorer.score(_item(text=HOW_TO + CODE_BLOCK))
    assert with_code.actionability.value > plain.actionability.value
    assert with_code.actionability.features["code_blocks"] == 1
    assert "code block" in with_code.actionability.reason


def test_advisory_naming_a_fix_is_actionable(scorer: Scorer) -> None:
    text = (
        "A buffer overflow in certificate verification (CVE-2022-3602) affects "
        "versions 3.0.0 to 3.0.6. The issue is fixed in 3.0.7; upgrade to 3.0.7."
    )
    fixed = scorer.score(_item(title="Security advisory for OpenSSL", text=text))
    unfixed = scorer.score(
        _item(
            title="Security advisory for OpenSSL",
            text="A buffer overflow in certificate verification (CVE-2022-3602) was reported.",
        )
    )
    assert fixed.actionability.features["fix_mentions"] >= 1
    assert fixed.actionability.value > unfixed.actionability.value + 0.3
    assert "advisory naming a fix" in fixed.actionability.reason


def test_listicle_and_clickbait_lower_depth(scorer: Scorer) -> None:
    normal = scorer.score(_item())
    listicle = scorer.score(_item(title="10 things you need to know about Kubernetes"))
    clickbait = scorer.score(_item(title="You won't believe this shocking Kubernetes trick"))
    assert listicle.depth.value < normal.depth.value
    assert listicle.depth.features["listicle"] == 1
    assert clickbait.depth.value < normal.depth.value
    assert "clickbait" in clickbait.depth.reason


def test_thin_content_scores_low_depth(scorer: Scorer) -> None:
    thin = scorer.score(_item(text="New version out, check it."))
    assert thin.depth.value < 0.1
    assert "thin" in thin.depth.reason


def test_muted_word_lowers_relevance(scorer: Scorer) -> None:
    clean = scorer.score(_item())
    muted = scorer.score(_item(text="Sponsored. " + HOW_TO))
    assert muted.relevance.value < clean.relevance.value
    assert muted.relevance.features["muted_word_hits"] >= 1
    assert "muted words: sponsored" in muted.relevance.reason


def test_off_profile_item_has_low_relevance(scorer: Scorer) -> None:
    sports = scorer.score(
        _item(
            title="Quarterback leads late drive as playoffs near",
            text="The quarterback threw two touchdowns in the fourth quarter. " * 10,
            url="https://sports.example.com/nfl/recap",
        )
    )
    assert sports.relevance.value < 0.15
    assert not sports.passed


def test_vendor_advisory_site_raises_authority(scorer: Scorer) -> None:
    unknown = scorer.score(_item(url="https://some-blog.example/post"))
    vendor = scorer.score(_item(url="https://github.com/advisories/GHSA-xxxx-yyyy-zzzz"))
    aggregator = scorer.score(_item(url="https://news.ycombinator.com/item?id=1"))
    assert vendor.authority.value > unknown.authority.value > aggregator.authority.value
    assert "vendor advisory" in vendor.authority.reason
    assert "aggregator" in aggregator.authority.reason


def test_source_prior_and_author_move_authority(scorer: Scorer) -> None:
    item = _item(url="https://some-blog.example/post")
    low = scorer.score(item, source_prior=0.1)
    high = scorer.score(item, source_prior=0.9)
    assert high.authority.value > low.authority.value
    assert "your prior" in high.authority.reason
    anonymous = scorer.score(dataclasses.replace(item, author=None))
    assert anonymous.authority.value < scorer.score(item).authority.value
    with pytest.raises(ValueError, match="outside"):
        scorer.score(item, source_prior=1.5)


def test_references_to_primary_sources_raise_depth_and_authority(scorer: Scorer) -> None:
    refs = "\n\nReferences:\n- https://nvd.nist.gov/vuln/detail/CVE-2024-3094\n- https://www.rfc-editor.org/rfc/rfc9000\n"
    plain = scorer.score(_item())
    cited = scorer.score(_item(text=HOW_TO + refs))
    assert cited.depth.features["primary_links"] == 2
    assert cited.depth.value > plain.depth.value
    assert cited.authority.value > plain.authority.value


def test_composite_is_the_weighted_sum_and_threshold_is_strict() -> None:
    item = _item(text=HOW_TO + CODE_BLOCK)
    card = Scorer(ScoringSettings(), None).score(item)
    expected = (
        0.35 * card.relevance.value
        + 0.25 * card.actionability.value
        + 0.25 * card.depth.value
        + 0.15 * card.authority.value
    )
    assert card.composite == pytest.approx(expected, abs=1e-3)
    at = Scorer(ScoringSettings(threshold=card.composite), None).score(item)
    assert not at.passed  # passes only when strictly above the threshold
    below = Scorer(ScoringSettings(threshold=max(card.composite - 0.01, 0.0)), None).score(item)
    assert below.passed


def test_weights_override_changes_composite() -> None:
    item = _item(text=HOW_TO + CODE_BLOCK)
    only_depth = Scorer(
        ScoringSettings(weights=ScoreWeights(relevance=0, actionability=0, depth=1, authority=0)),
        None,
    ).score(item)
    assert only_depth.composite == pytest.approx(only_depth.depth.value, abs=1e-3)
    with pytest.raises(ValidationError, match="above zero"):
        ScoreWeights(relevance=0, actionability=0, depth=0, authority=0)


def test_configured_topic_adds_relevance() -> None:
    item = _item(
        title="Notes on Zig comptime", text="Zig's comptime evaluates code at compile time. " * 8
    )
    default = Scorer(ScoringSettings(), None).score(item)
    zig = Scorer(
        ScoringSettings(topics=(TopicSettings(name="zig", keywords=("zig", "comptime")),)), None
    ).score(item)
    assert zig.relevance.value > default.relevance.value + 0.3
    assert "topic zig" in zig.relevance.reason
    bare = Scorer(ScoringSettings(default_profile=False), None).score(_item())
    assert bare.relevance.value == 0.0


def test_reputation_override_wins_over_shipped_list() -> None:
    item = _item(url="https://news.ycombinator.com/item?id=1")
    shipped = Scorer(ScoringSettings(), None).score(item)
    trusted = Scorer(ScoringSettings(reputation={"news.ycombinator.com": 0.95}), None).score(item)
    assert trusted.authority.value > shipped.authority.value
    assert "your reputation setting" in trusted.authority.reason
    reputation = build_reputation(ScoringSettings(reputation={"example.com/docs": 0.9}))
    assert reputation.lookup("api.example.com", "/docs/intro") == (
        0.9,
        "your reputation setting",
        "example.com/docs",
    )
    assert reputation.lookup("example.com", "/blog") is None


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValidationError, match="unknown domain"):
        ScoringSettings(domains={"cooking": {"keywords": {"soup": 1.0}}})
    with pytest.raises(ValidationError, match=r"0\.\.1"):
        ScoringSettings(reputation={"x.com": 2.0})
    with pytest.raises(ValidationError, match="similarity_range"):
        ScoringSettings(similarity_range=(0.5, 0.1))


def test_same_input_same_card_and_batch_equals_single(scorer: Scorer) -> None:
    items = [_item(), _item(text=HOW_TO + CODE_BLOCK), _item(title="Sponsored giveaway")]
    batch = scorer.score_many(items, priors=[None, 0.8, None])
    again = scorer.score_many(items, priors=[None, 0.8, None])
    singles = [
        scorer.score(items[0]),
        scorer.score(items[1], source_prior=0.8),
        scorer.score(items[2]),
    ]
    assert batch == again == singles
    assert all(isinstance(card, ScoreCard) for card in batch)
    assert scorer.score_many([]) == []
    with pytest.raises(ValueError, match="priors"):
        scorer.score_many(items, priors=[None])


def test_keyword_matcher_whole_words_phrases_and_prefixes() -> None:
    matcher = KeywordMatcher(["claude", "claude code", "vulnerabilit*", "c++", "cve-*", "go 1.*"])
    counts = matcher.count(
        "claude code and claude; vulnerabilities in c++ (cve-2024-3094), go 1.22; claudette"
    )
    assert counts["claude code"] == 1
    assert counts["claude"] == 2  # "claudette" is not a whole-word match
    assert counts["vulnerabilit*"] == 1
    assert counts["c++"] == 1
    assert counts["cve-*"] == 1
    assert counts["go 1.*"] == 1
    assert matcher.count("the c programming language")["c++"] == 0


def test_overrides_from_a_toml_config_file(tmp_path: Path) -> None:
    from signaldesk.pipeline.config import load_config

    path = tmp_path / "signaldesk.toml"
    path.write_text(
        """
[scoring]
threshold = 0.4
weights = { relevance = 0.5, actionability = 0.2, depth = 0.2, authority = 0.1 }
topics = [{ name = "zig", keywords = ["zig", "comptime"], description = "The Zig language" }]
muted_words = ["webinar"]
reputation = { "ziglang.org" = 0.95 }

[scoring.domains.programming]
keywords = { "comptime" = 3.0 }
""",
        encoding="utf-8",
    )
    settings = load_config(path).scoring
    scorer = Scorer(settings, None)
    item = _item(
        title="Zig comptime in depth",
        text="Comptime runs Zig code while compiling. " * 30,
        url="https://ziglang.org/documentation/master/",
    )
    card = scorer.score(item)
    assert "topic zig" in card.relevance.reason
    assert card.route.domain == "programming"
    assert "ziglang.org: your reputation setting" in card.authority.reason
    assert card.passed == (card.composite > 0.4)
    muted = scorer.score(dataclasses.replace(item, text="Join our webinar. " + item.text))
    assert muted.relevance.value < card.relevance.value


def test_missing_data_file_is_a_scoring_error() -> None:
    from signaldesk.scoring import DataFileError, ScoringError
    from signaldesk.scoring.catalogue import load_data_file

    with pytest.raises(DataFileError, match=r"no-such-file\.toml") as info:
        load_data_file("no-such-file.toml")
    assert isinstance(info.value, ScoringError)
    assert info.value.hint == "reinstall signaldesk"


class _BrokenEmbedder:
    """An embedder whose model fails at encode time (a corrupt file, say)."""

    name = "broken"
    dimensions = 4
    fingerprint = "broken"

    def encode(self, texts: object) -> object:
        raise RuntimeError("weights file truncated")


def test_embedder_failure_is_converted() -> None:
    from signaldesk.scoring import EmbeddingFailed

    scorer = Scorer(ScoringSettings(), _BrokenEmbedder())  # type: ignore[arg-type]
    assert not scorer.keyword_only
    with pytest.raises(EmbeddingFailed, match="weights file truncated") as info:
        scorer.score(_item())
    assert isinstance(info.value.__cause__, RuntimeError)


def test_a_clipping_carries_the_intent_of_clipping_it() -> None:
    from signaldesk.items import Item
    from signaldesk.scoring import Scorer, ScoringSettings

    text = "Notes on a gardening weekend with photos of tomatoes and a recipe for soup."
    feed = Item(source_kind="rss", source_id="f", title="Weekend garden", text=text)
    clip = Item(source_kind="clipper", source_id="Clippings", title="Weekend garden", text=text)
    scorer = Scorer(ScoringSettings(), None)
    as_feed, as_clip = scorer.score(feed), scorer.score(clip)
    assert as_clip.relevance.value >= ScoringSettings().clipping_intent > as_feed.relevance.value
    assert "clipped by you" in as_clip.relevance.reason
    assert as_clip.actionability == as_feed.actionability
    off = Scorer(ScoringSettings(clipping_intent=0.0), None).score(clip)
    assert off.relevance.value == as_feed.relevance.value
