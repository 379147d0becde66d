"""The checks a rule can name in its data (``check = "jwt"``): code where a regex is not enough.

A check takes the candidate secret and says whether it is one. Rules refer to
checks by name, so the rule files stay data; :data:`CHECKS` is the registry.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import tomllib
from collections import Counter
from collections.abc import Callable
from importlib import resources

__all__ = ["CHECKS", "Check", "in_template", "is_placeholder", "shannon_entropy"]

Check = Callable[[str], bool]


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value`` (the measure gitleaks' ``entropy`` thresholds use)."""
    if not value:
        return 0.0
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
        [$%@]\{?[\w.]+\}?%?         # $VAR ${VAR} %VAR% @VAR@
      | \$\(.*\)                    # $(command)
      | \{\{.*\}\}                  # {{ template }}
      | <[^>]*>                     # <your-token>
      | \[REDACTED:[\w-]+\]         # already scrubbed
      | (.)\1+                      # xxxxxxxx ********
      | \.{3}|…                     # an ellipsis
    )$""",
    re.VERBOSE,
)
_PLACEHOLDER_WORDS = (
    "example",
    "your",
    "placeholder",
    "changeme",
    "change_me",
    "dummy",
    "sample",
    "redacted",
    "xxxx",
    "****",
)
# `config.password`, `os.environ`, `get_token()`: code that names a secret, not a secret.
_CODE_REFERENCE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*(?:\(.*\))?$")
# Values that documentation puts where a password would go ("password: required"), and
# English function words (a "value" holding one is a sentence): secret_rules/words.toml.
_WORDS_FILE = resources.files("signaldesk.retrieval").joinpath("secret_rules", "words.toml")
_WORDS = tomllib.loads(_WORDS_FILE.read_text("utf-8"))
_DOC_VALUES = frozenset(_WORDS["doc_values"])
_FUNCTION_WORDS = frozenset(_WORDS["function_words"])


def _is_code_reference(value: str) -> bool:
    # `settings.API_TOKEN`, `get_token()`, `getWebhookSecret`; not 32 random letters.
    if not _CODE_REFERENCE.match(value) or any(c.isdigit() for c in value):
        return False
    return any(c in "._(" for c in value) or shannon_entropy(value) < 4.2


def is_placeholder(value: str) -> bool:
    """A template, a variable reference, a mask or an example value: not a secret."""
    value = value.strip("`")
    lowered = value.lower()
    if "{{" in value or "}}" in value or "${" in value:
        return True
    return bool(_PLACEHOLDER.match(value)) or any(w in lowered for w in _PLACEHOLDER_WORDS)


def in_template(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` sits inside a ``{{ ... }}`` placeholder on its line
    (tldr pages, Jinja, Helm: ``{{postgresql://user:pass@host/db}}``)."""
    line_start = text.rfind("\n", 0, start) + 1
    opened = text.rfind("{{", line_start, start)
    if opened < 0 or text.rfind("}}", opened, start) >= 0:
        return False
    line_end = text.find("\n", end)
    closed = text.find("}}", end, len(text) if line_end < 0 else line_end)
    return closed >= 0


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


def _is_sentence(value: str) -> bool:
    words = re.findall(r"[a-z']+", value.lower())
    return any(w in _FUNCTION_WORDS for w in words)


def _password(value: str) -> bool:
    """People pick passwords: low entropy and sometimes one lower-case word (``sunshine``).

    Refused: placeholders, words documentation puts there (``required``), code
    references (``config.password``), and sentences (``see the vault``).
    """
    value = value.strip()
    if len(value) < 4 or is_placeholder(value):
        return False
    if " " in value:
        return _passphrase(value)
    lowered = value.lower().strip(".,;:!?")
    if lowered in _DOC_VALUES:
        return False
    if "." in value and _CODE_REFERENCE.match(value) and not any(c.isdigit() for c in value):
        return False
    if value.endswith(")") and _CODE_REFERENCE.match(value):
        return False
    if re.fullmatch(r"[A-Z][A-Z0-9_]+", value):  # another variable's NAME
        return False
    return len(value) >= 6 or _char_classes(value) >= 2


# Endings of words that describe a value rather than being one ("hashed", "encrypting",
# "configurable", "rotation"): refused after "password:", where prose puts them.
_DESCRIPTIVE = re.compile(r"[a-z]{2,}(?:ed|ing|able|ible|ion|ions|ment|ness|ity)")


def _password_colon(value: str) -> bool:
    """:func:`_password`, but a single descriptive English word does not count."""
    stripped = value.strip()
    if " " not in stripped and _DESCRIPTIVE.fullmatch(stripped.lower()):
        return False
    return _password(value)


def _passphrase(value: str) -> bool:
    """Several words chosen as a secret (``correct horse battery staple``), not a sentence."""
    value = value.strip()
    if len(value) < 12 or is_placeholder(value) or _is_sentence(value):
        return False
    words = value.split()
    if len(words) > 8:
        return False
    return len(words) >= 3 or _char_classes(value) >= 2


def _token(value: str) -> bool:
    """Machine-made secrets: long, mixed, random-looking."""
    if len(value) < 16 or " " in value or is_placeholder(value):
        return False
    if _is_code_reference(value):
        return False
    if re.fullmatch(r"[a-z]+(?:[-_][a-z]+)*", value):  # a-slug-of-words
        return False
    if re.fullmatch(r"[0-9a-fA-F]+", value):
        return len(value) >= 16 and shannon_entropy(value) >= 3.0
    return _char_classes(value) >= 2 and shannon_entropy(value) >= 3.0


def _not_placeholder(value: str) -> bool:
    return not is_placeholder(value) and len(value) >= 3


def _high_entropy(value: str) -> bool:
    return _char_classes(value) >= 2 and shannon_entropy(value) >= 3.0


def _aws_secret(value: str) -> bool:
    # 40 base64 characters from a random key: mixed case and digits (or / +).
    return _char_classes(value) == 3 and shannon_entropy(value) >= 4.0


def _url_user_token(value: str) -> bool:
    # A URL's user part alone (https://TOKEN@host): a token, never a person's name.
    return len(value) >= 20 and _token(value)


def _block_lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip()]


def _block_password(value: str) -> bool:
    # A YAML value on the lines after its key: one line is a password or passphrase.
    lines = _block_lines(value)
    return len(lines) == 1 and _password(lines[0])


def _block_token(value: str) -> bool:
    # One token, or a long one folded over several lines (no spaces inside a line).
    lines = _block_lines(value)
    if not lines or any(" " in line for line in lines):
        return False
    return _token("".join(lines))


CHECKS: dict[str, Check] = {
    "block_password": _block_password,
    "block_token": _block_token,
    "jwt": _jwt,
    "discord_bot_token": _discord_bot_token,
    "basic_credentials": _basic_credentials,
    "password": _password,
    "password_colon": _password_colon,
    "passphrase": _passphrase,
    "token": _token,
    "not_placeholder": _not_placeholder,
    "high_entropy": _high_entropy,
    "aws_secret": _aws_secret,
    "url_user_token": _url_user_token,
}
"""Check name (as written in a rule file) -> function."""
