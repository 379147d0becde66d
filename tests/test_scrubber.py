"""Credential scrubbing: every pattern has a true positive and a near miss.

The fake secrets are generated at run time from a seeded RNG and assembled from
pieces, so this file holds nothing that looks like a leaked key. None is real.
"""

from __future__ import annotations

import base64
import json
import logging
import random
import string
from pathlib import Path

import pytest

from signaldesk.retrieval.scrub_rules import load_rules
from signaldesk.retrieval.scrubber import PATTERN_NAMES, ScrubResult, scrub

_RNG = random.Random(20240601)
DIGITS = string.digits
UPPER = string.ascii_uppercase
LETTERS = string.ascii_letters
ALNUM = LETTERS + DIGITS
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
BASE32 = UPPER + "234567"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def rs(alphabet: str, n: int) -> str:
    """A random string; it always starts with an alphanumeric, as real tokens here do."""
    first = _RNG.choice([c for c in alphabet if c.isalnum()])
    return first + "".join(_RNG.choice(alphabet) for _ in range(n - 1))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _jwt() -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps({"sub": "1234567890", "name": "Test", "iat": 1516239022}).encode())
    return f"{header}.{payload}.{rs(URLSAFE, 43)}"


def _discord_bot_token(user_id: str) -> str:
    return f"{b64url(user_id.encode())}.{rs(URLSAFE, 6)}.{rs(URLSAFE, 38)}"


def _pem(kind: str, body_lines: int = 6) -> str:
    begin, end = "-----BEGIN " + kind + "-----", "-----END " + kind + "-----"
    lines = [rs(B64, 64) for _ in range(body_lines)]
    return "\n".join([begin, *lines, end])


def _service_account_json() -> str:
    key = _pem("PRIVATE KEY").replace("\n", "\\n") + "\\n"
    return (
        '{"type": "service_account", "project_id": "demo", '
        f'"private_key_id": "{rs(HEX, 40)}", "private_key": "{key}", '
        '"client_email": "bot@demo.iam.gserviceaccount.com"}'
    )


_SLACK_ID = "".join(_RNG.choice(DIGITS) for _ in range(12))
_UUID = f"{rs(HEX, 8)}-{rs(HEX, 4)}-{rs(HEX, 4)}-{rs(HEX, 4)}-{rs(HEX, 12)}"

