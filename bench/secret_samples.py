"""Generated secrets for measuring the scrubber: one valid-shaped token per rule and seed.

Tokens come from each rule's own regex, not from shapes written by hand: the regex is
parsed (Python's ``re`` parser) and walked, choosing a random branch, repeat count and
character at each step. A sample counts as valid for its rule only when that rule, on
its own, redacts it in the document it is placed in (so a draw that an entropy
threshold, a stopword or a check refuses is drawn again, as a real token of that
vendor would pass them). Recall is then measured with the whole scrubber: every rule
together, in their real order.

Seeds: even seeds are the tuning half, odd seeds the held-out half (fixed here, once).

Also here: the hand-made cases of issue 12 (shapes people write, not vendor formats),
and real private keys made with ``ssh-keygen`` and ``openssl`` at run time.
"""

from __future__ import annotations

import json
import random
import re
import re._constants as sre
import re._parser as sre_parse
import shutil
import string
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signaldesk.retrieval.scrub_rules import Rule, RuleSet
from signaldesk.retrieval.scrubber import Scrubber

__all__ = [
    "HAND_CASES",
    "Sample",
    "leaked",
    "real_private_keys",
    "rule_samples",
    "sample_regex",
]

# Characters a sample draws from where the regex allows (nearly) anything.
_UNIVERSE = string.ascii_letters + string.digits + "-_./+=:@!#%&*?~"
_WORD = string.ascii_letters + string.digits + "_"
_SPACE = " \t"
_CATEGORIES: dict[Any, str] = {
    sre.CATEGORY_DIGIT: string.digits,
    sre.CATEGORY_NOT_DIGIT: string.ascii_letters + "-_.",
    sre.CATEGORY_WORD: _WORD,
    sre.CATEGORY_NOT_WORD: " -./:=",
    sre.CATEGORY_SPACE: _SPACE,
    sre.CATEGORY_NOT_SPACE: _UNIVERSE,
}
# Unbounded repeats ({40,} or +) draw up to this many more than their minimum.
_OPEN_REPEAT = 24


class _Walker:
    def __init__(self, rng: random.Random, ignorecase: bool) -> None:
        self.rng = rng
        self.out: list[str] = []
        self.groups: dict[int, str] = {}
        self.ignorecase = [ignorecase]

    def _case(self, char: str) -> str:
        if self.ignorecase[-1] and char.isalpha() and self.rng.random() < 0.5:
            return char.swapcase()
        return char

    def _class(self, items: list[tuple[Any, Any]]) -> str:
        chars: set[str] = set()
        negate = False
        for op, arg in items:
            if op is sre.NEGATE:
                negate = True
            elif op is sre.LITERAL:
                chars.add(chr(arg))
            elif op is sre.RANGE:
                lo, hi = arg
                chars.update(chr(c) for c in range(lo, min(hi, lo + 300) + 1))
            elif op is sre.CATEGORY:
                chars.update(_CATEGORIES.get(arg, ""))
        if self.ignorecase[-1]:
            chars |= {c.swapcase() for c in chars if c.isascii()}
        if negate:
            pool = [c for c in _UNIVERSE if c not in chars]
        else:
            printable = [c for c in chars if c.isprintable() and c.isascii()]
            pool = printable or sorted(chars)
        return self.rng.choice(sorted(pool))

    def walk(self, items: Any) -> None:
        for op, arg in items:
            self._item(op, arg)

    def _ends_in_word(self) -> bool:
        return bool(self.out) and (self.out[-1][-1:].isalnum() or self.out[-1][-1:] == "_")

    def _item(self, op: Any, arg: Any) -> None:
        rng = self.rng
        out = self.out
        if op is sre.LITERAL:
            out.append(self._case(chr(arg)))
        elif op is sre.NOT_LITERAL:
            out.append(rng.choice([c for c in _UNIVERSE if c != chr(arg)]))
        elif op is sre.ANY:
            out.append(rng.choice(string.ascii_letters + string.digits))
        elif op is sre.IN:
            out.append(self._class(arg))
        elif op is sre.BRANCH:
            self.walk(rng.choice(arg[1]))
        elif op is sre.SUBPATTERN:
            group, add_flags, del_flags, items = arg
            if add_flags & re.IGNORECASE:
                self.ignorecase.append(True)
            elif del_flags & re.IGNORECASE:
                self.ignorecase.append(False)
            else:
                self.ignorecase.append(self.ignorecase[-1])
            mark = len(out)
            self.walk(items)
            self.ignorecase.pop()
            if group is not None:
                self.groups[group] = "".join(out[mark:])
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, items = arg
            top = low + _OPEN_REPEAT if high is sre.MAXREPEAT else high
            for _ in range(rng.randint(low, max(low, top))):
                self.walk(items)
        elif op is sre.GROUPREF:
            out.append(self.groups.get(arg, ""))
        elif op is sre.GROUPREF_EXISTS:
            group, yes, no = arg
            self.walk(yes if group in self.groups else (no or []))
        elif op is sre.ATOMIC_GROUP:
            self.walk(arg)
        elif op is sre.AT and arg is sre.AT_BOUNDARY and self._ends_in_word():
            # A word boundary after a word character: end the word. (Other anchors and
            # look-arounds emit nothing; running the rule on the sample checks them.)
            out.append(" ")


