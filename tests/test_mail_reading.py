"""Mail as a person reads the notes it becomes: titles, footers, code, charsets, junk files.

Found by feeding the shared mails and hand-built newsletters to ``signaldesk scan``.
"""

from __future__ import annotations

import email.charset
import json
from email.mime.message import MIMEMessage
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from pathlib import Path

import pytest
from click.testing import CliRunner

from signaldesk.pipeline.cli import cli
from signaldesk.sources.newsletter import parse_email


def _list_mail(subject: str, body: str, *, list_id: str, charset: str = "utf-8") -> bytes:
    cs = email.charset.Charset(charset)
    cs.body_encoding = email.charset.QP
    msg = MIMEText(body, "plain", cs)
    msg["Subject"] = subject
    msg["From"] = "=?iso-8859-1?q?Jo=E3o_Gon=E7alves?= <joao@example.pt>"
    msg["Date"] = "Wed, 27 Sep 2023 06:00:00 +0000"
    msg["Message-ID"] = "<m1@example.pt>"
    msg["List-Id"] = list_id
    return msg.as_bytes()


@pytest.mark.parametrize(
    ("subject", "list_id", "title"),
    [
        (
            "[Python-pt] Reunião de sexta",
            "Lista Python PT <python-pt.python.org>",
            "Reunião de sexta",
        ),
        (
            "Re: [sqlite-users] VACUUM after bulk delete",
            "SQLite Users <sqlite-users.mailinglists.sqlite.org>",
            "VACUUM after bulk delete",
        ),
        ("Fwd: AW: Re[2]: This Week in Rust 514", "<twir.example.org>", "This Week in Rust 514"),
        # A tag that is not the list's own carries meaning and stays.
        (
            "[SECURITY] [DSA 5555-1] openssl security update",
            "<debian-security-announce.lists.debian.org>",
            "[SECURITY] [DSA 5555-1] openssl security update",
        ),
    ],
)
def test_title_loses_reply_markers_and_the_lists_own_tag(
    subject: str, list_id: str, title: str
) -> None:
    item = parse_email(_list_mail(subject, "Some text for the body.\n", list_id=list_id))
    assert item is not None
    assert item.title == title


def test_list_footer_goes_and_indented_commands_stay_code() -> None:
    body = (
        "Olá a todos,\n\nA próxima reunião é na sexta-feira. Código:\n\n"
        "    $ pip install --upgrade pip\n    $ python -m venv .venv\n\nAté já,\nJoão\n\n"
        "_______________________________________________\nPython-pt mailing list\n"
        "Python-pt@python.org\nhttps://mail.python.org/mailman/listinfo/python-pt\n"
    )
    raw = _list_mail("[Python-pt] x", body, list_id="<python-pt.python.org>", charset="iso-8859-1")
    item = parse_email(raw)
    assert item is not None
    assert "```\n$ pip install --upgrade pip\n$ python -m venv .venv\n```" in item.text
    assert "A próxima reunião" in item.text  # latin-1 quoted-printable decoded
    assert "listinfo" not in item.text
    assert "mailing list" not in item.text
    assert item.author == "João Gonçalves"


def test_a_mail_laid_out_with_indents_is_not_all_code() -> None:
    body = "    Dear reader,\n\n    this issue is about SQLite.\n\n    Regards\n"
    item = parse_email(_list_mail("Issue 3", body, list_id="<n.example.org>"))
    assert item is not None
    assert "```" not in item.text
    assert "this issue is about SQLite." in item.text


def test_unsubscribe_lines_in_italian_and_english_are_left_out(shared_data: Path) -> None:
    mails = shared_data / "emails" / "mails"
    bulletin = parse_email((mails / "mail_test_2.eml").read_bytes(), accept_all=True)
    assert bulletin is not None
    assert "Attendibilità: 3/6" in bulletin.text
    assert "non desideri" not in bulletin.text
    assert "cancellazione" not in bulletin.text
    assert not bulletin.text.endswith("---")
    spam = parse_email((mails / "mail_test_8.eml").read_bytes(), accept_all=True)
    assert spam is not None
    assert "Enjoy Real-Life Flying Today" in spam.text
    assert "do not want to receive" not in spam.text


def test_html_part_without_charset_is_read_with_its_siblings_charset(shared_data: Path) -> None:
    raw = (shared_data / "emails" / "mails" / "mail_test_2.eml").read_bytes()
    item = parse_email(raw, accept_all=True)
    assert item is not None
    assert "Domani e martedì la rimonta" in item.text
    assert "mercoledì e giovedì" in item.text
    assert "\u0301" not in item.text and "\u0300" not in item.text