# (pattern name, text with one secret, near miss that must stay untouched)
CASES: list[tuple[str, str, str]] = [
    ("aws-access-token", "id: AK" + "IA" + rs(BASE32, 16), "id: AK" + "IA" + rs(BASE32, 15)),
    (
        "aws-secret-access-key",
        "aws_secret_access_key = " + rs(B64, 40),
        "Put AWS_SECRET_ACCESS_KEY in the environment before running the job.",
    ),
    ("gcp-api-key", "key=AI" + "za" + rs(URLSAFE, 35), "AI" + "za" + rs(URLSAFE, 30) + " is short"),
    (
        "private-key",
        _service_account_json(),
        '{"type": "service_account", "private_key": "", "client_id": "12"}',
    ),
    (
        "google-oauth-client-secret",
        "client secret GOC" + "SPX-" + rs(URLSAFE, 28),
        "client secret GOC" + "SPX-" + rs(URLSAFE, 12),
    ),
    (
        "google-oauth-access-token",
        "access token ya" + "29." + rs(URLSAFE, 80),
        "see ya" + "29.example in the docs",
    ),
    (
        "azure-storage-key",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
        + rs(B64, 86)
        + "==;EndpointSuffix=core.windows.net",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=<storage-account-key>",
    ),
    (
        "azure-shared-access-key",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey="
        + rs(B64, 43)
        + "=",
        "SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=<key>",
    ),
    (
        "azure-sas-signature",
        "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sp=r&sig="
        + rs(ALNUM, 43)
        + "%3D",
        "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sig=abc123",
    ),
    (
        "azure-ad-client-secret",
        "secret value " + rs(ALNUM, 3) + "8Q" + "~" + rs(ALNUM + "_~.", 34),
        "secret value " + rs(ALNUM, 3) + "8Q" + "~" + rs(ALNUM, 20),
    ),
    ("github-pat", "token ghp" + "_" + rs(ALNUM, 36), "token ghp" + "_" + rs(ALNUM, 35)),
    (
        "github-fine-grained-pat",
        "github" + "_pat_" + rs(ALNUM, 22) + "_" + rs(ALNUM, 59),
        "github" + "_pat_" + rs(ALNUM, 22) + "_" + rs(ALNUM, 58),
    ),
    ("github-oauth", "gho" + "_" + rs(ALNUM, 36), "gho" + "_" + rs(ALNUM, 30)),
    ("github-app-token", "ghs" + "_" + rs(ALNUM, 36), "ghs" + "_" + rs(ALNUM, 35)),
    ("gitlab-token", "glpat" + "-" + rs(URLSAFE, 20), "glpat" + "-" + rs(URLSAFE, 12)),
    ("bitbucket-app-password", "AT" + "BB" + rs(ALNUM, 32), "AT" + "BB" + rs(ALNUM, 31)),
    (
        "atlassian-api-token",
        "ATA" + "TT3" + rs(URLSAFE + "=", 186),
        "ATA" + "TT3" + rs(URLSAFE, 100),
    ),
    (
        "slack-bot-token",
        "xo" + "xb-" + _SLACK_ID + "-" + _SLACK_ID + "1-" + rs(ALNUM, 24),
        "Bot tokens start with xo" + "xb- and user tokens with xo" + "xp-.",
    ),
    (
        "slack-user-token",
        "xo" + "xp-" + _SLACK_ID + "-" + _SLACK_ID + "-" + _SLACK_ID + "2-" + rs(HEX, 32),
        "xo" + "xp-" + _SLACK_ID + "-" + rs(HEX, 8),
    ),
    (
        "slack-app-token",
        "xa" + "pp-1-A" + rs(UPPER + DIGITS, 10) + "-" + _SLACK_ID + "3-" + rs(HEX, 64),
        "An app-level token (xa" + "pp-1-...) is made on the app's settings page.",
    ),
    (
        "slack-legacy-token",
        "xo" + "xr-" + _SLACK_ID + "-" + rs(ALNUM, 40),
        "xo" + "xr-12-" + rs(ALNUM, 10),
    ),
    (
        "slack-webhook-url",
        "https://hooks.slack.com/services/T"
        + rs(UPPER + DIGITS, 8)
        + "/B"
        + rs(UPPER + DIGITS, 8)
        + "/"
        + rs(ALNUM, 24),
        "Incoming webhooks live under https://hooks.slack.com/services/ (see the docs).",
    ),
    (
        "discord-bot-token",
        "bot token " + _discord_bot_token("1" + "".join(_RNG.choice(DIGITS) for _ in range(17))),
        # Same shape, but the first segment is not a base64 user id.
        "bot token "
        + b64url(b"MyProjectNameAndVersion1")
        + "."
        + rs(URLSAFE, 6)
        + "."
        + rs(URLSAFE, 38),
    ),
    (
        "discord-webhook-url",
        "https://discord.com/api/webhooks/"
        + "".join(_RNG.choice(DIGITS) for _ in range(18))
        + "/"
        + rs(URLSAFE, 68),
        "https://discord.com/api/webhooks/" + "".join(_RNG.choice(DIGITS) for _ in range(18)),
    ),
    (
        "telegram-bot-token",
        "bot " + "".join(_RNG.choice(DIGITS) for _ in range(10)) + ":AA" + rs(URLSAFE, 33),
        "bot " + "".join(_RNG.choice(DIGITS) for _ in range(10)) + ":AA" + rs(URLSAFE, 20),
    ),
    (
        "stripe-secret-key",
        "sk" + "_live_" + rs(ALNUM, 99),
        "sk" + "_live_ keys are secret; pk" + "_live_ keys are not.",
    ),
    ("stripe-restricted-key", "rk" + "_test_" + rs(ALNUM, 24), "pk" + "_test_" + rs(ALNUM, 24)),
    ("stripe-webhook-secret", "wh" + "sec_" + rs(ALNUM, 32), "wh" + "sec_" + rs(ALNUM, 20)),
    ("square-access-token", "EA" + "AA" + rs(URLSAFE, 60), "EA" + "AA" + rs(URLSAFE, 18)),
    ("square-oauth-secret", "sq0" + "csp-" + rs(URLSAFE, 43), "sq0" + "csp-" + rs(URLSAFE, 30)),
    (
        "braintree-access-token",
        "access_token$"
        + "production$"
        + rs(string.ascii_lowercase + DIGITS, 16)
        + "$"
        + rs(HEX, 32),
        "access_token$" + "production$abc$def",
    ),
    ("twilio-api-key", "S" + "K" + rs(HEX, 32), "S" + "K" + rs(HEX, 31)),
    (
        "sendgrid-api-token",
        "S" + "G." + rs(URLSAFE, 22) + "." + rs(URLSAFE, 43),
        "S" + "G.short.thing",
    ),
    ("mailgun-api-key", "ke" + "y-" + rs(HEX, 32), "ke" + "y-" + rs(HEX, 31)),
    ("mailchimp-api-key", rs(HEX, 32) + "-us" + "12", rs(HEX, 31) + "-us" + "12"),
    (
        "openai-api-key",
        "sk-" + "proj-" + rs(URLSAFE, 74) + "T3Blbk" + "FJ" + rs(URLSAFE, 74),
        "sk-" + "proj-" + rs(URLSAFE, 40),
    ),
    (
        "anthropic-api-key",
        "sk-" + "ant-api03-" + rs(URLSAFE, 93) + "AA",
        "sk-" + "ant-api03-" + rs(URLSAFE, 20),
    ),
    ("huggingface-access-token", "hf" + "_" + rs(LETTERS, 34), "hf" + "_" + rs(LETTERS, 33)),
    ("npm-access-token", "np" + "m_" + rs(ALNUM, 36), "np" + "m_" + rs(ALNUM, 35)),
    (
        "pypi-upload-token",
        "py" + "pi-AgEIcHlwaS5vcmc" + rs(URLSAFE, 70),
        "py" + "pi-AgEIcHlwaS5vcmc" + rs(URLSAFE, 10),
    ),
    ("dockerhub-token", "dckr" + "_pat_" + rs(URLSAFE, 27), "dckr" + "_pat_" + rs(ALNUM, 10)),
    ("shopify-access-token", "shp" + "at_" + rs(HEX, 32), "shp" + "at_" + rs(HEX, 31)),
    ("digitalocean-pat", "dop" + "_v1_" + rs(HEX, 64), "dop" + "_v1_" + rs(HEX, 63)),
    ("heroku-api-key", "HRKU" + "-AA" + rs(URLSAFE, 58), "HRKU" + "-AA" + rs(URLSAFE, 40)),
    ("heroku-api-key", "HEROKU_API_KEY=" + _UUID, "HEROKU_API_KEY=${HEROKU_API_KEY}"),
    ("datadog-api-key", "DD_API_KEY=" + rs(HEX, 32), "DD_API_KEY=${DD_API_KEY}"),
    ("linear-api-key", "lin" + "_api_" + rs(ALNUM, 40), "lin" + "_api_" + rs(ALNUM, 39)),
    (
        "notion-token",
        "ntn" + "_" + "".join(_RNG.choice(DIGITS) for _ in range(11)) + rs(ALNUM, 35),
        "ntn" + "_" + rs(ALNUM, 20),
    ),
    ("vercel-token", "VERCEL_TOKEN=" + rs(ALNUM, 24), "vercel token: see the project settings"),
    ("supabase-token", "sb" + "p_" + rs(HEX, 40), "sb" + "p_" + rs(HEX, 39)),
    ("doppler-token", "dp." + "pt." + rs(ALNUM, 43), "dp." + "pt." + rs(ALNUM, 20)),
    (
        "postman-api-token",
        "PM" + "AK-" + rs(HEX, 24) + "-" + rs(HEX, 34),
        "PM" + "AK-" + rs(HEX, 24) + "-" + rs(HEX, 33),
    ),
    ("sentry-token", "sntr" + "yu_" + rs(HEX, 64), "sntr" + "yu_" + rs(HEX, 63)),
    (
        "grafana-service-account-token",
        "gl" + "sa_" + rs(ALNUM, 32) + "_" + rs(HEX, 8),
        "gl" + "sa_" + rs(ALNUM, 32) + "_" + rs(HEX, 7),
    ),
    ("hashicorp-vault-token", "hv" + "s." + rs(URLSAFE, 95), "hv" + "s." + rs(URLSAFE, 40)),
    (
        "hashicorp-tf-api-token",
        rs(ALNUM, 14) + ".atlas" + "v1." + rs(URLSAFE, 67),
        rs(ALNUM, 14) + ".atlas" + "v1." + rs(URLSAFE, 20),
    ),
    ("databricks-api-token", "da" + "pi" + rs(HEX, 32), "da" + "pi" + rs(HEX, 31)),
    (
        "age-secret-key",
        "AGE-SECRET-" + "KEY-1" + rs(BECH32, 58),
        "AGE-SECRET-" + "KEY-1" + rs(BECH32, 57),
    ),
    ("new-relic-key", "NR" + "AK-" + rs(UPPER + DIGITS, 27), "NR" + "AK-" + rs(UPPER + DIGITS, 26)),
    ("groq-api-key", "gs" + "k_" + rs(ALNUM, 52), "gs" + "k_" + rs(ALNUM, 51)),
    ("replicate-token", "r8" + "_" + rs(ALNUM, 37), "r8" + "_" + rs(ALNUM, 36)),
    ("perplexity-api-key", "pp" + "lx-" + rs(ALNUM, 48), "pp" + "lx-" + rs(ALNUM, 47)),
    ("rubygems-api-token", "rubygems" + "_" + rs(HEX, 48), "rubygems" + "_" + rs(HEX, 47)),
    # Generic shapes.
    ("private-key", "key:\n" + _pem("RSA PRIVATE KEY") + "\nend", "pub:\n" + _pem("PUBLIC KEY")),
    (
        "private-key",
        "cut by chunking:\n" + _pem("OPENSSH PRIVATE KEY").rsplit("\n", 2)[0],
        "-----BEGIN CERTIFICATE-----\n" + rs(B64, 64) + "\n-----END CERTIFICATE-----",
    ),
    (
        "jwt",
        "session " + _jwt(),
        "session eyJ" + rs(ALNUM, 20) + "." + rs(ALNUM, 20) + "." + rs(ALNUM, 20),
    ),
    (
        "connection-string",
        "DATABASE_URL is postgres://app:" + rs(ALNUM, 16) + "@db.internal:5432/prod",
        "DATABASE_URL is postgres://db.internal:5432/prod",
    ),
    (
        "connection-string",
        "mongodb+srv://svc:" + rs(ALNUM, 20) + "@cluster0.abcde.mongodb.net/app",
        "mongodb+srv://svc:${MONGO_PASSWORD}@cluster0.abcde.mongodb.net/app",
    ),
    (
        "connection-string",
        "cache at redis://:" + rs(ALNUM, 24) + "@cache.local:6379/0",
        "cache at redis://cache.local:6379/0",
    ),
    (
        "url-credentials",
        "git clone https://deploy:" + rs(ALNUM, 20) + "@git.example.org/repo.git",
        "git clone https://git.example.org:8443/repo.git",
    ),
    (
        "basic-auth",
        "Authorization: Basic " + base64.b64encode(("admin:" + rs(ALNUM, 12)).encode()).decode(),
        "Authorization: Basic " + base64.b64encode(b"no-colon-in-here").decode(),
    ),
    (
        "bearer-token",
        'curl -H "Authorization: Bearer ' + rs(ALNUM + "-._~", 40) + '" https://api.example.com',
        "Send the bearer token in the Authorization header.",
    ),
    ("cli-password", "mysql -u root -p" + rs(ALNUM, 14) + " shop", "mysql -u root -p shop"),
    ("password-assignment", "DB_PASSWORD=Tr0ub4dor&3", "password: see the vault"),
    (
        "password-assignment",
        'config:\n  password: "correct horse battery 9"\n',
        "Password: required, at least 12 characters",
    ),
    (
        "secret-assignment",
        'api_key: "' + rs(ALNUM, 32) + '"',
        "the token is passed to the function",
    ),
    (
        "secret-assignment",
        "CLIENT_SECRET = '" + rs(ALNUM + "-_", 40) + "'",
        "client_secret = settings.CLIENT_SECRET",
    ),
]


