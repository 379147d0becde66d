"""Routing to the 12 domain folders: keyword rules, embeddings, fallback, overrides."""

from __future__ import annotations

import pytest

from signaldesk.items import Item
from signaldesk.scoring import FALLBACK_DOMAIN, DomainRuleSettings, Scorer, ScoringSettings
from signaldesk.vault import DOMAINS
from tests.index_helpers import real_embedder

# One real-shaped item per domain folder (title + opening paragraph).
EXAMPLES: dict[str, tuple[str, str]] = {
    "ai-tooling": (
        "Running a coding agent with an MCP server",
        "Claude Code and Cursor can call tools through the Model Context Protocol; "
        "this post wires an MCP server to a local LLM served by Ollama.",
    ),
    "security": (
        "Security advisory: RCE in an image library (CVE-2025-1234)",
        "A remote code execution vulnerability lets an attacker run code; patched in 2.4.1.",
    ),
    "systems": (
        "How io_uring changes syscall overhead in the Linux kernel",
        "Batching system calls through io_uring cut tail latency of our file server.",
    ),
    "programming": (
        "Python 3.13: the free-threaded build and the new REPL",
        "The release removes the GIL in an optional build and improves the type checker story.",
    ),
    "web": (
        "CSS container queries in practice",
        "Container queries let a component respond to its container in the browser; "
        "HTML and CSS examples follow.",
    ),
    "data": (
        "PostgreSQL query planner tips for large tables",
        "Indexes, VACUUM and the SQL query plan explain why the database chose a sequential scan.",
    ),
    "devops": (
        "Zero-downtime deploys with Kubernetes and Helm",
        "Our CI/CD pipeline in GitHub Actions builds a Docker image and rolls it out with Helm.",
    ),
    "design": (
        "Building a design system with design tokens",
        "Typography, colour palettes and WCAG contrast ratios live in one token file for Figma.",
    ),
    "mobile": (
        "Migrating an Android app to Jetpack Compose",
        "Edge-to-edge layouts on Android 15 and SwiftUI on iOS both need window insets.",
    ),
    "career": (
        "Preparing for a staff engineer interview",
        "Hiring loops, promotion packets and career ladders for senior engineers.",
    ),
    "research": (
        "A new benchmark for retrieval: arXiv preprint",
        "We propose a method and report ablation experiments against state-of-the-art baselines.",
    ),
}


def _item(title: str, text: str) -> Item:
    return Item(source_kind="rss", source_id="feed", title=title, text=text)


@pytest.fixture(scope="module")
def scorer() -> Scorer:
    return Scorer(ScoringSettings(), None)


def test_examples_cover_every_domain_but_the_fallback() -> None:
    assert set(EXAMPLES) | {FALLBACK_DOMAIN} == set(DOMAINS)


@pytest.mark.parametrize("domain", sorted(EXAMPLES))
def test_each_domain_is_routed_by_its_keywords(scorer: Scorer, domain: str) -> None:
    title, text = EXAMPLES[domain]
    route = scorer.score(_item(title, text)).route
    assert route.domain == domain, route.reason
    assert route.confidence >= ScoringSettings().route_min_confidence
    assert route.reason.startswith(domain)
    assert route.candidates[0][0] == domain
    assert len(route.candidates) == 3


def test_nothing_confident_goes_to_other(scorer: Scorer) -> None:
    route = scorer.score(
        _item("Spiced honey pear jam", "Simmer the pears with honey and cinnamon for an hour.")
    ).route
    assert route.domain == FALLBACK_DOMAIN
    assert "no domain reached" in route.reason


def test_extra_keywords_route_a_new_term() -> None:
    item = _item("Notes on Sigstore and cosign", "Signing artefacts with sigstore and cosign.")
    assert Scorer(ScoringSettings(), None).score(item).route.domain == FALLBACK_DOMAIN
    settings = ScoringSettings(
        domains={"security": DomainRuleSettings(keywords={"sigstore": 3.0, "cosign": 3.0})}
    )
    route = Scorer(settings, None).score(item).route
    assert route.domain == "security"
    assert "sigstore" in route.reason


def test_replace_drops_the_shipped_keywords() -> None:
    title, text = EXAMPLES["devops"]
    settings = ScoringSettings(
        domains={"devops": DomainRuleSettings(keywords={"mainframe": 3.0}, replace=True)}
    )
    assert Scorer(settings, None).score(_item(title, text)).route.domain != "devops"


def test_min_confidence_is_configurable() -> None:
    title, text = EXAMPLES["web"]
    strict = Scorer(ScoringSettings(route_min_confidence=1.0), None)
    assert strict.score(_item(title, text)).route.domain == FALLBACK_DOMAIN


def test_keyword_only_mode_is_marked_and_deterministic() -> None:
    scorer = Scorer(ScoringSettings(), None)
    assert scorer.keyword_only
    title, text = EXAMPLES["data"]
    first = scorer.score(_item(title, text))
    assert first == Scorer(ScoringSettings(), None).score(_item(title, text))
    assert first.relevance.features["best_topic_similarity"] == 0.0
    assert "similar" not in first.route.reason


