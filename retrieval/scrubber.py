"""Credential scrubbing: secrets in note text are replaced before anything is embedded or stored.

:func:`scrub` replaces each secret it recognises with ``[REDACTED:<pattern-name>]``
and reports how many of each pattern it found — never the values, and neither
does the log.

Two kinds of pattern, tried in this order (when two matches overlap, the earlier
pattern wins, so a GitHub token after ``token:`` counts as ``github-pat`` and
not as a generic secret):

- Vendor formats, from each vendor's documented prefix, length and alphabet
  (AWS, Google Cloud, Azure, GitHub, GitLab, Slack, Stripe, OpenAI, ...). Exact
  lengths and word boundaries keep near misses (a prefix in prose, a value one
  character short) unredacted.
- Generic shapes: private key blocks, JWTs (the header must decode to JSON),
  passwords in connection strings and URLs (only the password is replaced, so
  the host stays searchable), ``Authorization`` headers, and ``password=`` /
  ``api_key: "..."`` / ``SECRET_TOKEN=...`` assignments whose value looks like a
  secret. An assignment's value must be the whole rest of the line (or quoted)
  and pass a charset and entropy check, so prose such as "password: see the
  vault" or "the token is passed to the function" is left alone.

Speed: scrub runs on every chunk. Each pattern has literal keywords; a pattern's
regex runs only when one of its keywords occurs in the text, which skips most
patterns for most chunks.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["PATTERN_NAMES", "ScrubResult", "scrub"]

logger = logging.getLogger(__name__)

REDACTION_TEMPLATE = "[REDACTED:{name}]"


@dataclass(frozen=True, slots=True)
class ScrubResult:
    """The scrubbed text and how many secrets of each pattern were replaced."""

    text: str
    findings: dict[str, int]
    """Pattern name -> number of replacements. Never the values."""

    @property
    def redacted(self) -> int:
        """Total number of replacements."""
        return sum(self.findings.values())


_Validator = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class _Pattern:
    name: str
    regex: re.Pattern[str]
    keywords: tuple[str, ...]
    """Literals, one of which must occur for the regex to run (empty: always run)."""
    fold_keywords: bool = False
    """Look the keywords up in the lower-cased text (for case-insensitive patterns)."""
    validate: _Validator | None = None
    """Extra check on the secret; False keeps the match unredacted."""
    gate: re.Pattern[str] | None = None
    """A cheap regex that must find something before the real one runs."""
    rare: str = ""
    """A character every keyword contains and prose seldom does ("_", "$"), checked first."""
    lowered_regex: re.Pattern[str] | None = None
    """The same pattern, case-sensitive, to run on the lower-cased text."""


# Boundaries: a token must not be glued to more token characters on either side,
# so "ghp_" + 37 characters (not a GitHub format) is not cut down to a match.
_L = r"(?<![A-Za-z0-9_\-])"
_R = r"(?![A-Za-z0-9_\-])"
_R_ALNUM = r"(?![A-Za-z0-9])"


_RARE_CHARS = "_$~"


def _p(
    name: str,
    pattern: str,
    keywords: tuple[str, ...],
    *,
    fold: bool = False,
    validate: _Validator | None = None,
    gate: str | None = None,
    lowered: bool = False,
) -> _Pattern:
    """Compile a pattern; ``lowered`` ones are written in lower case and match any case."""
    rare = next((c for c in _RARE_CHARS if keywords and all(c in k for k in keywords)), "")
    return _Pattern(
        name,
        re.compile(pattern, re.IGNORECASE if lowered else 0),
        keywords,
        fold or lowered,
        validate,
        re.compile(gate) if gate is not None else None,
        rare,
        re.compile(pattern) if lowered else None,
    )


# --- validators -------------------------------------------------------------------------


def _b64decode(segment: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        return None


def _discord_bot_token(token: str) -> bool:
    # The first segment is the bot's user id (a decimal snowflake) in base64.
    decoded = _b64decode(token.split(".", 1)[0])
    return decoded is not None and decoded.isdigit() and 15 <= len(decoded) <= 21


def _jwt(token: str) -> bool:
    decoded = _b64decode(token.split(".", 1)[0])
    if decoded is None:
        return False
    try:
        header = json.loads(decoded)
    except ValueError:  # not JSON, or not UTF-8
        return False
    return isinstance(header, dict) and ("alg" in header or "typ" in header)


def _basic_credentials(value: str) -> bool:
    decoded = _b64decode(value.replace("+", "-").replace("/", "_").rstrip("="))
    if decoded is None:
        return False
    try:
        text = decoded.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return ":" in text and text.isprintable()


def _shannon_entropy(value: str) -> float:
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _char_classes(value: str) -> int:
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
    )


_PLACEHOLDER = re.compile(
    r"""^(?:
        [$%@]\{?[\w.]+\}?%?        # $VAR ${VAR} %VAR% @VAR@
      | \{\{.*\}\}                  # {{ template }}
      | <[^>]*>                     # <your-token>
      | \[REDACTED:[\w-]+\]         # already scrubbed
      | (.)\1+                      # xxxxxxxx ********
    )$""",
    re.VERBOSE,
)
_PLACEHOLDER_WORDS = ("example", "your", "placeholder", "changeme", "dummy", "sample", "redacted")
# `config.password`, `os.environ`, `get_token()`: code that names a secret, not a secret.
_CODE_REFERENCE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*(?:\(.*\))?$")


def _is_placeholder(value: str) -> bool:
    lowered = value.lower()
    return bool(_PLACEHOLDER.match(value)) or any(w in lowered for w in _PLACEHOLDER_WORDS)


def _looks_like_password(value: str) -> bool:
    # People pick passwords, so entropy is low; require some mix (hunter2, S3cure!)
    # and reject plain words ("required", "optional") and code references.
    if len(value) < 6 or _is_placeholder(value):
        return False
    if " " in value:
        return len(value) >= 12 and _char_classes(value) >= 2
    if "." in value and _CODE_REFERENCE.match(value):
        return False
    if value.isidentifier() and value.islower():
        return False
    return _char_classes(value) >= 2 or (len(value) >= 12 and _shannon_entropy(value) >= 3.5)


def _looks_like_token(value: str) -> bool:
    # Machine-made secrets: long, mixed, random-looking.
    if len(value) < 16 or " " in value or _is_placeholder(value):
        return False
    if _CODE_REFERENCE.match(value) and not any(c.isdigit() for c in value):
        return False
    return _char_classes(value) >= 2 and _shannon_entropy(value) >= 3.0


def _not_placeholder(value: str) -> bool:
    return not _is_placeholder(value) and len(value) >= 3


def _high_entropy_bearer(value: str) -> bool:
    return _char_classes(value) >= 2 and _shannon_entropy(value) >= 3.0


# --- patterns ------------------------------------------------------------------------------

# Vendor formats. Sources: each vendor's token-format documentation; lengths are the
# documented ones (where a vendor documents none, the observed fixed length).
_VENDOR: tuple[_Pattern, ...] = (
    # AWS: 20 characters, a 4-letter type prefix and 16 base32 characters.
    _p(
        "aws-access-key-id",
        _L + r"(?P<secret>(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16})" + _R_ALNUM,
        (),
        gate=r"A(?:KIA|SIA|BIA|CCA|3T)",
    ),
    # AWS secret access key: 40 base64 characters; only recognisable by its name.
    _p(
        "aws-secret-access-key",
        r"(?i)(?:aws_?)?secret_?access_?key[\"']?\s*(?:=|:|=>)\s*[\"']?"
        r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        ("secret_access_key", "secretaccesskey", "secret_accesskey"),
        fold=True,
    ),
    # Google API key: "AIza" + 35 URL-safe characters.
    _p("gcp-api-key", _L + r"(?P<secret>AIza[A-Za-z0-9_\-]{35})" + _R, ("AIza",)),
    # Service-account JSON: the PEM private key as a JSON string with \n escapes.
    _p(
        "gcp-service-account-key",
        r"\"private_key\"\s*:\s*\"(?P<secret>-----BEGIN (?:RSA )?PRIVATE KEY-----"
        r"[A-Za-z0-9+/=\\\s]{64,}?-----END (?:RSA )?PRIVATE KEY-----(?:\\n)?)\"",
        ('"private_key"',),
    ),
    # Google OAuth client secret (GOCSPX-) and access token (ya29.).
    _p(
        "google-oauth-client-secret",
        _L + r"(?P<secret>GOCSPX-[A-Za-z0-9_\-]{28})" + _R,
        ("GOCSPX-",),
    ),
    _p(
        "google-oauth-access-token",
        _L + r"(?P<secret>ya29\.[A-Za-z0-9_\-]{30,})" + _R,
        ("ya29.",),
    ),
    # Azure storage account key: 64 bytes -> 88 base64 characters ending "==".
    _p(
        "azure-storage-key",
        r"(?i)AccountKey\s*=\s*(?P<secret>[A-Za-z0-9+/]{86}==)",
        ("accountkey",),
        fold=True,
    ),
    # Service Bus / Event Hubs / IoT Hub shared access key: 32 bytes -> 44 base64.
    _p(
        "azure-shared-access-key",
        r"(?i)SharedAccessKey\s*=\s*(?P<secret>[A-Za-z0-9+/]{43}=)",
        ("sharedaccesskey",),
        fold=True,
    ),
    # SAS token signature in a URL query: sig=<url-encoded base64 HMAC-SHA256>.
    _p(
        "azure-sas-signature",
        r"[?&]sig=(?P<secret>(?:[A-Za-z0-9]|%2[BbFf]|%3[Dd]){43,}(?:%3[Dd]|=)?)",
        ("sig=",),
    ),
    # Entra ID (Azure AD) client secret: 3 chars, a digit, "Q~", 31-34 chars.
    _p(
        "azure-ad-client-secret",
        r"(?<![A-Za-z0-9_~.\-])(?P<secret>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34})"
        r"(?![A-Za-z0-9_~.\-])",
        ("Q~",),
    ),
    # GitHub: prefix + 36 base62 (classic PAT, OAuth, app user/server, refresh).
    _p("github-pat", _L + r"(?P<secret>ghp_[A-Za-z0-9]{36})" + _R, ("ghp_",)),
    _p(
        "github-fine-grained-pat",
        _L + r"(?P<secret>github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})" + _R,
        ("github_pat_",),
    ),
    _p("github-oauth-token", _L + r"(?P<secret>gho_[A-Za-z0-9]{36})" + _R, ("gho_",)),
    _p(
        "github-app-token",
        _L + r"(?P<secret>(?:ghu|ghs|ghr)_[A-Za-z0-9]{36})" + _R,
        ("ghu_", "ghs_", "ghr_"),
    ),
    # GitLab: typed prefixes + 20 characters (routable tokens are longer, with a dot),
    # and runner registration tokens.
    _p(
        "gitlab-token",
        _L + r"(?P<secret>(?:glpat|gldt|glrt|glsoat|glft|glffct|gloas|glimt|glagent|glcbt)-"
        r"[A-Za-z0-9_\-]{20,300}(?:\.[a-z0-9]{9})?)" + _R,
        (),
        gate=r"gl[a-z]{1,6}-",
    ),
    _p(
        "gitlab-token",
        _L + r"(?P<secret>GR1348941[A-Za-z0-9_\-]{20})" + _R,
        ("GR1348941",),
    ),
    # Bitbucket app password: "ATBB" + 32 characters.
    _p(
        "bitbucket-app-password",
        _L + r"(?P<secret>ATBB[A-Za-z0-9]{32})" + _R_ALNUM,
        ("ATBB",),
    ),
    # Atlassian (Jira, Confluence) API token: "ATATT3" + 186 characters.
    _p(
        "atlassian-api-token",
        _L + r"(?P<secret>ATATT3[A-Za-z0-9_\-=]{186})(?![A-Za-z0-9_\-=])",
        ("ATATT3",),
    ),
    # Slack tokens: xoxb- bot, xoxp- user, xapp- app-level, others legacy/config.
    _p(
        "slack-bot-token",
        _L + r"(?P<secret>xoxb-[0-9]{8,13}-[0-9]{8,13}-[A-Za-z0-9]{24})" + _R,
        ("xoxb-",),
    ),
    _p(
        "slack-user-token",
        _L + r"(?P<secret>xoxp-[0-9]{8,13}-[0-9]{8,13}-[0-9]{8,13}-[a-f0-9]{32})" + _R,
        ("xoxp-",),
    ),
    _p(
        "slack-app-token",
        _L + r"(?P<secret>xapp-[0-9]-[A-Z0-9]{9,12}-[0-9]{10,14}-[a-f0-9]{64})" + _R,
        ("xapp-",),
    ),
    _p(
        "slack-legacy-token",
        _L + r"(?P<secret>xox[aeors]-(?:[0-9]+-){1,3}[A-Za-z0-9]{24,146})" + _R,
        ("xox",),
    ),
    _p(
        "slack-webhook-url",
        r"(?P<secret>https?://hooks\.slack\.com/(?:services|workflows|triggers)/"
        r"T[A-Z0-9]{8,12}/[A-Z0-9]{8,12}/[A-Za-z0-9]{24,32})" + _R_ALNUM,
        ("hooks.slack.com",),
    ),
    # Discord bot token: base64(user id) . 6 chars (timestamp) . 27-38 chars (HMAC).
    _p(
        "discord-bot-token",
        _L
        + r"(?P<secret>[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38})"
        + _R,
        (),
        validate=_discord_bot_token,
        gate=r"\.[A-Za-z0-9_\-]{6}\.",
    ),
    _p(
        "discord-webhook-url",
        r"(?P<secret>https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/"
        r"[0-9]{17,20}/[A-Za-z0-9_\-]{60,68})" + _R,
        ("discord",),
        fold=True,
    ),
    # Telegram bot token: bot id, ":", 35 characters starting with "A".
    _p(
        "telegram-bot-token",
        r"(?<![0-9A-Za-z:])(?P<secret>[0-9]{8,10}:A[A-Za-z0-9_\-]{34})" + _R,
        (":A",),
    ),
    # Stripe: secret and restricted keys, live or test; webhook signing secret.
    _p(
        "stripe-secret-key",
        _L + r"(?P<secret>sk_(?:live|test)_[A-Za-z0-9]{24,247})" + _R_ALNUM,
        ("sk_live_", "sk_test_"),
    ),
    _p(
        "stripe-restricted-key",
        _L + r"(?P<secret>rk_(?:live|test)_[A-Za-z0-9]{24,247})" + _R_ALNUM,
        ("rk_live_", "rk_test_"),
    ),
    _p(
        "stripe-webhook-secret",
        _L + r"(?P<secret>whsec_[A-Za-z0-9]{32,64})" + _R_ALNUM,
        ("whsec_",),
    ),
    # Square: production access token (EAAA + 60), legacy sq0atp-, OAuth secret sq0csp-.
    _p(
        "square-access-token",
        _L + r"(?P<secret>EAAA[A-Za-z0-9_\-]{60}|sq0atp-[A-Za-z0-9_\-]{22})" + _R,
        ("EAAA", "sq0atp-"),
    ),
    _p(
        "square-oauth-secret",
        _L + r"(?P<secret>sq0csp-[A-Za-z0-9_\-]{43})" + _R,
        ("sq0csp-",),
    ),
    # PayPal Braintree access token.
    _p(
        "braintree-access-token",
        r"(?P<secret>access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32})" + _R_ALNUM,
        ("access_token$",),
    ),
    # Twilio API key SID: "SK" + 32 hex.
    _p("twilio-api-key", _L + r"(?P<secret>SK[0-9a-fA-F]{32})" + _R_ALNUM, ("SK",)),
    # SendGrid: SG. 22 . 43.
    _p(
        "sendgrid-api-key",
        _L + r"(?P<secret>SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43})" + _R,
        ("SG.",),
    ),
    # Mailgun private API key: key- + 32 hex.
    _p("mailgun-api-key", _L + r"(?P<secret>key-[0-9a-f]{32})" + _R_ALNUM, ("key-",)),
    # Mailchimp: 32 hex + "-us" + datacentre number.
    _p(
        "mailchimp-api-key",
        _L + r"(?P<secret>[0-9a-f]{32}-us[0-9]{1,2})" + _R_ALNUM,
        ("-us",),
    ),
    # OpenAI: project / service-account / admin keys, and legacy keys (both carry
    # "T3BlbkFJ", base64 of "openai").
    _p(
        "openai-api-key",
        _L + r"(?P<secret>sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,200}T3BlbkFJ"
        r"[A-Za-z0-9_\-]{20,200}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}))" + _R,
        ("T3BlbkFJ",),
    ),
    # Anthropic: sk-ant-<kind><version>- + 93 characters + "AA".
    _p(
        "anthropic-api-key",
        _L + r"(?P<secret>sk-ant-(?:api|admin|oat|ort)[0-9]{2}-[A-Za-z0-9_\-]{80,120})" + _R,
        ("sk-ant-",),
    ),
    # Hugging Face: user access tokens hf_ + 34 letters; org tokens api_org_.
    _p(
        "huggingface-token",
        _L + r"(?P<secret>(?:hf_|api_org_)[A-Za-z]{34})" + _R_ALNUM,
        ("hf_", "api_org_"),
    ),
    # npm: npm_ + 36 base62.
    _p("npm-token", _L + r"(?P<secret>npm_[A-Za-z0-9]{36})" + _R_ALNUM, ("npm_",)),
    # PyPI: a macaroon, "pypi-" + base64 of the "pypi.org" location header.
    _p(
        "pypi-token",
        _L + r"(?P<secret>pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,1000})" + _R,
        ("pypi-AgEIcHlwaS5vcmc",),
    ),
    # Docker Hub personal / organisation access tokens.
    _p(
        "dockerhub-token",
        _L + r"(?P<secret>dckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,40})" + _R,
        ("dckr_pat_", "dckr_oat_"),
    ),
    # Shopify: access / custom app / private app tokens and shared secrets, 32 hex.
    _p(
        "shopify-token",
        _L + r"(?P<secret>shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})" + _R_ALNUM,
        ("shpat_", "shpca_", "shppa_", "shpss_"),
    ),
    # DigitalOcean: PAT, OAuth and refresh tokens, 64 hex.
    _p(
        "digitalocean-token",
        _L + r"(?P<secret>do[opr]_v1_[a-f0-9]{64})" + _R_ALNUM,
        ("dop_v1_", "doo_v1_", "dor_v1_"),
    ),
    # Heroku: new-format keys (HRKU-AA + 58), and the older UUID keys next to their name.
    _p(
        "heroku-api-key",
        _L
        + r"(?P<secret>HRKU-AA[A-Za-z0-9_\-]{58})"
        + _R
        + r"|(?i:heroku[\w.\-]{0,20}?(?:api[_\-]?key|token))[\"']?\s*(?:=|:|=>)\s*[\"']?"
        r"(?P<secret2>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
        ("hrku-aa", "heroku"),
        fold=True,
    ),
    # Datadog API (32 hex) and application (40 hex) keys: recognisable only by name.
    _p(
        "datadog-api-key",
        r"(?i)(?:dd[_\-]|datadog[_\-]?)(?:api|app|application)[_\-]?key[\"']?\s*(?:=|:|=>)\s*"
        r"[\"']?(?P<secret>[a-f0-9]{40}|[a-f0-9]{32})(?![A-Za-z0-9])",
        ("dd_", "dd-", "datadog"),
        fold=True,
    ),
    # Linear personal API key: lin_api_ + 40.
    _p("linear-api-key", _L + r"(?P<secret>lin_api_[A-Za-z0-9]{40})" + _R_ALNUM, ("lin_api_",)),
    # Notion integration token: ntn_ + 11 digits + 35, or the older secret_ + 43.
    _p(
        "notion-token",
        _L + r"(?P<secret>ntn_[0-9]{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43})" + _R_ALNUM,
        ("ntn_", "secret_"),
    ),
    # Vercel access token: 24 base62 characters, recognisable only by its name.
    _p(
        "vercel-token",
        r"(?i)vercel[\w.\-]{0,20}?(?:token|key|secret)[\"']?\s*(?:=|:|=>)\s*[\"']?"
        r"(?P<secret>[A-Za-z0-9]{24})(?![A-Za-z0-9])",
        ("vercel",),
        fold=True,
    ),
    # Supabase: personal access token sbp_ + 40 hex, secret API key sb_secret_.
    _p(
        "supabase-token",
        _L + r"(?P<secret>sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{31,64})" + _R,
        ("sbp_", "sb_secret_"),
    ),
    # Doppler: dp.<kind>. + 40-44 base62.
    _p(
        "doppler-token",
        _L + r"(?P<secret>dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44})" + _R_ALNUM,
        ("dp.",),
    ),
    _p(
        "postman-api-key",
        _L + r"(?P<secret>PMAK-[a-f0-9]{24}-[a-f0-9]{34})" + _R_ALNUM,
        ("PMAK-",),
    ),
    _p(
        "sentry-token",
        _L + r"(?P<secret>sntryu_[a-f0-9]{64}|sntrys_eyJ[A-Za-z0-9+/=_]{60,400})" + _R_ALNUM,
        ("sntryu_", "sntrys_"),
    ),
    _p(
        "grafana-token",
        _L
        + r"(?P<secret>glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,3})"
        + _R_ALNUM,
        ("glsa_", "glc_"),
    ),
    _p(
        "hashicorp-vault-token",
        _L + r"(?P<secret>hv[sb]\.[A-Za-z0-9_\-]{90,300})" + _R,
        ("hvs.", "hvb."),
    ),
    _p(
        "terraform-cloud-token",
        _L + r"(?P<secret>[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70})" + _R,
        (".atlasv1.",),
    ),
    _p(
        "databricks-token",
        _L + r"(?P<secret>dapi[a-f0-9]{32}(?:-[0-9])?)" + _R_ALNUM,
        ("dapi",),
    ),
    _p(
        "age-secret-key",
        r"(?P<secret>AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})" + _R_ALNUM,
        ("AGE-SECRET-KEY-1",),
    ),
    _p(
        "new-relic-key",
        _L + r"(?P<secret>NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9_\-]{32})" + _R,
        ("NRAK-", "NRII-"),
    ),
    _p("groq-api-key", _L + r"(?P<secret>gsk_[A-Za-z0-9]{52})" + _R_ALNUM, ("gsk_",)),
    _p("replicate-token", _L + r"(?P<secret>r8_[A-Za-z0-9]{37})" + _R_ALNUM, ("r8_",)),
    _p("perplexity-api-key", _L + r"(?P<secret>pplx-[A-Za-z0-9]{48})" + _R_ALNUM, ("pplx-",)),
    _p(
        "rubygems-token",
        _L + r"(?P<secret>rubygems_[a-f0-9]{48})" + _R_ALNUM,
        ("rubygems_",),
    ),
)

# Passwords have their own, laxer check (people choose them); these name machine secrets.
_SECRET_KEY_WORDS = (
    r"secret|token|api[_\-]?key|apikey|access[_\-]?key|secret[_\-]?key|private[_\-]?key"
    r"|auth[_\-]?key|client[_\-]?secret|credentials?"
)
# The value of an assignment: quoted, or bare and the last thing on its line (or
# followed by another NAME=value), which is what keeps prose out.
_VALUE = (
    r"(?:(?P<q>[\"'`])(?P<quoted>[^\"'`\r\n]{1,300}?)(?P=q)"
    r"|(?P<bare>[^\s\"'`,;]{1,300})(?=[ \t]*(?:[\r\n,;]|\Z|[ \t][\w.\-]+=|[ \t]+#)))"
)

_GENERIC: tuple[_Pattern, ...] = (
    # PEM private keys (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP ... BLOCK). A key cut
    # by chunking is still caught: BEGIN without END takes the base64 body after it.
    _p(
        "private-key",
        r"(?P<secret>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]{0,20000}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        # no END in this text: the header lines and base64 lines that follow
        r"|(?:(?:\r?\n|\\n)(?:[A-Za-z0-9+/=]{1,80}|[A-Za-z\-]+:[^\r\n]*|))*)"
        # a text that starts inside a key: base64 lines up to the END line
        r"|(?:[A-Za-z0-9+/=]{40,80}(?:\r?\n|\\n))+-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
        r"(?: BLOCK)?-----)",
        ("PRIVATE KEY",),
    ),
    # JWT: header.payload.signature, base64url; the header must decode to a JSON object.
    _p(
        "jwt",
        _L + r"(?P<secret>eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*)" + _R,
        ("eyJ",),
        validate=_jwt,
    ),
    # Database / broker URLs with a password: only the password is replaced.
    _p(
        "connection-string",
        r"(?i)\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql"
        r"|sqlserver|oracle|cockroachdb|clickhouse|couchdb|neo4j(?:\+s)?|nats|kafka"
        r"|ldaps?|s?ftp|smtps?|imaps?)(?:\+[a-z0-9]+)?://[^\s:/?#@]*:(?P<secret>[^\s@/?#]+)@"
        r"[A-Za-z0-9\[]",
        ("://",),
        validate=_not_placeholder,
    ),
    _p(
        "url-credentials",
        r"(?i)\bhttps?://[^\s:/?#@]+:(?P<secret>[^\s@/?#]{3,})@[A-Za-z0-9\[]",
        ("://",),
        validate=_not_placeholder,
    ),
    # Authorization headers: Basic credentials must decode to "user:password".
    _p(
        "basic-auth",
        r"\bauthorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<secret>[a-z0-9+/]{6,}={0,2})"
        r"(?![a-z0-9+/=])",
        ("basic",),
        lowered=True,
        validate=_basic_credentials,
    ),
    _p(
        "bearer-token",
        r"\b(?:authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|token)|bearer)[ \t]+"
        r"(?P<secret>[a-z0-9\-._~+/]{16,}=*)(?![a-z0-9\-._~+/=])",
        ("bearer",),
        lowered=True,
        validate=_high_entropy_bearer,
    ),
    # NAME = value assignments (env files, YAML, JSON, TOML, code).
    _p(
        "password-assignment",
        r"(?:password|passwd|passphrase|pwd)(?![a-z0-9])[\"']?[ \t]*(?:=|:=|=>|:)[ \t]*" + _VALUE,
        ("pass", "pwd"),
        lowered=True,
        validate=_looks_like_password,
    ),
    _p(
        "secret-assignment",
        r"(?:" + _SECRET_KEY_WORDS + r")(?![a-z0-9])[\"']?[ \t]*(?:=|:=|=>|:)[ \t]*" + _VALUE,
        ("secret", "token", "key", "credential"),
        lowered=True,
        validate=_looks_like_token,
    ),
)

_PATTERNS: tuple[_Pattern, ...] = _VENDOR + _GENERIC

PATTERN_NAMES: tuple[str, ...] = tuple(dict.fromkeys(p.name for p in _PATTERNS))
"""Every pattern name :func:`scrub` can report, vendor patterns first."""


def _secret_span(pattern: _Pattern, match: re.Match[str], text: str) -> tuple[int, int] | None:
    """The span of ``text`` to replace for ``match``, or None when it is not a secret."""
    for group in ("secret", "secret2", "quoted", "bare"):
        if group in match.re.groupindex and match.group(group) is not None:
            break
    else:
        return None
    start, end = match.span(group)
    # Read the value from ``text``: the match may come from its lower-cased copy.
    if start == end or (pattern.validate is not None and not pattern.validate(text[start:end])):
        return None
    return start, end


def _matches(pattern: _Pattern, text: str, lowered: str) -> list[re.Match[str]]:
    haystack = lowered if pattern.fold_keywords else text
    if pattern.rare and pattern.rare not in text:
        return []
    if pattern.keywords and not any(keyword in haystack for keyword in pattern.keywords):
        return []
    if pattern.gate is not None and pattern.gate.search(text) is None:
        return []
    if pattern.lowered_regex is not None and len(lowered) == len(text):
        # Same indices (no character changed length when lower-cased); a case-sensitive
        # regex on the lowered text is several times faster than IGNORECASE on the text.
        return list(pattern.lowered_regex.finditer(lowered))
    return list(pattern.regex.finditer(text))


def scrub(text: str) -> ScrubResult:
    """Replace every secret in ``text`` with ``[REDACTED:<pattern-name>]``.

    :returns: the new text and the number of replacements per pattern name.
    """
    if not text:
        return ScrubResult(text, {})
    lowered = text.lower()
    spans: list[tuple[int, int, str]] = []
    for pattern in _PATTERNS:
        for match in _matches(pattern, text, lowered):
            span = _secret_span(pattern, match, text)
            if span is None:
                continue
            start, end = span
            # Earlier patterns win: a span overlapping one already taken is dropped.
            if any(start < taken_end and taken_start < end for taken_start, taken_end, _ in spans):
                continue
            spans.append((start, end, pattern.name))
    if not spans:
        return ScrubResult(text, {})

    spans.sort()
    pieces: list[str] = []
    position = 0
    findings: dict[str, int] = {}
    for start, end, name in spans:
        pieces.append(text[position:start])
        pieces.append(REDACTION_TEMPLATE.format(name=name))
        position = end
        findings[name] = findings.get(name, 0) + 1
    pieces.append(text[position:])
    # Names and counts only: the values must never reach a log. DEBUG, because the
    # caller (the indexer, the MCP server) logs one summary per note at INFO.
    logger.debug(
        "redacted %d secret(s): %s",
        len(spans),
        ", ".join(f"{name}={count}" for name, count in sorted(findings.items())),
    )
    return ScrubResult("".join(pieces), findings)