def test_files_that_are_no_mail_say_so(vault: Path) -> None:
    drop = vault / "00-inbox" / "newsletters"
    (drop / "empty.eml").write_bytes(b"")
    (drop / "binary.eml").write_bytes(bytes(range(256)) * 40)
    good = _list_mail("Weekly 1", "A line of news about SQLite.\n" * 5, list_id="<w.example.org>")
    (drop / "good.eml").write_bytes(good)
    result = CliRunner().invoke(cli, ["--vault", str(vault), "scan", "--json"])
    assert result.exit_code == 0, result.output
    out = CliRunner().invoke(cli, ["--vault", str(vault), "items", "--json", "--limit", "10"])
    items = {i["title"]: i for i in json.loads(out.stdout)}
    assert items["Weekly 1"]["status"] in ("filed", "rejected")
    assert items["empty.eml"]["last_error"] == "the file is empty, not an e-mail message"
    assert items["binary.eml"]["last_error"].startswith("not an e-mail message")
    assert "accept_all" not in items["binary.eml"]["last_error"]


def _html_newsletter(subject: str, html: str, *, message_id: str) -> MIMEMultipart:
    msg = MIMEMultipart("alternative")
    msg["Subject"] = subject
    msg["From"] = "This Week in Rust <twir@this-week-in-rust.org>"
    msg["Date"] = "Wed, 27 Sep 2023 06:00:00 +0000"
    msg["Message-ID"] = message_id
    msg["List-Id"] = "<twir.this-week-in-rust.org>"
    msg["List-Unsubscribe"] = "<https://twir.example/u>"
    msg.attach(MIMEText(html, "html", "utf-8"))
    return msg


_TRIAGE_TABLE = (
    '<table width="600"><tr><td><h2>Performance Triage</h2>'
    '<table border="1"><tr><th>(instructions:u)</th><th>mean</th><th>count</th></tr>'
    "<tr><td>Regressions</td><td>0.6%</td><td>15</td></tr>"
    "<tr><td>Improvements</td><td>-0.7%</td><td>70</td></tr></table>"
    '<table><tr><td><a href="https://a.example/1">Left column story</a></td>'
    '<td><a href="https://a.example/2">Right column story</a></td></tr>'
    "<tr><td>Read the first story of this week</td><td>Read the second story too</td></tr>"
    "</table></td></tr></table>"
)


def test_a_data_table_in_a_newsletter_stays_a_table() -> None:
    msg = _html_newsletter("TWIR", _TRIAGE_TABLE, message_id="<t@twir>")
    item = parse_email(msg.as_bytes())
    assert item is not None
    assert (
        "| (instructions:u) | mean | count |\n| --- | --- | --- |\n"
        "| Regressions | 0.6% | 15 |\n| Improvements | -0.7% | 70 |"
    ) in item.text
    # A layout table (no header row) is still read as blocks, not a pipe table.
    assert "[Left column story](https://a.example/1)\n\n[Right column story]" in item.text


@pytest.mark.parametrize("outer_headers", [{}, {"Precedence": "bulk"}])
def test_newsletter_forwarded_as_attachment_is_read(
    vault: Path, outer_headers: dict[str, str]
) -> None:
    body = "<h1>This Week in Rust 514</h1>" + "<p>Crate of the week: async_fn_traits.</p>" * 5
    inner = _html_newsletter("This Week in Rust 514", body, message_id="<inner-514@twir>")
    outer = MIMEMultipart("mixed")
    outer["Subject"] = "Fwd: This Week in Rust 514"
    outer["From"] = "Me <me@example.net>"
    outer["Date"] = "Thu, 28 Sep 2023 09:00:00 +0000"
    outer["Message-ID"] = "<outer@example.net>"
    for name, value in outer_headers.items():
        outer[name] = value
    outer.attach(MIMEText("", "plain", "utf-8"))
    outer.attach(MIMEMessage(inner))
    drop = vault / "00-inbox" / "newsletters"
    (drop / "forwarded.eml").write_bytes(outer.as_bytes())
    (drop / "original.eml").write_bytes(inner.as_bytes())
    result = CliRunner().invoke(cli, ["--vault", str(vault), "scan", "--json"])
    assert result.exit_code == 0, result.output
    out = CliRunner().invoke(cli, ["--vault", str(vault), "items", "--json"])
    items = json.loads(out.stdout)
    # One newsletter, by its own sender and date; the forward is its duplicate by Message-ID.
    assert [i["title"] for i in items] == ["This Week in Rust 514"]
    [item] = items
    assert item["status"] in ("filed", "rejected")
    assert item["guid"] == "inner-514@twir"
    assert item["published"] == "2023-09-27T06:00:00+00:00"