def test_a_paper_is_research_whatever_its_topic() -> None:
    # LABELLING.md files papers under research; a paper about LLMs names as many AI-tool
    # keywords as an LLM tool's post would, and is closer to ai-tooling's description.
    scorer = Scorer(ScoringSettings(), real_embedder())
    title = "Holistic evaluation of large language models for code generation"
    abstract = (
        "Abstract. We propose an evaluation of six LLMs, including GPT-4 and Claude, on 944 "
        "problems in five languages. Experiments show that the large language models differ "
        "in correctness and efficiency; we present the failure kinds and a prompt study."
    )
    route = scorer.score(_item(title, abstract)).route
    assert route.domain == "research", route.reason
    assert "shaped like a paper" in route.reason
    # Its reason never names a runner-up with a higher score as merely "next".
    runner_up = route.candidates[1][1]
    if runner_up > route.confidence:
        assert "a paper goes under research before its topic, ahead of" in route.reason
    else:
        assert f"next {route.candidates[1][0]}" in route.reason
    # An "Abstract" heading and one more mark is also a PEP's or a design document's shape:
    # those stay with their topic.
    pep = (
        "Abstract\n\nThis PEP adds a lazy import statement to Python. The evaluation of the "
        "standard library's import time follows; the type checker and the interpreter change."
    )
    assert scorer.score(_item("PEP 9999: Lazy imports", pep)).route.domain == "programming"
    # Without a paper's shape the same topic is an AI tool's.
    post = "Claude Code and GPT-4 as coding agents: an LLM prompt that writes the tests for you."
    assert scorer.score(_item("An LLM that writes tests", post)).route.domain == "ai-tooling"


@pytest.mark.parametrize(
    ("title", "text"),
    [
        (
            "ESLint v9.32.0 released",
            "This release adds a new lint rule and fixes the linter's "
            "handling of JSX in flat config.",
        ),
        (
            "Babel 7.22.0 released",
            "Babel now transpiles decorators and ships polyfills for "
            "ECMAScript 2023 with esbuild-like speed.",
        ),
        ("Vite 6 and the webpack migration", "Moving a bundler config from webpack to Vite."),
    ],
)
def test_the_javascript_toolchain_is_web(scorer: Scorer, title: str, text: str) -> None:
    # LABELLING.md files front-end tooling (Vite) and Node.js under web.
    assert scorer.score(_item(title, text)).route.domain == "web"


def test_a_title_naming_a_security_matter_is_security_whatever_its_ecosystem() -> None:
    # LABELLING.md: what the item is for decides. The ecosystem's words (a registry, a
    # language, its packages) outnumber the security ones in such a notice.
    scorer = Scorer(ScoringSettings(), real_embedder())
    body = (
        "The crates.io team removed two crates published to the Rust package registry. The "
        "crates depended on a build script that downloaded a binary; cargo users who built a "
        "project depending on them should rotate their credentials. The Rust compiler, rustc "
        "and the standard library are not affected."
    )
    notice = scorer.score(_item("crates.io: Malicious crates removed", body)).route
    assert notice.domain == "security", notice.reason
    topic = scorer.score(_item("crates.io: two crates removed", body)).route
    assert topic.domain != "security", topic.reason
    if notice.candidates[1][1] > notice.confidence:
        assert "a title naming a security matter goes under security" in notice.reason
    # A memory leak is no security matter.
    leak = (
        "Finding a memory leak in a Rust service: heaptrack showed the allocator holding "
        "buffers that a cache never released; the fix bounds the cache."
    )
    assert scorer.score(_item("Hunting a memory leak", leak)).route.domain != "security"


def test_routing_blends_the_domain_descriptions_only_when_asked() -> None:
    # By default the rules route alone (route_embedding_share = 0, bench/triage/README.md);
    # a share above 0 adds the embedding's likeness to each domain's description.
    title, text = EXAMPLES["data"]
    plain = Scorer(ScoringSettings(), real_embedder()).score(_item(title, text)).route
    assert "similar to its description" not in plain.reason
    blended = Scorer(ScoringSettings(route_embedding_share=0.3), real_embedder())
    assert "similar to its description" in blended.score(_item(title, text)).route.reason


def test_a_background_job_is_no_career_evidence() -> None:
    text = (
        "Log one line per request or job with its duration. The cron job and the CI jobs "
        "write JSON logs with request ids through Python's logging module."
    )
    route = Scorer(ScoringSettings(), None).score(_item("Structured logging", text)).route
    assert dict(route.candidates).get("career", 0.0) == 0.0, route.candidates
    search = "Advice for a job search: resumes, interviews and salary negotiation."
    assert Scorer(ScoringSettings(), None).score(_item("Job search", search)).route.domain == (
        "career"
    )


def test_a_runner_up_without_evidence_is_not_named() -> None:
    text = "Python asyncio tasks, exceptions and the standard library's logging module."
    route = Scorer(ScoringSettings(), None).score(_item("Python logging", text)).route
    assert route.domain == "programming"
    assert "(0.00)" not in route.reason, route.reason
