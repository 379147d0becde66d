"""Bytes to text for untrusted input: declared charsets that lie, missing ones, BOMs, size caps.

Every adapter reads files someone else wrote. The rule here: never raise on odd bytes, and
never turn text that *can* be read correctly into mojibake.
"""

from __future__ import annotations

import codecs
import logging
import os
import re
from pathlib import Path

from charset_normalizer import from_bytes

from signaldesk.sources.errors import SourceError
from signaldesk.vault import printable_path, utf8_name

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FileTooLargeError",
    "decode_bytes",
    "is_hidden_name",
    "looks_binary",
    "normalise_charset",
    "read_capped",
    "walk_files",
]

logger = logging.getLogger(__name__)

# Drop files and clippings are text; 5 MB is far beyond any real one and bounds memory.
DEFAULT_MAX_BYTES = 5_000_000


class FileTooLargeError(SourceError):
    """A file is larger than the configured cap; it is reported, never read whole."""


# Declared names mapped to the codec that actually reads what senders produce under them:
# mail clients label GBK text "gb2312", Windows text "iso-8859-1", and so on (the WHATWG
# Encoding Standard makes the same substitutions).
_CHARSET_ALIASES: dict[str, str] = {
    "gb2312": "gb18030",
    "gb_2312-80": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "euc-cn": "gb18030",
    "cp936": "gb18030",
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "l1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "ansi_x3.4-1968": "cp1252",
    "iso-8859-9": "cp1254",
    "iso-8859-11": "cp874",
    "tis-620": "cp874",
    "ks_c_5601-1987": "cp949",
    "euc-kr": "cp949",
    "big5": "big5hkscs",
    "shift_jis": "cp932",
    "x-sjis": "cp932",
    "windows-31j": "cp932",
}

_NO_CHARSET = frozenset({"", "unknown-8bit", "x-unknown", "unknown", "default", "none", "8bit"})

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def normalise_charset(name: str | None) -> str | None:
    """Map a declared charset label to a Python codec name, or ``None`` if unusable."""
    if name is None:
        return None
    label = name.strip().strip("\"'").lower()
    if label in _NO_CHARSET:
        return None
    label = _CHARSET_ALIASES.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def _is_single_byte(codec: str) -> bool:
    return codec.startswith(("cp12", "iso8859", "latin", "koi8", "mac-", "cp8", "cp4"))


def _try(data: bytes, codec: str | None) -> str | None:
    if codec is None:
        return None
    try:
        return data.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def decode_bytes(
    data: bytes, declared: str | None = None, *, hints: tuple[str | None, ...] = ()
) -> tuple[str, str]:
    """Decode ``data`` to text; returns ``(text, codec_used)``. Never raises.

    Order: byte-order mark; the declared charset (mapped through the usual aliases), except
    that valid non-ASCII UTF-8 beats a declared single-byte charset, which would decode
    anything into mojibake; UTF-8; ``hints`` (e.g. an HTML ``<meta charset>``);
    charset-normalizer's best guess; finally cp1252 with replacement characters.
    """
    for bom, bom_codec in _BOMS:
        if data.startswith(bom):
            text = _try(data, bom_codec)
            if text is not None:
                return text, bom_codec
    codec = normalise_charset(declared)
    if codec is not None and _is_single_byte(codec) and not data.isascii():
        utf8 = _try(data, "utf-8")
        if utf8 is not None:
            return utf8, "utf-8"
    for candidate in (codec, "utf-8", *(normalise_charset(h) for h in hints)):
        decoded = _try(data, candidate)
        if decoded is not None:
            return decoded, candidate or "utf-8"
    lenient = _mostly_utf8(data)
    if lenient is not None:
        return lenient, "utf-8"
    guess = _guess(data)
    if guess is not None:
        return guess
    logger.debug("undecodable bytes (declared %r); using cp1252 with replacements", declared)
    return data.decode("cp1252", errors="replace"), "cp1252"


def _mostly_utf8(data: bytes) -> str | None:
    """UTF-8 with a stray broken sequence (seen in real mail: one mangled byte in 8 kB).

    Trigger: a part declared UTF-8 fails strict decoding on a single bad byte. Why: any
    single-byte or CJK guess would then garble every other character. Outcome: decode as
    UTF-8 with a replacement character when the bad bytes are a tiny share of the non-ASCII.
    """
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    high = sum(1 for b in data if b >= 0x80)
    return text if high and bad * 100 <= high else None


# When charset-normalizer finds several codecs equally plausible (Latin-1 text reads the
# same in cp1250 and cp1252), the one most mail is written in wins.
_PREFERRED = ("utf_8", "cp1252", "latin_1", "iso8859_15", "cp1251", "koi8_r", "gb18030")


def _guess(data: bytes) -> tuple[str, str] | None:
    matches = list(from_bytes(data[:200_000]))
    if not matches:
        return None
    best = matches[0]
    ties = [
        m for m in matches if m.chaos <= best.chaos + 0.001 and m.coherence >= best.coherence - 0.01
    ]
    ranked = sorted(
        ties,
        key=lambda m: _PREFERRED.index(m.encoding) if m.encoding in _PREFERRED else 99,
    )
    for match in ranked:
        text = _try(data, match.encoding)
        if text is not None:
            return text, match.encoding
    return None


def looks_binary(data: bytes) -> bool:
    """True for bytes that are not text in any encoding we read (NULs outside UTF-16/32)."""
    head = data[:8192]
    if any(head.startswith(bom) for bom, _ in _BOMS):
        return False
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if b < 9 or 13 < b < 32)
    return bool(head) and controls / len(head) > 0.1


def read_capped(path: Path, max_bytes: int) -> bytes:
    """Read at most ``max_bytes`` of ``path``; a bigger file raises :class:`FileTooLargeError`.

    Reads one byte past the cap instead of trusting ``stat``, which a growing file can outrun.
    """
    with path.open("rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLargeError(
            f"{path.name} is larger than {max_bytes} bytes; not read",
            hint="raise max_bytes in the config if this file is wanted",
        )
    return data


_HIDDEN = re.compile(r"^\.|\.(tmp|part|swp|crdownload)$|~$", re.IGNORECASE)


def is_hidden_name(name: str) -> bool:
    """Dotfiles, editor swap files and temporary/partial downloads are never intake."""
    return bool(_HIDDEN.search(name))


def walk_files(root: Path, *, max_depth: int = 8) -> list[Path]:
    """Every regular file under ``root`` (sorted), skipping hidden names and symlinks.

    A name that is not UTF-8 is skipped with a warning (see :func:`~vault.utf8_name`).
    Symlinks below ``root`` are skipped outright: a link can lead out of the folder, and a
    link into it would only duplicate a file that is read anyway. ``root`` itself may be a
    link (a person's choice in the config).
    """
    found: list[Path] = []
    if not root.is_dir():
        return found
    root_depth = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        for name in [*dirnames, *filenames]:
            if not utf8_name(name) and not is_hidden_name(name):
                # Its path could be neither recorded nor moved: skipped, and said.
                logger.warning(
                    "%s: its name is not valid UTF-8: rename it; skipped",
                    printable_path(str(here / name)),
                )
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not is_hidden_name(d)
            and utf8_name(d)
            and not (here / d).is_symlink()
            and len(here.parts) - root_depth < max_depth
        )
        for name in sorted(filenames):
            path = here / name
            if (
                is_hidden_name(name)
                or not utf8_name(name)
                or path.is_symlink()
                or not path.is_file()
            ):
                continue
            found.append(path)
    return found
