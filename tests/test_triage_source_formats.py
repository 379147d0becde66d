"""The cache builder's readers of the fresh set's source formats (PEPs in reStructuredText,
Pelican headers, YAML vulnerability records), on small samples written for these tests."""

from __future__ import annotations

import trafilatura

from bench.triage.build_cache import render_page, render_stored
from bench.triage.source_formats import rst_to_markdown, split_header, vulnerability_page

_PEP = """PEP: 9999
Title: A sample proposal
Author: Someone <someone@example.org>,
        Someone Else
Status: Draft
Type: Standards Track
Created: 01-Jan-2030

.. canonical-doc:: :class:`~pkg.mod.Thing`

Abstract
========

This PEP adds ``thing()``, see :pep:`8` and `the docs <https://example.org/d>`__.

Details
-------

Run this::

    thing(1)
    thing(2)

Comments:
    A definition body, not code.

..
   Local Variables:
   End:
"""


def test_a_pep_renders_its_preamble_as_fields_and_its_body_as_the_page_text() -> None:
    page, title = render_page(
        _PEP, url="https://peps.example/9999/", site="PEPs", source_path="peps/pep-9999.rst"
    )
    assert title == "A sample proposal"
    html = page.decode()
    assert "<th>Author</th><td>Someone &lt;someone@example.org&gt;, Someone Else</td>" in html
    assert "<th>Status</th><td>Draft</td>" in html
    assert "<h2>Abstract</h2>" in html and "<h3>Details</h3>" in html
    assert "<pre><code>thing(1)\nthing(2)\n</code></pre>" in html
    assert '<a href="https://example.org/d">the docs</a>' in html and "PEP 8" in html
    assert "Local Variables" not in html and "canonical-doc" not in html
    text = trafilatura.extract(page) or ""
    assert "A definition body, not code." in text


def test_rst_literal_markers_and_roles() -> None:
    md = rst_to_markdown("Plain ::\n\n    code\n\nAfter: :func:`~a.b.run` ends.\n")
    assert md.splitlines()[:5] == ["Plain", "", "```", "code", "```"]
    assert "After: `run` ends." in md


def test_a_pelican_header_is_read_and_a_plain_first_line_is_not() -> None:
    assert split_header("Title: Weekly 1\nNumber: 1\nDate: 2020-01-01\n\nBody") == (
        {"title": "Weekly 1", "number": "1", "date": "2020-01-01"},
        "Body",
    )
    assert split_header("Note: one line only\n\nBody") is None
    assert split_header("# Heading\n\nBody") is None
    page, title = render_page(
        "Title: Weekly 1\nDate: 2020-01-01\n\nHello *there*.\n",
        url="https://w.example/1/",
        site="Weekly",
    )
    assert title == "Weekly 1"
    assert b'content="2020-01-01"' in page and b"<em>there</em>" in page


def test_vulnerability_records_list_affected_and_fixed_versions() -> None:
    report = """id: GO-2099-0001
modules:
    - module: example.org/mod
      versions:
        - introduced: 1.2.0
        - fixed: 1.4.1
      packages:
        - package: example.org/mod/sub
          symbols: [Parse]
summary: Parse may panic in example.org/mod
description: A crafted input makes Parse panic.
cves: [CVE-2099-0001]
references:
    - fix: https://example.org/commit/1
"""
    title, fields, body, _ = vulnerability_page(report)
    assert title == "Parse may panic in example.org/mod"
    assert "<th>Affected</th><td>introduced 1.2.0; fixed 1.4.1</td>" in fields
    assert "<th>Symbols</th><td>Parse</td>" in fields
    assert body.startswith("A crafted input") and "- fix: <https://example.org/commit/1>" in body
    osv = """id: PYSEC-2099-1
details: Bad things.
affected:
- package: {name: pkg, ecosystem: PyPI}
  ranges:
  - type: ECOSYSTEM
    events: [{introduced: "0"}, {fixed: 2.0.1}]
  versions: [1.0, 2.0]
aliases: [CVE-2099-2]
published: "2099-01-01T00:00:00Z"
"""
    title, fields, body, meta = vulnerability_page(osv)
    assert title == "PYSEC-2099-1" and meta == {"date": "2099-01-01T00:00:00Z"}
    assert "<th>Package</th><td>pkg (PyPI)</td>" in fields
    assert "<th>Affected</th><td>introduced 0; fixed 2.0.1</td>" in fields
    page, _ = render_page(
        osv,
        url="https://osv.example/PYSEC-2099-1",
        site="OSV",
        source_path="vulns/pkg/PYSEC-2099-1.yaml",
    )
    assert b"<p>Bad things.</p>" in page


