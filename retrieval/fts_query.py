"""Turning a user's query into a safe FTS5 ``MATCH`` expression.

A query never reaches ``MATCH`` as typed: FTS5 gives meaning to quotes, ``*``,
``-``, ``:``, ``^``, parentheses and the words ``AND``/``OR``/``NOT``/``NEAR``,
and a stray one raises a syntax error. Instead the query is cut into word
tokens (the same CJK bigram preparation as the indexed side), each token is
written as a double-quoted string (FTS5's literal form, with ``"`` doubled) and
the tokens are joined with ``OR``: ranked any-word BM25. Requiring every word
("AND") loses badly on natural-language queries (SciFact nDCG@10 0.05-0.53
against 0.68, see docs/ranking.md); BM25 already ranks notes that have more of
the words, and the rarer ones, first.
"""

from __future__ import annotations

import unicodedata

from signaldesk.retrieval.errors import QueryError
from signaldesk.retrieval.fts_text import index_text

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_TERMS",
    "STOPWORDS",
    "build_match",
    "match_phrases",
    "query_terms",
]

# Bounds that keep a pasted page from turning into a 5,000-term OR (slow, and
# no better ranked). The first words carry the intent of a query.
MAX_QUERY_CHARS = 2000
MAX_TERMS = 64

# Common English function words. They carry next to no BM25 weight (their IDF
# is ~0) but match nearly every chunk, and FTS5 must score every match of an
# OR query: dropping them made SciFact keyword queries about twice as fast (12 vs
# 22 ms median) at equal nDCG@10 (docs/ranking.md). A query made only of them
# keeps them all.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves""".split()  # noqa: SIM905 - a word list reads better as text
)


def _is_token_char(ch: str) -> bool:
    # unicode61 keeps letters, numbers and private-use characters together;
    # combining marks are kept too so that Devanagari or Thai words are not
    # cut in the middle (FTS5 re-tokenises inside the quotes anyway).
    if ch.isalnum():
        return True
    return unicodedata.category(ch)[0] == "M"


def query_terms(query: str) -> list[str]:
    """The distinct word tokens of ``query``, in order, lower-cased.

    CJK runs become overlapping bigrams, exactly as :func:`index_text` prepares
    the indexed text, so a Chinese, Japanese or Korean phrase finds its note.
    """
    text = index_text(query[:MAX_QUERY_CHARS])
    terms: list[str] = []
    seen: set[str] = set()
    current: list[str] = []

    def flush() -> None:
        if current:
            term = "".join(current).casefold()
            current.clear()
            if term not in seen:
                seen.add(term)
                terms.append(term)

    for ch in text:
        if _is_token_char(ch):
            current.append(ch)
        else:
            flush()
        if len(terms) >= MAX_TERMS * 2:
            break
    flush()
    content = [t for t in terms if t not in STOPWORDS]
    return (content or terms)[:MAX_TERMS]


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


_OR = " OR "


def build_match(query: str) -> str | None:
    """A ``MATCH`` expression for ``query``: its terms quoted and joined with ``OR``.

    :returns: ``None`` when the query has no searchable word (only symbols or
        emoji): the keyword list is then empty, while the vector list may still
        find something.
    :raises QueryError: the query is empty or only whitespace.
    """
    if not query or not query.strip():
        raise QueryError("the search query is empty", hint="give a few words to search for")
    terms = query_terms(query)
    if not terms:
        return None
    return _OR.join(_quote(t) for t in terms)


def match_phrases(match: str) -> list[str]:
    """The quoted phrases of a :func:`build_match` expression, in order.

    A term is made of letters, digits and marks only (:func:`query_terms`), so
    the separator never occurs inside a phrase.
    """
    return match.split(_OR)