def _case_id(case: tuple[str, str, str]) -> str:
    return case[0]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_true_positive_is_redacted(case: tuple[str, str, str]) -> None:
    name, text, _ = case
    result = scrub(text)
    assert result.findings == {name: 1}, result.findings
    assert f"[REDACTED:{name}]" in result.text


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_near_miss_is_kept(case: tuple[str, str, str]) -> None:
    _, _, near_miss = case
    result = scrub(near_miss)
    assert result.findings == {}
    assert result.text == near_miss


def test_every_own_rule_has_a_case() -> None:
    own = {r.name for r in load_rules().rules if r.origin == "signaldesk"}
    assert own <= {name for name, _, _ in CASES}
    assert set(PATTERN_NAMES) >= own | {"private-key"}
    # gitleaks' rules are measured by the generator (tests/test_scrubber_rules.py).
    assert len(PATTERN_NAMES) >= 200


def test_only_the_secret_part_is_replaced() -> None:
    password = rs(ALNUM, 18)
    result = scrub(f"postgres://app:{password}@db.internal:5432/prod")
    assert result.text == "postgres://app:[REDACTED:connection-string]@db.internal:5432/prod"
    token = rs(ALNUM, 32)
    assert scrub(f'api_key: "{token}"').text == 'api_key: "[REDACTED:secret-assignment]"'