def sample_regex(pattern: re.Pattern[str], rng: random.Random) -> str:
    """One random string drawn from ``pattern``'s structure (not yet checked against it)."""
    parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    walker = _Walker(rng, bool(parsed.state.flags & re.IGNORECASE))
    walker.walk(parsed)
    return "".join(walker.out)


@dataclass(frozen=True, slots=True)
class Sample:
    """A document holding one generated secret of ``rule``."""

    rule: str
    document: str
    secret: str
    token: str = ""
    """What was drawn from the regex (the document holds it in a line of context)."""


# Where a generated token is put: after a space, as the last thing on its line.
_CONTEXTS = ("Notes from the call:\n{s}\nThat is all.\n", "- see {s}\n")


def _own_secret(scrubber: Scrubber, document: str) -> str | None:
    """The one secret ``scrubber`` (a single rule) finds in ``document``, if exactly one."""
    spans = scrubber.spans(document)
    if len(spans) != 1:
        return None
    start, end, _ = spans[0]
    return document[start:end]


def rule_samples(
    rules: RuleSet, rule: Rule, seed: int, *, count: int, attempts: int = 60
) -> tuple[list[Sample], int]:
    """``count`` valid samples of ``rule`` (fewer when draws keep failing) and the draws made."""
    rng = random.Random(f"{rule.origin}:{rule.name}:{rule.regex.pattern}:{seed}")
    alone = Scrubber(RuleSet((rule,), rules.gitleaks_commit, rules.global_allow))
    samples: list[Sample] = []
    draws = 0
    while len(samples) < count and draws < count * attempts:
        draws += 1
        token = sample_regex(rule.regex, rng)
        if rule.lowered:
            token = "".join(c.upper() if rng.random() < 0.3 else c for c in token)
        if rule.keywords and not any(k in token.lower() for k in rule.keywords):
            # The rule wants one of its keywords nearby (gitleaks' prefilter does too):
            # a real token of this kind sits next to its vendor's name.
            token = f"{rng.choice(rule.keywords)} {token}"
        document = rng.choice(_CONTEXTS).format(s=token)
        secret = _own_secret(alone, document)
        if secret is None or len(secret) < 4:
            continue
        samples.append(Sample(rule.name, document, secret, token))
    return samples, draws


_MARKER = re.compile(r"\[REDACTED:[\w-]+\]")


def leaked(secret: str, output: str, document: str = "", window: int = 10) -> bool:
    """Whether any ``window`` characters in a row of ``secret`` survive in ``output``.

    Redaction markers are taken out of ``output`` first (they hold the rule's name,
    which a secret may share a few characters with), and so are windows that the rest
    of ``document`` holds anyway (runs of spaces in an indented YAML block).
    """
    output = _MARKER.sub("\x00", output)
    rest = document.replace(secret, "\x00")
    if len(secret) <= window:
        return secret in output
    windows = {secret[i : i + window] for i in range(len(secret) - window + 1)}
    return any(w in output for w in windows if w not in rest and w.strip())


