"""Authority: how far the item's source can be trusted.

The source's standing comes first: the prior the user set for the feed, sender or
site when the caller passes one, else the reputation list (shipped defaults
overridden by the config) looked up by the item's URL, else a neutral default.
Aggregators (Hacker News, Reddit, Medium, ...) sit low on the shipped list, primary
sources high. A named author and references to primary sources add to it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from signaldesk.scoring._calc import clamp
from signaldesk.scoring.catalogue import Reputation
from signaldesk.scoring.records import DimensionScore
from signaldesk.scoring.text import TextView

__all__ = ["AuthorityModel"]

_SOURCE_SHARE = 0.7
_AUTHOR_SHARE = 0.12
_REFERENCE_SHARE = 0.18
# A linked host at or above this reputation counts as a primary source.
PRIMARY_SOURCE_REPUTATION = 0.7


class AuthorityModel:
    """Scores the source of items against one :class:`~scoring.catalogue.Reputation`."""

    def __init__(self, reputation: Reputation) -> None:
        self.reputation = reputation

    def is_primary(self, host: str) -> bool:
        """Whether ``host`` is a primary source (its reputation is high, it is no aggregator)."""
        found = self.reputation.lookup(host)
        return found is not None and found[0] >= PRIMARY_SOURCE_REPUTATION

    def site(self, url: str | None, site_name: str | None) -> tuple[float, str]:
        """The reputation of the item's site and a few words saying where it came from."""
        if url:
            try:
                parts = urlsplit(url.strip())
                host = (parts.hostname or "").removeprefix("www.")
                path = parts.path
            except ValueError:
                host, path = "", ""
            found = self.reputation.lookup(host, path)
            if found is not None:
                return found[0], f"{found[2]}: {found[1]}"
        if site_name:
            # A feed's title or a newsletter's sender sometimes names the site
            # ("heise.de", "GitHub Blog") when the URL is a redirect or missing.
            key = site_name.strip().lower().removeprefix("www.")
            found = self.reputation.lookup(key) if "." in key else None
            if found is not None:
                return found[0], f"{found[2]}: {found[1]}"
        return self.reputation.unknown, "unknown site"

    def score(
        self,
        view: TextView,
        *,
        url: str | None,
        site_name: str | None,
        author: str | None,
        prior: float | None,
    ) -> DimensionScore:
        """Authority of one item; ``prior`` is the user's own prior for its source, 0..1."""
        site_value, site_reason = self.site(url, site_name)
        if prior is not None:
            source, source_reason = prior, f"your prior for this source {prior:.2f}"
        else:
            source, source_reason = site_value, f"{site_reason} {site_value:.2f}"
        primary = {host for host in view.links if host != view.url_host and self.is_primary(host)}
        has_author = bool(author and author.strip())
        references = min(len(primary), 3) / 3 * 0.8 + (0.2 if view.citations >= 2 else 0.0)
        value = (
            _SOURCE_SHARE * source
            + _AUTHOR_SHARE * has_author
            + _REFERENCE_SHARE * clamp(references)
        )
        reasons = [source_reason, "author named" if has_author else "no author"]
        if primary:
            reasons.append(f"cites {len(primary)} primary source(s)")
        if view.citations >= 2:
            reasons.append(f"{view.citations} citations")
        return DimensionScore(
            value=round(clamp(value), 4),
            reason="; ".join(reasons),
            features={
                "source": round(source, 4),
                "site_reputation": round(site_value, 4),
                "source_prior": -1.0 if prior is None else round(prior, 4),
                "author": float(has_author),
                "primary_links": float(len(primary)),
                "citations": float(view.citations),
            },
        )