_HSEC = """```toml
[advisory]
id = "HSEC-2099-0001"
aliases = ["CVE-2099-1"]

[[affected]]
package = "some-pkg"
cvss = "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:H"
[[affected.versions]]
introduced = "0.1.0"
fixed = "0.2.6"
```

# some-pkg: quadratic parsing

Update to `0.2.6`.
"""


def test_an_hsec_advisory_lists_its_affected_package_and_the_fixed_version() -> None:
    page, title = render_page(
        _HSEC, url="https://h.example/HSEC-2099-0001", site="HSEC", source_path="a/b.md"
    )
    text = page.decode("utf-8")
    assert title == "some-pkg: quadratic parsing"
    assert "<th>Package</th><td>some-pkg</td>" in text
    assert "<th>Introduced</th><td>0.1.0</td>" in text
    assert "<th>Patched</th><td>&gt;= 0.2.6</td>" in text
    assert "CVSS:3.1/AV:N" in text and "CVE-2099-1" in text


def test_a_title_given_without_an_atx_heading_is_read_from_the_first_line() -> None:
    sources = {
        "Code of Conduct\n===============\n\nBe kind.\n": "Code of Conduct",
        "[//]: # (title: Expected and actual)\n\nUse `expect`.\n": "Expected and actual",
        "### For releases\n\nRun it in production.\n": "For releases",
    }
    for source, expected in sources.items():
        page, title = render_page(source, url="https://d.example/x", site="Docs", default_title="r")
        text = page.decode("utf-8")
        assert title == expected
        # In <title>, og:title and the one <h1>: not repeated in the body.
        assert text.count(expected) == 3
    # A first line that is plain text keeps the default title, and an ATX "# " heading wins.
    assert render_page("Just text.\n", url="u", site="s", default_title="repo")[1] == "repo"
    assert render_page("## Sub\n\n# Main\n", url="u", site="s", default_title="r")[1] == "Main"


def test_a_franklin_page_reads_its_def_lines_as_metadata() -> None:
    source = (
        '@def title = "A Julia post"\n@def authors = "A. Author"\n@def published = "3 May 2024"\n'
        '@def rss_pubdate = Date(2024, 5, 3)\n@def rss_description = """Two\nlines."""\n\n'
        "Body text.\n"
    )
    page, title = render_page(source, url="https://example.org/p", site="Blog")
    html = page.decode()
    assert title == "A Julia post"
    assert '<meta name="author" content="A. Author">' in html
    assert 'content="3 May 2024"' in html
    assert "@def" not in html and "lines." not in html
    assert "<p>Body text.</p>" in html


def test_capitalised_hugo_front_matter_keys_give_the_title() -> None:
    source = "---\nTitle: Extend Falco\nDate: 2020-06-22\nAuthor: T. L.\n---\nText.\n"
    page, title = render_page(source, url="https://example.org/p", site="Blog")
    assert title == "Extend Falco"
    assert '<meta name="author" content="T. L.">' in page.decode()


def test_a_stored_copy_keeps_each_line_a_block_and_a_table_one_table() -> None:
    # Markdown would join the lines into one paragraph; the page had them apart.
    text = (
        "Remote server\nclaude mcp add --transport http gh https://x.example/mcp/\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\nDone."
    )
    page, title = render_stored("Setup", text, url="https://d.example/x", site="d.example")
    body = page.decode("utf-8")
    assert title == "Setup"
    assert "<p>claude mcp add --transport http gh https://x.example/mcp/</p>" in body
    assert body.count("<table>") == 1 and "<td>2</td>" in body
    assert "<p>Done.</p>" in body
