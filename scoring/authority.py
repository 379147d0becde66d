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
from signaldesk.scoring.text import TextView, host_of

__all__ = ["AuthorityModel"]

_SOURCE_SHARE = 0.7
_AUTHOR_SHARE = 0.12
_REFERENCE_SHARE = 0.18
# A linked host at or above this reputation counts as a primary source.
PRIMARY_SOURCE_REPUTATION = 0.7


# Hosts no list names that still say what they are.
_INSTITUTION_SUFFIXES = (".gov", ".gov.uk", ".edu", ".ac.uk", ".mil", ".europa.eu", ".gouv.fr")
_DOCS_PREFIXES = ("docs.", "doc.", "developer.", "developers.", "dev.", "learn.", "api.")
_INSTITUTION = 0.8
_DOCS_SITE = 0.75
# A paper, on whatever host, is its authors' primary account of their work.
_PAPER_SOURCE = 0.7


def _by_shape_of_host(host: str, unknown: float) -> tuple[float, str]:
    if host.endswith(_INSTITUTION_SUFFIXES):
        return _INSTITUTION, f"public institution: {host}"
    if host.startswith(_DOCS_PREFIXES):
        return _DOCS_SITE, f"documentation site: {host}"
    return unknown, "unknown site"


class AuthorityModel:
    """Scores the source of items against one :class:`~scoring.catalogue.Reputation`."""

    def __init__(self, reputation: Reputation) -> None:
        self.reputation = reputation

    def is_primary(self, host: str) -> bool:
        """Whether ``host`` is a primary source (its reputation is high, it is no aggregator)."""
        found = self.reputation.lookup(host)
        return found is not None and found[0] >= PRIMARY_SOURCE_REPUTATION

    def site(
        self, url: str | None, site_name: str | None, feed_url: str | None = None
    ) -> tuple[float, str]:
        """The reputation of the item's site and a few words saying where it came from.

        :param feed_url: the feed the item came from: when the item's own link names no
            known site (a feed-proxy redirect, a link shortener), the feed's host does.
        """
        for candidate in (url, feed_url):
            found = self._lookup_url(candidate)
            if found is not None:
                return found
        if site_name:
            # A feed's title or a newsletter's sender sometimes names the site
            # ("heise.de", "GitHub Blog") when the URL is a redirect or missing.
            key = site_name.strip().lower().removeprefix("www.")
            named = self.reputation.lookup(key) if "." in key else None
            if named is not None:
                return named[0], f"{named[2]}: {named[1]}"
        return _by_shape_of_host(host_of(url), self.reputation.unknown)

    def _lookup_url(self, url: str | None) -> tuple[float, str] | None:
        if not url:
            return None
        try:
            parts = urlsplit(url.strip())
            host = (parts.hostname or "").removeprefix("www.")
            path = parts.path
        except ValueError:
            return None
        found = self.reputation.lookup(host, path)
        return None if found is None else (found[0], f"{found[2]}: {found[1]}")

    def score(
        self,
        view: TextView,
        *,
        url: str | None,
        site_name: str | None,
        author: str | None,
        prior: float | None,
        feed_url: str | None = None,
    ) -> DimensionScore:
        """Authority of one item; ``prior`` is the user's own prior for its source, 0..1."""
        site_value, site_reason = self.site(url, site_name, feed_url)
        if view.prose.paper_shaped and site_value < _PAPER_SOURCE:
            site_value, site_reason = _PAPER_SOURCE, "a paper (its authors' own account)"
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