_FORWARD_BLOCKS = {
    "gmail-html": (
        "html",
        "<div>worth reading</div><br><div class='gmail_quote'>---------- Forwarded message "
        "---------<br>From: <b>This Week in Rust</b> &lt;twir@this-week-in-rust.org&gt;<br>"
        "Date: Wed, Sep 27, 2023 at 6:00 AM<br>Subject: This Week in Rust 514<br>"
        "To: &lt;me@example.net&gt;<br><br><h1>This Week in Rust 514</h1>"
        + "<p>Crate of the week: async_fn_traits, with async function traits.</p>" * 4
        + "</div>",
    ),
    "apple-plain": (
        "plain",
        "worth reading\n\nBegin forwarded message:\n\nFrom: This Week in Rust "
        "<twir@this-week-in-rust.org>\nSubject: This Week in Rust 514\n"
        "Date: September 27, 2023 at 6:00:00 AM GMT\nTo: me@example.net\n\n"
        + "Crate of the week: async_fn_traits, with async function traits.\n\n"
        * 4,
    ),
    "outlook-plain": (
        "plain",
        "worth reading\n\n________________________________\nFrom: This Week in Rust "
        "<twir@this-week-in-rust.org>\nSent: Wednesday, September 27, 2023 6:00 AM\n"
        "To: Me <me@example.net>\nSubject: This Week in Rust 514\n\n"
        + "Crate of the week: async_fn_traits, with async function traits.\n\n"
        * 4,
    ),
}


@pytest.mark.parametrize("client", sorted(_FORWARD_BLOCKS))
def test_inline_forward_is_credited_to_the_original_sender(client: str) -> None:
    subtype, body = _FORWARD_BLOCKS[client]
    msg = MIMEText(body, subtype, "utf-8")
    msg["Subject"] = "Fwd: This Week in Rust 514"
    msg["From"] = "Me Myself <me@example.net>"
    msg["Date"] = "Thu, 28 Sep 2023 09:00:00 +0000"
    msg["Message-ID"] = "<fwd@example.net>"
    msg["Precedence"] = "bulk"
    item = parse_email(msg.as_bytes())
    assert item is not None
    assert item.title == "This Week in Rust 514"
    assert item.author == "This Week in Rust"
    assert item.published is not None and item.published.date().isoformat() == "2023-09-27"
    assert item.extra["from_address"] == "twir@this-week-in-rust.org"
    assert item.extra["forwarded_by"] == "me@example.net"
    assert item.text.startswith("worth reading\n\n")
    assert "Crate of the week: async_fn_traits" in item.text
    assert "me@example.net" not in item.text and "Subject:" not in item.text


def test_a_forward_quoted_deep_in_a_newsletter_is_left_alone() -> None:
    body = "Story text about SQLite and WAL files.\n\n" * 60 + (
        "---------- Forwarded message ---------\nFrom: Someone <s@example.org>\n"
        "Subject: Old thread\n\nquoted"
    )
    msg = MIMEText(body, "plain", "utf-8")
    msg["Subject"] = "Weekly 9"
    msg["From"] = "Weekly <w@example.org>"
    msg["List-Id"] = "<w.example.org>"
    item = parse_email(msg.as_bytes())
    assert item is not None
    assert item.title == "Weekly 9" and item.author == "Weekly"
    assert "From: Someone" in item.text


def test_notes_name_the_tool_and_say_the_sender_once(vault: Path) -> None:
    config = vault / "signaldesk.toml"  # file everything, so both notes are written
    config.write_text(config.read_text().replace("# threshold = 0.55", "threshold = 0.01"))
    drop = vault / "00-inbox" / "tool-output"
    (drop / "review.md").write_text(
        "---\ntitle: Review of the ledger migration\ntool: claude-code\n---\n"
        "The migration runs `ALTER TABLE` inside a transaction:\n\n"
        "```sql\nBEGIN IMMEDIATE;\nALTER TABLE items ADD COLUMN stage TEXT;\nCOMMIT;\n```\n"
    )
    mail = _list_mail("Weekly 1", "A line of news about SQLite.\n" * 5, list_id="<w.example.org>")
    (vault / "00-inbox" / "newsletters" / "w.eml").write_bytes(mail)
    result = CliRunner().invoke(cli, ["--vault", str(vault), "scan", "--json"])
    assert result.exit_code == 0, result.output
    notes = {p.name: p.read_text() for p in (vault / "05-signals").rglob("*.md")}
    [review] = [text for name, text in notes.items() if "review-of-the-ledger" in name]
    assert "- Arrived: via tool output `claude-code` from `review.md` on " in review
    assert "BEGIN IMMEDIATE;\nALTER TABLE items ADD COLUMN stage TEXT;" in review
    [weekly] = [text for name, text in notes.items() if "weekly-1" in name]
    assert "- Author: João Gonçalves\n" in weekly
    assert "- Site:" not in weekly


def test_a_mail_with_no_body_is_told_once(vault: Path) -> None:
    drop = vault / "00-inbox" / "newsletters"
    (drop / "headers-only.eml").write_bytes(
        b"Subject: just headers\nFrom: a@example.org\nList-Id: <x.example.org>\n"
    )
    first = CliRunner().invoke(cli, ["--vault", str(vault), "scan"])
    assert first.exit_code == 0, first.output
    assert "mail: empty: no text and no link at x.example.org (1 mail); e.g. headers-only.eml" in (
        " ".join(first.output.split())
    )
    again = CliRunner().invoke(cli, ["--vault", str(vault), "scan"])
    assert "headers-only.eml" not in again.output