# --- hand-made cases (issue 12, item 2) -------------------------------------------------


def _rs(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


@dataclass(frozen=True, slots=True)
class HandCase:
    """A shape people write: ``template`` holds ``{secret}``, built from ``secret_template``."""

    name: str
    template: str
    alphabet: str = string.ascii_letters + string.digits
    length: int = 24
    prefix: str = ""
    extras: dict[str, tuple[str, int]] = field(default_factory=dict)
    secret_template: str = "{s}"

    def make(self, rng: random.Random) -> tuple[str, str]:
        values = {name: _rs(rng, alphabet, n) for name, (alphabet, n) in self.extras.items()}
        values["s"] = self.prefix + _rs(rng, self.alphabet, self.length)
        secret = self.secret_template.format(**values)
        return self.template.format(secret=secret, **values), secret


_LOWER = string.ascii_lowercase
_HEX = "0123456789abcdef"
_B64 = string.ascii_letters + string.digits + "+/"
_ALNUM = string.ascii_letters + string.digits
_UPPER_ALNUM = string.ascii_uppercase + string.digits

HAND_CASES: tuple[HandCase, ...] = (
    HandCase("lowercase password (env)", "DB_PASSWORD={secret}\n", _LOWER, 10),
    HandCase("lowercase password (yaml)", "database:\n  password: {secret}\n", _LOWER, 9),
    HandCase("lowercase password (quoted)", 'password = "{secret}"\n', _LOWER, 8),
    HandCase("lowercase password (ini)", "[client]\nuser = app\npassword = {secret}\n", _LOWER, 7),
    HandCase(
        "lowercase passphrase",
        "passphrase: {secret}\n",
        _LOWER,
        7,
        extras={"a": (_LOWER, 6), "b": (_LOWER, 8), "c": (_LOWER, 5)},
        secret_template="{s} {a} {b} {c}",
    ),
    HandCase(
        "lowercase passphrase (quoted)",
        'GPG_PASSPHRASE="{secret}"\n',
        _LOWER,
        6,
        extras={"a": (_LOWER, 7), "b": (_LOWER, 5), "c": (_LOWER, 6)},
        secret_template="{s} {a} {b} {c}",
    ),
    HandCase("yaml value on next line", "db:\n  password:\n    {secret}\n  host: db\n", _ALNUM, 16),
    HandCase("yaml lowercase on next line", "password:\n  {secret}\n", _LOWER, 10),
    HandCase("yaml secret on next line", "api_token:\n  {secret}\n", _ALNUM, 32),
    HandCase(
        "yaml block scalar", "service:\n  api_key: |\n    {secret}\n  region: eu\n", _ALNUM, 40
    ),
    HandCase("yaml folded scalar", "client_secret: >-\n  {secret}\nname: app\n", _B64, 44),
    HandCase("yaml password block", "password: |\n  {secret}\nuser: app\n", _LOWER, 12),
    HandCase("mysql -p", "mysql -u root -p{secret} -h db.internal app\n", _ALNUM, 14),
    HandCase("mysql -p quoted", "mysql -uroot -p'{secret}' shop\n", _ALNUM, 14),
    HandCase("mysql --password", "mysqldump --password={secret} shop > shop.sql\n", _ALNUM, 14),
    HandCase("curl -u", "curl -u admin:{secret} https://api.internal/v1/items\n", _ALNUM, 18),
    HandCase("curl --user", "curl --user 'deploy:{secret}' https://ci.internal/\n", _ALNUM, 18),
    HandCase("curl -u lowercase", "curl -s -u ci:{secret} https://ci.internal/\n", _LOWER, 10),
    HandCase(
        "aws secret key in prose",
        "The AWS secret key for the backup user is {secret} (rotate it).\n",
        _B64,
        40,
    ),
    HandCase(
        "aws secret access key in prose",
        "Use access key AKIA{k} with secret access key {secret} for staging.\n",
        _B64,
        40,
        extras={"k": (string.ascii_uppercase + "234567", 16)},
    ),
    HandCase(
        "pscale_tkn_ in prose", "Token is {secret}, keep it safe.\n", _ALNUM, 43, "pscale_tkn_"
    ),
    HandCase("pul- in prose", "my pulumi token {secret}.\n", _HEX, 40, "pul-"),
    HandCase("sgp_ in prose", "sourcegraph: {secret} (admin)\n", _HEX, 40, "sgp_"),
    HandCase("fo1_ in prose", "the token {secret} was rotated.\n", _ALNUM + "_-", 43, "fo1_"),
    HandCase(
        "dt0c01. in prose",
        "dynatrace {secret} expires soon.\n",
        _UPPER_ALNUM,
        24,
        "dt0c01.",
        extras={"t": (_UPPER_ALNUM, 64)},
        secret_template="{s}.{t}",
    ),
    HandCase(
        "xkeysib- in prose",
        "The key {secret} is for mail.\n",
        _HEX,
        64,
        "xkeysib-",
        extras={"t": (_ALNUM, 16)},
        secret_template="{s}-{t}",
    ),
    HandCase("pnu_ in prose", "prefect {secret} works.\n", _ALNUM, 36, "pnu_"),
    HandCase("shippo_live_ in prose", "shippo {secret}.\n", _HEX, 40, "shippo_live_"),
    HandCase("AKCp in prose", "artifactory key {secret} here.\n", _ALNUM, 69, "AKCp"),
    HandCase("EZAK in prose", "EasyPost: {secret}, live.\n", _ALNUM, 54, "EZAK"),
    HandCase("hex to *_KEY", "SIGNING_KEY={secret}\n", _HEX, 64),
    HandCase("base64 to *_KEY", "export ENCRYPTION_KEY='{secret}'\n", _B64, 43),
    HandCase("hex to *_TOKEN", "REFRESH_TOKEN: {secret}\n", _HEX, 40),
    HandCase("base64 to *_SECRET", "webhook_secret = {secret}\n", _B64, 32),
    HandCase("hex to *_SECRET (json)", '{{"app_secret": "{secret}"}}\n', _HEX, 32),
    HandCase("hex to *_KEY (yaml)", "  hmac_key: {secret}\n", _HEX, 32),
    HandCase("url user:password (https)", "clone https://bot:{secret}@git.example.org/r.git\n"),
    HandCase("url user:password (any scheme)", "upstream foo+ssh://ci:{secret}@host.example/x\n"),
    HandCase(
        "url user:password (ftp)", "mirror ftp://anon:{secret}@ftp.example.org/pub\n", length=12
    ),
    HandCase("url user:password (lowercase)", "see http://admin:{secret}@10.0.0.2/\n", _LOWER, 9),
    HandCase(
        "url token as user", "remote https://{secret}@github.com/org/repo.git\n", _ALNUM, 36, "ghp_"
    ),
    HandCase(
        "url opaque token as user", "remote https://{secret}@gitlab.example/org/repo\n", _ALNUM, 32
    ),
)


def hand_samples(seed: int, count: int) -> Iterator[tuple[HandCase, str, str]]:
    """``count`` (case, document, secret) per hand-made case for ``seed``."""
    for case in HAND_CASES:
        rng = random.Random(f"hand:{case.name}:{seed}")
        for _ in range(count):
            document, secret = case.make(rng)
            yield case, document, secret


# --- real private keys --------------------------------------------------------------------


def _run(args: list[str], cwd: Path) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True, timeout=600)


