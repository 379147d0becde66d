"""Tracking removal: query parameters that identify a click, and pixels that report an open.

The pipeline's URL canonicaliser reuses :func:`strip_tracking_params`, so the same article
reached from a feed, a clipping and a newsletter ends on one URL.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_plus, urlsplit, urlunsplit

__all__ = ["is_tracking_pixel_url", "strip_tracking_params"]

# Exact parameter names (compared lower-cased) that only ever carry campaign or click identity.
_TRACKING_NAMES: frozenset[str] = frozenset(
    {
        "fbclid",
        "gclid",
        "gclsrc",
        "dclid",
        "gbraid",
        "wbraid",
        "msclkid",
        "yclid",
        "igshid",
        "twclid",
        "ttclid",
        "li_fat_id",
        "mc_cid",
        "mc_eid",
        "_hsenc",
        "_hsmi",
        "__hssc",
        "__hstc",
        "__hsfp",
        "hsctatracking",
        "mkt_tok",
        "vero_id",
        "vero_conv",
        "rb_clickid",
        "s_cid",
        "ss_source",
        "ss_campaign_id",
        "ck_subscriber_id",
        "sc_cid",
        "_bta_tid",
        "_bta_c",
        "trk_contact",
        "trk_msg",
        "trk_module",
        "trk_sid",
        "oly_anon_id",
        "oly_enc_id",
        "wickedid",
        "ml_subscriber",
        "ml_subscriber_hash",
        "cmpid",
        "spm",
        "ref_src",
        "ref_url",
        "_openstat",
        "srsltid",
        "si",  # Spotify/YouTube share id; harmless to drop, never selects content there.
    }
)

# Parameter-name prefixes: utm_source, utm_medium, ..., oly_*, pk_* (Matomo), mtm_*, hsa_*.
_TRACKING_PREFIXES: tuple[str, ...] = ("utm_", "oly_", "pk_", "mtm_", "hsa_", "matomo_", "_ga")

# `ref` selects content on some sites (GitHub `?ref=branch`), so it is dropped only where its
# value looks like a referrer tag (a site or newsletter name) and the host is not a code host.
_REF_KEEP_HOSTS: tuple[str, ...] = ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org")
_REF_VALUE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,60}$", re.IGNORECASE)

# Host-specific subscriber ids: Mailchimp's hosted-archive links carry the reader in `e`.
_HOST_PARAMS: tuple[tuple[str, frozenset[str]], ...] = (
    ("mailchi.mp", frozenset({"e"})),
    ("us1.campaign-archive.com", frozenset({"e"})),
    ("campaign-archive.com", frozenset({"e"})),
    ("substack.com", frozenset({"r", "s", "publication_id", "post_id", "isfreemail", "token"})),
)

# Open-tracking endpoints of common e-mail services, matched against the whole image URL.
_PIXEL_URL = re.compile(
    r"""(
        /track/open | /trk/open | /open\.php | /open\.aspx | /wf/open | /e/o/ | /e/open
      | /tracking/open | /openrate | /pixel(?:\.gif|\.png|/|\?) | /beacon | /email/open
      | [./]pixel\. | eotrx\.substackcdn\.com
      | google-analytics\.com/collect | doubleclick\.net | /imp\?
      | list-manage\.com/track | mandrillapp\.com/track | sendgrid\.net/wf
      | mailstat\.us | mltrk\.io | emltrk\.com | getnotify\.com | bananatag\.com
      | mailtrack\.io | yesware\.com/t | sidekickopen | t\.sidekick | hubspotlinks\.com/.*/open
    )""",
    re.IGNORECASE | re.VERBOSE,
)


def _is_tracking_param(name: str, value: str, host: str) -> bool:
    lowered = name.lower()
    if lowered in _TRACKING_NAMES or lowered.startswith(_TRACKING_PREFIXES):
        return True
    if lowered == "ref":
        return not host.endswith(_REF_KEEP_HOSTS) and bool(_REF_VALUE.match(value))
    for suffix, names in _HOST_PARAMS:
        if (host == suffix or host.endswith("." + suffix)) and lowered in names:
            return True
    return False


def strip_tracking_params(url: str) -> str:
    """Return ``url`` without click-tracking query parameters; everything else is kept as is.

    Covers ``utm_*``, ``fbclid``, ``gclid``, ``mc_cid``/``mc_eid``, HubSpot ``_hsenc``/``_hsmi``,
    Marketo ``mkt_tok``, ``vero_id``, ``oly_*``, ``rb_clickid``, ``s_cid``, ``igshid``, ``yclid``,
    ``msclkid`` and more; ``ref`` only where it is a plain referrer tag on a non-code host; and
    Mailchimp's/Substack's subscriber ids on their own hosts. Parameter order and the fragment
    are preserved (canonicalising those is the caller's choice). A string that is not an
    http(s) URL comes back unchanged.
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url
    if parts.scheme.lower() not in ("http", "https") or not parts.query:
        return url.strip()
    host = (parts.hostname or "").lower()
    # Work on the raw `name=value` segments so kept parameters keep their exact encoding:
    # a URL must canonicalise to the same string whether or not it carried tracking.
    segments = parts.query.split("&")
    kept = []
    for segment in segments:
        name, _, value = segment.partition("=")
        if segment and _is_tracking_param(unquote_plus(name), unquote_plus(value), host):
            continue
        kept.append(segment)
    if len(kept) == len(segments):
        return url.strip()
    return urlunsplit(parts._replace(query="&".join(s for s in kept if s)))


def is_tracking_pixel_url(url: str) -> bool:
    """True when ``url`` points at a known open-tracking endpoint (an e-mail "pixel")."""
    return bool(_PIXEL_URL.search(url))
