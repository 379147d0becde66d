"""Query strings that must never reach FTS5 as syntax, shared by the query-builder
and retriever tests (SPEC section 7 lists the kinds)."""

from __future__ import annotations

HOSTILE = [
    '"unbalanced quote',
    'say "hello" and "goodbye"',
    "prefix*",
    "*",
    "-excluded word",
    "column:value",
    "text:secret section:foo",
    "cats AND dogs",
    "cats OR dogs NOT birds",
    "NEAR(a b, 3)",
    "NEAR(",
    "a NEAR b",
    "((unbalanced",
    "closing))",
    "^start",
    "🙂 emoji 🚀 query",
    "🙂🙂",
    "x" * 10_000,
    "word " * 2_000,
    "ctrl\x00chars\x07here\x1b[31m",
    "'; DROP TABLE chunks; --",
    "{text section}: foo",
    "a+b=c",
    "AND",
    "OR OR OR",
    "NOT",
    '""',
    "'",
    "C++ vs C#",
    "e.g. i.e.",
]
