"""The shipped default lists (``scoring/data/*.toml``) merged with the user's settings.

Three catalogues: the interest profile (topics, muted words, muted topics), the
site reputation list and the domain routing rules. Each is built once per
:class:`~scoring.scorer.Scorer` from :class:`~scoring.settings.ScoringSettings`;
the config only extends or overrides what ships, so the default config file
stays short and a newer signaldesk's better lists reach users who never edited them.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from pydantic import ValidationError

from signaldesk.scoring.errors import DataFileError
from signaldesk.scoring.keywords import normalise_term
from signaldesk.scoring.settings import ScoringSettings, TopicSettings
from signaldesk.vault import DOMAINS

__all__ = [
    "DomainRule",
    "Profile",
    "Reputation",
    "build_domain_rules",
    "build_profile",
    "build_reputation",
    "load_data_file",
]


def load_data_file(name: str) -> dict[str, Any]:
    """Parse ``scoring/data/<name>`` (TOML).

    :raises DataFileError: the file is missing or is not valid TOML (a broken install).
    """
    try:
        data = resources.files("signaldesk.scoring").joinpath("data", name)
        text = data.read_text(encoding="utf-8")
        return tomllib.loads(text)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise DataFileError(
            f"shipped scoring data file {name} cannot be read: {exc}",
            hint="reinstall signaldesk",
        ) from exc


@dataclass(frozen=True, slots=True)
class Profile:
    """The interest profile in force: what pulls relevance up and what pulls it down."""

    topics: tuple[TopicSettings, ...]
    muted_words: tuple[str, ...]
    muted_topics: tuple[TopicSettings, ...]


def _topics(raw: object, where: str) -> list[TopicSettings]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise DataFileError(
            f"{where}: topics must be an array of tables", hint="reinstall signaldesk"
        )
    try:
        return [TopicSettings.model_validate(entry) for entry in raw]
    except ValidationError as exc:
        raise DataFileError(
            f"invalid topic in {where}: {exc}", hint="reinstall signaldesk"
        ) from exc


def _merge_topics(
    shipped: list[TopicSettings], configured: tuple[TopicSettings, ...]
) -> tuple[TopicSettings, ...]:
    merged = {topic.name.lower(): topic for topic in shipped}
    for topic in configured:
        merged[topic.name.lower()] = topic
    return tuple(merged.values())


def build_profile(settings: ScoringSettings) -> Profile:
    """The shipped profile (unless ``default_profile`` is off) extended by the config."""
    data = load_data_file("profile.toml") if settings.default_profile else {}
    muted = [*data.get("muted_words", []), *settings.muted_words]
    return Profile(
        topics=_merge_topics(_topics(data.get("topics"), "profile.toml"), settings.topics),
        muted_words=tuple(dict.fromkeys(normalise_term(w) for w in muted if w.strip())),
        muted_topics=_merge_topics(
            _topics(data.get("muted_topics"), "profile.toml"), settings.muted_topics
        ),
    )


@dataclass(frozen=True, slots=True)
class Reputation:
    """Site reputations by host or ``host/path`` prefix, each with the list it came from."""

    entries: dict[str, tuple[float, str]]
    unknown: float

    def lookup(self, host: str, path: str = "") -> tuple[float, str, str] | None:
        """``(score, kind, matched entry)`` for the longest entry covering ``host``+``path``.

        ``example.com`` covers ``example.com`` and every subdomain; ``example.com/a``
        covers paths under ``/a`` on those hosts.
        """
        if not host:
            return None
        labels = host.split(".")
        best: tuple[float, str, str] | None = None
        best_len = -1
        for i in range(len(labels) - 1):
            suffix = ".".join(labels[i:])
            candidates = [suffix]
            segments = [s for s in path.split("/") if s]
            candidates.extend(
                f"{suffix}/{'/'.join(segments[:n])}" for n in range(1, min(len(segments), 3) + 1)
            )
            for key in candidates:
                found = self.entries.get(key)
                if found is not None and len(key) > best_len:
                    best, best_len = (found[0], found[1], key), len(key)
        return best


def build_reputation(settings: ScoringSettings) -> Reputation:
    """The shipped reputation list (unless ``default_reputation`` is off) plus the config's."""
    entries: dict[str, tuple[float, str]] = {}
    if settings.default_reputation:
        for kind, table in load_data_file("reputation.toml").items():
            if not isinstance(table, dict):
                raise DataFileError(f"reputation.toml: [{kind}] must be a table")
            for site, score in table.items():
                entries[site.lower().removeprefix("www.")] = (float(score), kind.replace("_", " "))
    for site, score in settings.reputation.items():
        entries[site.lower().removeprefix("www.").rstrip("/")] = (score, "your reputation setting")
    return Reputation(entries=entries, unknown=settings.unknown_site_reputation)


@dataclass(frozen=True, slots=True)
class DomainRule:
    """How to recognise one domain: weighted keywords and a description to embed."""

    domain: str
    keywords: dict[str, float]
    description: str


def build_domain_rules(settings: ScoringSettings) -> tuple[DomainRule, ...]:
    """One rule per domain except ``other`` (the fallback), shipped rules extended by the config."""
    shipped = load_data_file("domains.toml") if settings.default_domains else {}
    unknown = sorted(set(shipped) - set(DOMAINS))
    if unknown:
        raise DataFileError(f"domains.toml names unknown domains {unknown}")
    rules: list[DomainRule] = []
    for domain in DOMAINS:
        if domain == "other":
            continue
        base = shipped.get(domain, {})
        configured = settings.domains.get(domain)
        keywords: dict[str, float] = {}
        if not (configured and configured.replace):
            keywords.update(
                {normalise_term(k): float(v) for k, v in base.get("keywords", {}).items()}
            )
        description = str(base.get("description", ""))
        if configured is not None:
            keywords.update({normalise_term(k): v for k, v in configured.keywords.items()})
            if configured.description is not None:
                description = configured.description
        rules.append(DomainRule(domain=domain, keywords=keywords, description=description))
    return tuple(rules)