def _key_commands(folder: Path) -> dict[str, list[str]]:
    """Kind -> the command that writes that key to ``folder / kind``."""
    commands: dict[str, list[str]] = {}
    if shutil.which("ssh-keygen"):

        def keygen(kind: str, *args: str, passphrase: str = "") -> None:
            path = str(folder / kind)
            commands[kind] = ["ssh-keygen", "-q", *args, "-N", passphrase, "-C", "", "-f", path]

        for bits in (2048, 3072, 4096, 8192):
            keygen(f"openssh-rsa-{bits}", "-t", "rsa", "-b", str(bits))
        keygen("openssh-ecdsa-521", "-t", "ecdsa", "-b", "521")
        keygen("openssh-ed25519", "-t", "ed25519")
        keygen("openssh-ed25519-encrypted", "-t", "ed25519", passphrase="hunter22")
        keygen("pem-rsa-3072", "-t", "rsa", "-b", "3072", "-m", "PEM")
    if shutil.which("openssl"):
        genpkey = ["openssl", "genpkey", "-algorithm"]
        for kind, args in (
            ("pkcs8-rsa-4096", ["RSA", "-pkeyopt", "rsa_keygen_bits:4096"]),
            ("pkcs8-ec-p384", ["EC", "-pkeyopt", "ec_paramgen_curve:P-384"]),
            ("pkcs8-ed25519", ["ed25519"]),
            ("pkcs8-rsa-2048-encrypted", ["RSA", "-aes-256-cbc", "-pass", "pass:hunter22"]),
            ("rsa-2048-source", ["RSA"]),
        ):
            commands[kind] = [*genpkey, *args, "-out", str(folder / kind)]
        commands["sec1-ec-p256"] = [
            *("openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out"),
            str(folder / "sec1-ec-p256"),
        ]
    return commands


