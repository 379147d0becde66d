"""Seeded mutations of real feeds and mails: the hostile inputs intake must survive.

Each mutator takes the seed bytes and a :class:`random.Random` and returns new bytes;
:func:`mutate_feed` and :func:`mutate_mail` pick one or more at random. Mutations are
reproducible from ``(seed file, index, base seed)``. Used by ``python -m
bench.fuzz_intake`` (the 1,000 + 1,000 run) and by ``tests/test_poison_pills.py`` (a
smaller run in the suite).

The shapes come from what broke intake before (issue 12): deeply nested JSON and
XML, non-UTF-8 bytes in a Message-ID, lying charsets, broken MIME, plus plain byte
noise (flips, truncation, insertion, duplication).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = [
    "FEED_MUTATORS",
    "MAIL_MUTATORS",
    "feed_seeds",
    "mail_seeds",
    "mutate_feed",
    "mutate_mail",
]

Mutator = Callable[[bytes, random.Random], bytes]

_NOISE = (
    b"\x00",
    b"\xff",
    b"\xfe",
    b"\xc3",
    b"\xe2\x80",
    b"\r",
    b"\n",
    b"<",
    b"&",
    b"]]>",
    b"\x1b",
)


# -- generic byte noise ---------------------------------------------------------------


def flip_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 40)):
        if out:
            out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(max(1, len(data)))]


def insert_noise(data: bytes, rng: random.Random) -> bytes:
    out = data
    for _ in range(rng.randint(1, 30)):
        at = rng.randrange(len(out) + 1)
        out = out[:at] + rng.choice(_NOISE) * rng.randint(1, 4) + out[at:]
    return out


def duplicate_slice(data: bytes, rng: random.Random) -> bytes:
    if len(data) < 2:
        return data * 50
    start = rng.randrange(len(data) - 1)
    end = min(len(data), start + rng.randint(1, 400))
    return data[:end] + data[start:end] * rng.randint(2, 200) + data[end:]


def delete_slice(data: bytes, rng: random.Random) -> bytes:
    if len(data) < 2:
        return b""
    start = rng.randrange(len(data) - 1)
    return data[:start] + data[start + rng.randint(1, 2000) :]


_GENERIC: tuple[Mutator, ...] = (flip_bytes, truncate, insert_noise, duplicate_slice, delete_slice)


# -- feeds ----------------------------------------------------------------------------


def deep_json(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice([2_000, 50_000, 200_000])
    if rng.random() < 0.5:
        return b"[" * depth + b"]" * depth
    inner = b'{"a":' * depth + b"1" + b"}" * depth
    return b'{"version":"https://jsonfeed.org/version/1.1","title":"x","items":[' + inner + b"]}"


def deep_xml(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice([500, 5_000, 50_000])
    tag = rng.choice([b"div", b"item", b"x", b"b"])
    nest = b"<" + tag + b">"
    close = b"</" + tag + b">"
    body = nest * depth + b"deep" + close * depth
    if rng.random() < 0.5:
        return (
            b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item>'
            b"<title>deep</title><link>http://127.0.0.1:9/deep</link><description><![CDATA["
            + body
            + b"]]></description></item></channel></rss>"
        )
    return b'<?xml version="1.0"?><rss version="2.0"><channel>' + body + b"</channel></rss>"


def json_wrong_types(data: bytes, rng: random.Random) -> bytes:
    value = rng.choice(
        [
            b'"items"',
            b"[1, 2, null]",
            b'[{"id": {"x": 1}, "url": 5, "title": ["a"], "content_html": 7}]',
            b'[{"id": "1", "tags": "notalist", "authors": "x", "date_published": 3}]',
            b'[{"id": "1", "attachments": [1, "x", {"url": []}], "author": []}]',
            b"{}",
        ]
    )
    return b'{"version":"https://jsonfeed.org/version/1.1","title":["t"],"items":' + value + b"}"


def lying_encoding(data: bytes, rng: random.Random) -> bytes:
    label = rng.choice([b"utf-16", b"utf-32", b"utf-7", b"x-bogus", b"ebcdic-cp-us", b"gb2312"])
    text = re.sub(rb"encoding=['\"][^'\"]*['\"]", b'encoding="' + label + b'"', data, count=1)
    if text == data:
        text = b'<?xml version="1.0" encoding="' + label + b'"?>' + data
    return text


def entity_bomb(data: bytes, rng: random.Random) -> bytes:
    levels = rng.randint(3, 9)
    lines = [b'<!ENTITY e0 "lol">']
    for n in range(1, levels):
        lines.append(b'<!ENTITY e%d "' % n + (b"&e%d;" % (n - 1)) * 10 + b'">')
    return (
        b'<?xml version="1.0"?><!DOCTYPE rss [' + b"".join(lines) + b']><rss version="2.0">'
        b"<channel><title>&e%d;</title><item><title>x</title></item></channel></rss>" % (levels - 1)
    )


def hostile_fields(data: bytes, rng: random.Random) -> bytes:
    link = rng.choice(
        [
            b"javascript:alert(1)",
            b"http://[::1",
            b"http://%%%",
            b"file:///etc/passwd",
            b"http://127.0.0.1:9/" + b"a" * 10_000,
            b"",
            b"\xff\xfe",
        ]
    )
    date = rng.choice([b"yesterday", b"9999-99-99", b"Mon, 32 Foo 20999 99:99:99 +9999", b"0"])
    guid = rng.choice([b"", b"1", b"\x00", b"x" * 5_000])
    body = rng.choice(
        [
            b"<![CDATA[<pre>" + b"<br>" * 5_000 + b"</pre>]]>",
            b"<![CDATA[<table>" + b"<tr><td><table>" * 300 + b"]]>",
            b"&#0; &#xD800; &#99999999; &bogus;",
            b"",
        ]
    )
    item = (
        b"<item><title>"
        + guid[:20]
        + b"</title><link>"
        + link
        + b"</link><guid>"
        + guid
        + b"</guid><pubDate>"
        + date
        + b"</pubDate><description>"
        + body
        + b"</description></item>"
    )
    items = item * rng.randint(1, 20)
    return (
        b'<?xml version="1.0"?><rss version="2.0"><channel><title>h</title>'
        + items
        + (b"</channel></rss>" if rng.random() < 0.7 else b"")
    )


def many_entries(data: bytes, rng: random.Random) -> bytes:
    count = rng.choice([500, 2_000])
    items = b"".join(
        b"<item><title>e%d</title><guid>urn:x:%d</guid></item>" % (n, n) for n in range(count)
    )
    return (
        b'<?xml version="1.0"?><rss version="2.0"><channel><title>m</title>'
        + items
        + (b"</channel></rss>")
    )


def not_a_feed(data: bytes, rng: random.Random) -> bytes:
    return rng.choice(
        [
            b"<html><body><h1>Hello</h1></body></html>",
            b"",
            b"\x00" * 1000,
            b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(500)),
            b"null",
            b"{",
            b'{"version": 5}',
            b"<?xml version='1.0'?>",
        ]
    )


FEED_MUTATORS: tuple[Mutator, ...] = (
    *_GENERIC,
    deep_json,
    deep_xml,
    json_wrong_types,
    lying_encoding,
    entity_bomb,
    hostile_fields,
    many_entries,
    not_a_feed,
)


def mutate_feed(data: bytes, rng: random.Random) -> bytes:
    """One to three mutations of a feed document."""
    for _ in range(rng.randint(1, 3)):
        data = rng.choice(FEED_MUTATORS)(data, rng)
    return data


# -- mails ----------------------------------------------------------------------------

_HEADERS = (b"Message-ID", b"Subject", b"From", b"List-Id", b"List-Unsubscribe", b"Date", b"To")


def _set_header(data: bytes, name: bytes, value: bytes) -> bytes:
    pattern = re.compile(rb"(?im)^" + re.escape(name) + rb":[^\r\n]*(\r?\n[ \t][^\r\n]*)*")
    line = name + b": " + value
    if pattern.search(data):
        return pattern.sub(lambda _m: line, data, count=1)
    return line + b"\n" + data


def as_newsletter(data: bytes, rng: random.Random) -> bytes:
    """Give the mail list headers, so the whole body path runs, not only the classifier."""
    return _set_header(data, b"List-Unsubscribe", b"<https://list.example/u?id=1>")


def eight_bit_header(data: bytes, rng: random.Random) -> bytes:
    name = rng.choice(_HEADERS)
    junk = bytes(rng.randrange(0x80, 0x100) for _ in range(rng.randint(1, 12)))
    value = rng.choice([b"<" + junk + b"@example.org>", junk, b"=?utf-8?q?" + junk + b"?="])
    return _set_header(data, name, value)


def encoded_word_garbage(data: bytes, rng: random.Random) -> bytes:
    value = rng.choice(
        [
            b"=?utf-8?B?!!!notbase64?=",
            b"=?bogus-charset?Q?caf=E9?=",
            b"=?utf-8?Q?=ZZ=?=",
            b"=?" * 500,
            b"=?utf-16?B?2D3=?=",
            b"=?utf-8?b?" + b"A" * 30_001 + b"?=",
        ]
    )
    return _set_header(data, rng.choice(_HEADERS), value)


def bad_content_type(data: bytes, rng: random.Random) -> bytes:
    value = rng.choice(
        [
            b"multipart/alternative",
            b'multipart/mixed; boundary=""',
            b'multipart/mixed; boundary="' + b"x" * 5000 + b'"',
            b"text/html; charset=x-nonexistent",
            b"text/html; charset=utf-7",
            b"text/html; charset=utf-16",
            b"text/plain; charset=\xff\xfe",
            b"message/rfc822",
            b"application/octet-stream",
            b'text/html; charset="',
        ]
    )
    return _set_header(data, b"Content-Type", value)


def bad_transfer_encoding(data: bytes, rng: random.Random) -> bytes:
    value = rng.choice([b"base64", b"quoted-printable", b"x-uuencode", b"8bit", b"\xff"])
    return _set_header(data, b"Content-Transfer-Encoding", value)


def deep_multipart(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice([50, 500, 2_000])
    head = b"Message-ID: <deep@x>\nList-Id: <deep.x>\nSubject: deep\nMIME-Version: 1.0\n"
    parts = [head]
    for n in range(depth):
        parts.append(b'Content-Type: multipart/mixed; boundary="b%d"\n\n--b%d\n' % (n, n))
    parts.append(b"Content-Type: text/html\n\n<p>deep</p>\n")
    for n in reversed(range(depth)):
        parts.append(b"--b%d--\n" % n)
    return b"".join(parts)


def deep_html(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice([500, 5_000, 50_000])
    html = b"<div>" * depth + b"text" + b"</div>" * depth
    return (
        b"Message-ID: <deephtml@x>\nList-Id: <d.x>\nSubject: deep html\nMIME-Version: 1.0\n"
        b"Content-Type: text/html; charset=utf-8\n\n" + html
    )


def long_header(data: bytes, rng: random.Random) -> bytes:
    return _set_header(data, rng.choice(_HEADERS), b"x" * rng.choice([1_000, 100_000]))


def no_body_split(data: bytes, rng: random.Random) -> bytes:
    return re.sub(rb"\r?\n\r?\n", b"\n", data, count=1)


MAIL_MUTATORS: tuple[Mutator, ...] = (
    *_GENERIC,
    eight_bit_header,
    encoded_word_garbage,
    bad_content_type,
    bad_transfer_encoding,
    deep_multipart,
    deep_html,
    long_header,
    no_body_split,
)


def mutate_mail(data: bytes, rng: random.Random) -> bytes:
    """Newsletter headers (usually), then one to three mutations of a raw mail."""
    if rng.random() < 0.8:
        data = as_newsletter(data, rng)
    for _ in range(rng.randint(1, 3)):
        data = rng.choice(MAIL_MUTATORS)(data, rng)
    return data


# -- seeds ----------------------------------------------------------------------------


def _files(folder: Path, patterns: Sequence[str]) -> list[Path]:
    found: list[Path] = []
    for pattern in patterns:
        found += sorted(p for p in folder.glob(pattern) if p.is_file())
    return found


def feed_seeds(shared: Path, *, limit_bytes: int = 400_000) -> list[bytes]:
    """The shared real feeds (rss-parser inputs and feedparser's well-formed RSS/Atom)."""
    feeds = shared / "feeds"
    paths = _files(feeds / "rss-parser_tests" / "input", ["*"])
    paths += _files(feeds / "feedparser_tests" / "wellformed" / "rss", ["*.xml"])[:40]
    paths += _files(feeds / "feedparser_tests" / "wellformed" / "atom10", ["*.xml"])[:40]
    return [p.read_bytes() for p in paths if p.stat().st_size <= limit_bytes]


def mail_seeds(shared: Path, *, limit_bytes: int = 400_000) -> list[bytes]:
    """The shared real mails (SpamScope's test mails), smaller than ``limit_bytes``."""
    paths = _files(shared / "emails" / "mails", ["*.eml"])
    return [p.read_bytes() for p in paths if p.stat().st_size <= limit_bytes]