def test_vendor_pattern_wins_over_generic_assignment() -> None:
    result = scrub("GITHUB_TOKEN=gh" + "p_" + rs(ALNUM, 36))
    assert result.findings == {"github-pat": 1}
    assert result.text == "GITHUB_TOKEN=[REDACTED:github-pat]"


def test_scrubbing_twice_changes_nothing_more() -> None:
    text = "\n".join(positive for _, positive, _ in CASES)
    once = scrub(text)
    twice = scrub(once.text)
    assert twice.findings == {}
    assert twice.text == once.text
    assert once.redacted == len(CASES)


def test_prose_about_secrets_is_not_redacted() -> None:
    prose = [
        "The token is passed to the function and checked by the middleware.",
        "password: see the vault",
        "Rotate the API key every 90 days; the secret is stored in the keychain.",
        "Use `Authorization: Bearer <token>` with a token from the settings page.",
        "Set the password to something long, e.g. a passphrase of four words.",
        "max_tokens: 2000",
        "token_type: bearer",
        "secret: /run/secrets/db_password",
        "api_key = os.environ['API_KEY']",
        "tokenizer: bert-base-uncased",
        "See https://example.com/docs?page=2 and ftp://mirror.example.org/pub.",
        "AKIA is the prefix of AWS access key ids; ghp_ marks GitHub tokens.",
    ]
    for line in prose:
        assert scrub(line).findings == {}, line