def real_private_keys(kinds: tuple[str, ...] | None = None) -> Iterator[tuple[str, str]]:
    """(kind, key text) for keys made now by ``ssh-keygen`` and ``openssl`` (none if absent).

    Kinds: OpenSSH RSA 2048/3072/4096/8192, ECDSA-521, Ed25519 (plain and encrypted), PEM
    (PKCS#1) RSA-3072 from ssh-keygen; PKCS#8 RSA-4096, EC P-384, Ed25519 and encrypted
    RSA-2048, PKCS#1 RSA-2048 plain and encrypted, SEC1 EC P-256 from openssl; a GCP-style
    service-account JSON. The keys are made concurrently (an 8192-bit RSA key alone can
    take a minute on a busy machine).
    """
    wanted = None if kinds is None else set(kinds)
    with tempfile.TemporaryDirectory(prefix="signaldesk-keys-") as tmp:
        folder = Path(tmp)
        commands = _key_commands(folder)
        traditional = {
            "pkcs1-rsa-2048": ["-traditional"],
            "pkcs1-rsa-2048-encrypted": ["-traditional", "-aes128", "-passout", "pass:hunter22"],
        }
        needed = set(commands)
        if wanted is not None:
            needed = {k for k in needed if k in wanted}
            if (
                wanted & {*traditional, "gcp-service-account-json"}
                and "rsa-2048-source" in commands
            ):
                needed.add("rsa-2048-source")
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda kind: _run(commands[kind], folder), sorted(needed)))
        made = {kind: (folder / kind).read_text() for kind in needed if kind != "rsa-2048-source"}
        source = folder / "rsa-2048-source"
        if source.exists():
            for kind, args in traditional.items():
                if wanted is None or kind in wanted:
                    path = folder / kind
                    _run(["openssl", "pkey", "-in", str(source), *args, "-out", str(path)], folder)
                    made[kind] = path.read_text()
            if wanted is None or "gcp-service-account-json" in wanted:
                account = {
                    "type": "service_account",
                    "project_id": "demo-project",
                    "private_key_id": "0" * 8 + "a1b2c3d4" * 4,
                    "private_key": made.get("pkcs8-rsa-4096", source.read_text()),
                    "client_email": "bot@demo-project.iam.gserviceaccount.com",
                    "client_id": "104" + "0" * 18,
                }
                made["gcp-service-account-json"] = json.dumps(account, indent=2)
        yield from sorted(made.items())


def key_lines(key: str) -> list[str]:
    """The lines of a key that must not survive: every body line of 8+ characters."""
    lines = []
    for raw in key.replace("\\n", "\n").splitlines():
        line = raw.strip().strip('",')
        if len(line) >= 8 and "PRIVATE KEY" not in line and re.fullmatch(r"[A-Za-z0-9+/=]+", line):
            lines.append(line)
    return lines
