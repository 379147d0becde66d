"""trafilatura is never run by two threads at once: it shares an lxml parser and
compiled XPath expressions between calls, and concurrent use corrupted memory
("free(): invalid pointer" in scans, see sources.fulltext)."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import pytest
import trafilatura

from signaldesk.sources import fulltext


def test_concurrent_extractions_take_turns(
    shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = [
        gzip.decompress(p.read_bytes())
        for p in sorted((shared_data / "articles" / "html").glob("*.html.gz"))[:24]
    ]
    real = trafilatura.bare_extraction
    state = {"inside": 0, "most": 0, "calls": 0}
    guard = threading.Lock()

    def counting(*args: object, **kwargs: object) -> object:
        with guard:
            state["inside"] += 1
            state["calls"] += 1
            state["most"] = max(state["most"], state["inside"])
        try:
            return real(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            with guard:
                state["inside"] -= 1

    monkeypatch.setattr(fulltext.trafilatura, "bare_extraction", counting)
    start = threading.Barrier(6)
    texts: list[str] = []

    def worker(offset: int) -> None:
        start.wait()
        for page in pages[offset::6]:
            article = fulltext.extract_article(page, "https://example.com/a")
            if article is not None:
                texts.append(article.text_markdown)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert state["calls"] == len(pages)
    assert state["most"] == 1
    assert len(texts) >= len(pages) // 2  # real pages, real articles