def test_markdown_note_keeps_its_surrounding_text() -> None:
    github = "gh" + "p_" + rs(ALNUM, 36)
    aws = "AK" + "IA" + rs(BASE32, 16)
    db_password = rs(ALNUM, 20)
    note = (
        "---\ntitle: Deploy notes\ntags: [ops, deploy]\n---\n\n"
        "# Deploy notes\n\n"
        "## Credentials\n\n"
        f"- GitHub: `{github}` (rotate monthly)\n"
        f"- AWS key id {aws} for the *staging* account.\n"
        f"- Database: postgres://deploy:{db_password}@db.internal:5432/app\n\n"
        "## Steps\n\n"
        "1. Run the migrations.\n2. Restart the workers.\n"
    )
    result = scrub(note)
    assert result.findings == {"github-pat": 1, "aws-access-token": 1, "connection-string": 1}
    for secret in (github, aws, db_password):
        assert secret not in result.text
    expected = (
        note.replace(github, "[REDACTED:github-pat]")
        .replace(aws, "[REDACTED:aws-access-token]")
        .replace(db_password, "[REDACTED:connection-string]")
    )
    assert result.text == expected


def test_log_names_patterns_but_never_values(caplog: pytest.LogCaptureFixture) -> None:
    token = "gh" + "p_" + rs(ALNUM, 36)
    password = rs(ALNUM, 20)
    with caplog.at_level(logging.DEBUG, logger="signaldesk.retrieval.scrubber"):
        scrub(f"token {token}\nredis://:{password}@cache:6379")
    assert caplog.records
    messages = " ".join(record.getMessage() for record in caplog.records)
    assert "github-pat" in messages
    assert "connection-string" in messages
    for record in caplog.records:
        assert token not in record.getMessage()
        assert password not in record.getMessage()
        assert token not in repr(record.args)


def test_empty_and_clean_text() -> None:
    assert scrub("") == ScrubResult("", {})
    assert scrub("Nothing secret here.").findings == {}


@pytest.mark.slow
def test_scifact_corpus_yields_no_redactions(shared_data: Path) -> None:
    corpus = shared_data / "scifact" / "corpus.jsonl"
    flagged: list[tuple[str, dict[str, int]]] = []
    count = 0
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            result = scrub(f"{doc['title']}\n\n{doc['text']}")
            count += 1
            if result.findings:
                flagged.append((doc["_id"], result.findings))
    assert count == 5183
    assert flagged == []
