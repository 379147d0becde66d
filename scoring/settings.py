"""Settings for scoring and routing (the `[scoring]` TOML section).

The long default lists (the interest profile, the site reputation list, the domain
keyword rules) ship as data files in ``scoring/data/``; the settings here only
extend or override them, so that the generated default config stays short.
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from signaldesk.settings import SettingsModel
from signaldesk.vault import DOMAINS

__all__ = [
    "DomainRuleSettings",
    "ScoreCalibration",
    "ScoreWeights",
    "ScoringSettings",
    "TopicSettings",
]


class TopicSettings(SettingsModel):
    """One interest (or muted) topic: the words that name it and a sentence that describes it."""

    name: str = Field(min_length=1, description="Short name shown in the reasons.")
    keywords: tuple[str, ...] = Field(
        (),
        description=(
            "Words and phrases that mark the topic (case-insensitive, whole words; "
            "a trailing `*` matches any ending, e.g. `vulnerabilit*`)."
        ),
    )
    description: str = Field(
        "", description="One or two sentences about the topic, compared with items by embedding."
    )
    weight: float = Field(
        1.0, ge=0.0, le=1.0, description="How much a perfect match with this topic counts."
    )


class DomainRuleSettings(SettingsModel):
    """Extra routing rules for one domain folder."""

    keywords: dict[str, float] = Field(
        default_factory=dict,
        description="Keyword or phrase -> weight (a negative weight pulls items away).",
    )
    description: str | None = Field(
        None, description="Replaces the shipped description used for routing by embedding."
    )
    replace: bool = Field(
        False, description="Drop the shipped keywords of this domain instead of extending them."
    )


class ScoreWeights(SettingsModel):
    """Weights of the four dimensions in the composite (divided by their sum)."""

    relevance: float = Field(0.35, ge=0.0, description="Weight of relevance.")
    actionability: float = Field(0.25, ge=0.0, description="Weight of actionability.")
    depth: float = Field(0.25, ge=0.0, description="Weight of depth.")
    authority: float = Field(0.15, ge=0.0, description="Weight of authority.")

    @model_validator(mode="after")
    def _not_all_zero(self) -> ScoreWeights:
        if self.relevance + self.actionability + self.depth + self.authority <= 0:
            raise ValueError("at least one scoring weight must be above zero")
        return self


_SCALE = (
    " is multiplied by before the weights combine the four (value = min(1, scale x measured); "
    "1.0 keeps it as measured, 0 stays 0)."
)


class ScoreCalibration(SettingsModel):
    """How much each measured score is stretched or shrunk before the composite weighs it.

    The defaults were fitted by ``python -m bench.triage.calibrate`` on the tuning halves of
    the labelled triage sets (bench/triage/README.md), so that "composite > threshold"
    under the default weights is the curator's line. A scale keeps a score's order and its
    zero: what measured nothing still reads 0, and a higher measure never scores lower.
    """

    relevance: float = Field(1.256, gt=0, le=4, description="What relevance" + _SCALE)
    actionability: float = Field(1.242, gt=0, le=4, description="What actionability" + _SCALE)
    depth: float = Field(1.137, gt=0, le=4, description="What depth" + _SCALE)
    authority: float = Field(1.0, gt=0, le=4, description="What authority" + _SCALE)

    def apply(self, name: str, measured: float) -> float:
        """The calibrated value of the score ``name`` (one of the four dimensions)."""
        scale: float = getattr(self, name)
        return min(1.0, scale * measured)


class ScoringSettings(SettingsModel):
    """The four scores, the composite, the filing threshold and domain routing."""

    threshold: float = Field(
        0.55,
        ge=0,
        le=1,
        description="Items whose composite score is above this are filed.",
    )
    weights: ScoreWeights = Field(
        default_factory=ScoreWeights,
        description=(
            "Weights of relevance, actionability, depth and authority in the composite "
            "(divided by their sum, so the composite stays in 0..1)."
        ),
    )
    calibration: ScoreCalibration = Field(
        default_factory=ScoreCalibration,
        description=(
            "How each measured score is mapped before the weights combine them (fitted on "
            "labelled real items; see bench/triage/README.md)."
        ),
    )
    resemblance: bool = Field(
        True,
        description=(
            "Move depth by how much an item's opening reads like the articles curators keep "
            "or reject (a direction fitted on labelled real articles, scoring/data/"
            "resemblance.toml; only with the bundled embedding model)."
        ),
    )
    default_profile: bool = Field(
        True,
        description=(
            "Start from the developer/researcher interest profile shipped in "
            "scoring/data/profile.toml; `topics` and `muted_*` extend it."
        ),
    )
    topics: tuple[TopicSettings, ...] = Field(
        (),
        description=(
            'Interest topics, e.g. [{ name = "rust", keywords = ["rust", "cargo"], '
            'description = "The Rust language" }]; one named like a shipped topic replaces it.'
        ),
    )
    muted_words: tuple[str, ...] = Field(
        (), description="Words and phrases that pull relevance down (added to the shipped ones)."
    )
    muted_topics: tuple[TopicSettings, ...] = Field(
        (), description="Topics that pull relevance down (same shape as `topics`)."
    )
    default_reputation: bool = Field(
        True,
        description=(
            "Use the site reputation list shipped in scoring/data/reputation.toml (official "
            "docs, standards bodies, vendor advisories, papers, aggregators)."
        ),
    )
    reputation: dict[str, float] = Field(
        default_factory=dict,
        description=(
            'Site reputation 0..1 by host or host/path prefix, e.g. { "example.com" = 0.9 }; '
            "overrides the shipped list."
        ),
    )
    unknown_site_reputation: float = Field(
        0.45, ge=0.0, le=1.0, description="Reputation of a site that no list and no prior names."
    )
    default_domains: bool = Field(
        True,
        description="Use the domain keyword rules shipped in scoring/data/domains.toml.",
    )
    domains: dict[str, DomainRuleSettings] = Field(
        default_factory=dict,
        description=(
            'Routing rules by domain, e.g. { security = { keywords = { "sigstore" = 2.0 } } }; '
            "extends the shipped rules."
        ),
    )
    route_min_confidence: float = Field(
        0.3,
        ge=0.0,
        le=1.0,
        description="Below this routing confidence an item goes to `other`.",
    )
    embedding_share: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description=(
            "How much a perfect embedding match with a topic description alone counts in "
            "relevance (keyword hits add to it); ignored when no embedder is given."
        ),
    )
    # 0 since stop 35: with the bundled model, every share above 0 routed fewer of the
    # tuning halves' keepers to the curator's domain (240 of 307 at 0.3, 255 at 0; 0.15:
    # 251); the domain rules say more than a small model's likeness to a one-line
    # description. bench/triage/README.md has the sweep and the held-out figures.
    route_embedding_share: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description=(
            "Share of embedding similarity to the domain descriptions (versus keyword rules) "
            "in routing; 0 routes by the rules alone; ignored when no embedder is given."
        ),
    )
    similarity_range: tuple[float, float] = Field(
        (0.08, 0.22),
        description=(
            "Centred cosine similarities (an anchor's cosine minus the item's mean cosine "
            "to its group) mapped to 0 and 1; depends on the embedding model."
        ),
    )
    clipping_intent: float = Field(
        0.4,
        ge=0.0,
        le=1.0,
        description=(
            "Relevance evidence carried by the act of clipping a page: a Web Clipper note's "
            "relevance is combined with this (noisy-or). 0 treats clippings like any item."
        ),
    )
    max_chars: int = Field(
        8_000,
        ge=500,
        description="Characters of an item's text analysed (the word count reads all of it).",
    )

    @field_validator("domains")
    @classmethod
    def _known_domains(cls, value: dict[str, DomainRuleSettings]) -> dict[str, DomainRuleSettings]:
        unknown = sorted(set(value) - set(DOMAINS))
        if unknown:
            raise ValueError(f"unknown domain(s) {unknown}; known: {', '.join(DOMAINS)}")
        return value

    @field_validator("reputation")
    @classmethod
    def _reputation_range(cls, value: dict[str, float]) -> dict[str, float]:
        bad = sorted(site for site, score in value.items() if not 0.0 <= score <= 1.0)
        if bad:
            raise ValueError(f"reputation must be within 0..1 (check {bad})")
        return value

    @field_validator("similarity_range")
    @classmethod
    def _ordered_range(cls, value: tuple[float, float]) -> tuple[float, float]:
        if not -1.0 <= value[0] < value[1] <= 1.0:
            raise ValueError("similarity_range must be two cosines, low < high, within -1..1")
        return value
