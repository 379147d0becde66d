"""Newsletter intake on the real mails in shared/data/emails, plus Maildir, mbox and IMAP checks."""

from __future__ import annotations

import datetime as dt
import email.message
import email.policy
import mailbox
import os
import shutil
from email.header import Header
from email.mime.text import MIMEText
from pathlib import Path

import pytest

from signaldesk.sources.email_parse import normalise_message_id, read_message
from signaldesk.sources.imap import ImapError, credentials_from_env
from signaldesk.sources.newsletter import (
    MailResult,
    fetch_imap,
    is_newsletter,
    parse_email,
    parse_email_detailed,
    read_mail_sources,
)
from signaldesk.sources.settings import NewsletterSettings
from signaldesk.sources.tracking import is_tracking_pixel_url, strip_tracking_params

# file -> (is a newsletter, decoded subject). Decisions follow the list headers; the subjects
# cover RFC 2047 in ISO-8859-1, UTF-8 and GB2312-labelled GBK, and raw 8-bit headers.
REAL_MAILS: dict[str, tuple[bool, str]] = {
    "mail_malformed_1.eml": (False, "immagine"),
    "mail_malformed_2.eml": (False, "Delivery failure (abh@netpar.com.br)"),
    "mail_malformed_3.eml": (False, "Ahorre Dinero en su Recibo de Luz"),
    "mail_test_12.eml": (False, "代开各地增值税发票"),
    "mail_test_13.eml": (True, "New Webinar: So, You Have A Disaster... Now What?"),
    "mail_test_14.eml": (False, "Test"),
    "mail_test_16.eml": (False, "Test spam mail (GTUBE)"),
    "mail_test_17.eml": (False, "Transferencia Interbancaria Banca en Línea"),
    "mail_test_18.eml": (False, "Test for Comma and Name Bugs"),
    "mail_test_19.eml": (False, "Test email with email address as display name"),
    "mail_test_2.eml": (False, "Bollettino Meteorologico del 29/11/2015"),
    "mail_test_3.eml": (False, "Hi there"),
    "mail_test_5.eml": (True, "Je prépare mon été zéro complexe !"),
    "mail_test_6.eml": (True, "Быстрее вкладывайте в золото!"),
    "mail_test_8.eml": (False, "Have you ever wanted to land on an Aircraft Carrier"),
    "mail_test_9.eml": (
        False,
        "我把镜头拉近些\uff0c你们看看这个是什么屄\uff0c这种场合自然少不了内射",
    ),
}
# Never ingested, even when the drop folder takes every message.
NEVER = {"mail_malformed_2.eml", "mail_test_16.eml"}


@pytest.fixture
def mails(shared_data: Path) -> Path:
    return shared_data / "emails" / "mails"


def _read(mails: Path, name: str) -> bytes:
    return (mails / name).read_bytes()


def _item(mails: Path, name: str, *, accept_all: bool = False):  # type: ignore[no-untyped-def]
    item = parse_email(_read(mails, name), location=name, accept_all=accept_all)
    assert item is not None, name
    return item


def test_the_real_mail_set_is_the_expected_one(mails: Path) -> None:
    assert sorted(p.name for p in mails.glob("*.eml")) == sorted(REAL_MAILS)


@pytest.mark.parametrize("name", sorted(REAL_MAILS))
def test_every_real_mail_decision_and_subject(mails: Path, name: str) -> None:
    expected_newsletter, expected_subject = REAL_MAILS[name]
    data = _read(mails, name)
    assert is_newsletter(read_message(data)) is expected_newsletter
    item = parse_email(data, location=name)
    assert (item is not None) is expected_newsletter
    everything, _, skipped = parse_email_detailed(data, location=name, accept_all=True)
    if name in NEVER:
        assert everything is None and skipped
        return
    assert everything is not None
    assert everything.title == expected_subject
    assert everything.source_kind == "newsletter"
    assert everything.published is not None and everything.published.tzinfo is not None
    assert "\ufffd" not in everything.title


def test_mailchimp_newsletter_to_markdown(mails: Path) -> None:
    item = _item(mails, "mail_test_13.eml")
    # The "view in browser" link is the source, without Mailchimp's subscriber id.
    assert item.url == (
        "https://mailchi.mp/eb93241944da/learn-how-to-balance-flexibility-in-your-bcp-395229"
    )
    assert "View this email in your browser" not in item.text
    assert item.guid == (
        "3f21937f0f636c8cec1db30bf.042ea43672.20180829202633.199bb58d0b.baa034eb"
        "@mail90.suw15.mcsv.net"
    )
    assert item.author == item.site_name == "Continuity Insights"
    assert item.source_id == "3f21937f0f636c8cec1db30bf.140953.list-id.mcsv.net"
    assert item.published == dt.datetime(2018, 8, 29, 20, 26, 47, tzinfo=dt.UTC)
    assert item.extra["from_address"] == "info@continuityinsights.com"
    assert any("unsubscribe" in u for u in item.extra["unsubscribe"])
    # Every section is kept, links as markdown links.
    for text in (
        "Register Today for This FREE Essential Webinar!",
        "As continuity professionals",
        "Respected industry authority Tom Serio",
        "- Successfully implement your BCP",
        "- Be fully prepared for a disaster",
    ):
        assert text in item.text
    assert "](https://cimanagementconference.us14.list-manage.com/track/click?" in item.text
    # Pixel, footer and unsubscribe gone.
    assert item.extra["tracking_pixels_removed"] >= 1
    assert "track/open" not in item.text
    lowered = item.text.lower()
    assert "unsubscribe" not in lowered
    assert "update your preferences" not in lowered
    assert "you are receiving this email" not in lowered
    assert "unsubscribe" not in str(item.text) and item.extra["unsubscribe"]


def test_french_newsletter_view_online_and_footer(mails: Path) -> None:
    item = _item(mails, "mail_test_5.eml")
    assert item.url == (
        "https://t2d857ce9.emailsys2a.net/mailing/136/1071579/4531494/9012/cbec6aad81/index.html"
    )
    assert "Offre valable du 8 mars au 8 avril 2017" in item.text
    assert "service clientèle" in item.text
    assert "s'affiche pas correctement" not in item.text
    assert "unsubscribe.html" not in item.text
    assert "emailsys2a.net/o/" not in item.text  # the 1x1 open pixel
    assert item.extra["tracking_pixels_removed"] == 1


def test_russian_newsletter_decodes_and_drops_footer(mails: Path) -> None:
    item = _item(mails, "mail_test_6.eml")
    assert item.author == "Время пришло"
    assert item.source_id == "770 capital.ggg.com"
    assert "[Профиль](" in item.text
    assert "Вы получили это письмо" not in item.text
    assert "袩" not in item.text  # the GB18030 mojibake a charset guess would produce


def test_chinese_mails_decode(mails: Path) -> None:
    plain = _item(mails, "mail_test_12.eml", accept_all=True)
    assert "增值税发票" in plain.text
    assert plain.author == "张先生"
    html = _item(mails, "mail_test_9.eml", accept_all=True)
    assert "镜头拉近" in html.text
    assert "\ufffd" not in html.text


def test_broken_mime_boundary_is_recovered(mails: Path) -> None:
    item = _item(mails, "mail_malformed_3.eml", accept_all=True)
    assert "¡Feliz Navidad!" in item.text  # undeclared cp1252, not cp1250's "ˇ"
    assert "compañía" in item.text
    assert "Secador Toallero Térmico" in item.text


def test_header_quirks(mails: Path) -> None:
    comma = _item(mails, "mail_test_18.eml", accept_all=True)
    assert comma.author == "LastßlName, FirstName"
    assert comma.extra["from_address"] == "comma.name@example.com"
    as_name = _item(mails, "mail_test_19.eml", accept_all=True)
    assert as_name.extra["from_address"] == "bob@example.com"
    assert as_name.author == "alice@example.com"


def _mail(
    subject: str,
    body: str,
    *,
    charset: str = "utf-8",
    subtype: str = "plain",
    headers: dict[str, str] | None = None,
) -> bytes:
    msg = MIMEText(body, subtype, charset)
    msg["Subject"] = Header(subject, charset).encode()
    msg["From"] = "Weekly <news@example.com>"
    msg["Date"] = "Mon, 02 Jun 2025 09:00:00 +0200"
    for name, value in (headers or {"List-Id": "Weekly <weekly.example.com>"}).items():
        msg[name] = value
    return msg.as_bytes()


@pytest.mark.parametrize("charset", ["koi8-r", "windows-1251"])
def test_cyrillic_legacy_charsets(charset: str) -> None:
    data = _mail("Новости недели", "Привет! Главные новости недели.", charset=charset)
    item = parse_email(data)
    assert item is not None
    assert item.title == "Новости недели"
    assert "Главные новости недели" in item.text
    assert item.source_id == "weekly.example.com"
    assert item.site_name == "Weekly"


@pytest.mark.parametrize("label", ["iso-8859-1", "us-ascii"])
def test_utf8_mislabelled_as_single_byte_is_not_mojibake(label: str) -> None:
    data = (
        f"Content-Type: text/plain; charset={label}\nList-Id: <l.example>\n"
        "Subject: s\nFrom: a@example.com\n\n"
    ).encode() + "Größe ✓ und Maß".encode()
    item = parse_email(data)
    assert item is not None and item.text == "Größe ✓ und Maß"


def test_undeclared_single_byte_body_and_raw_8bit_subject() -> None:
    data = (
        b"Content-Type: text/plain\nList-Id: <l.example>\nFrom: a@example.com\nSubject: "
        + "Über uns".encode()
        + b"\n\n"
        + "Crème brûlée für alle, ça va très bien.".encode("cp1252")
    )
    item = parse_email(data)
    assert item is not None
    assert item.title == "Über uns"
    assert item.text == "Crème brûlée für alle, ça va très bien."


def test_multi_article_html_newsletter_keeps_every_article() -> None:
    html = """<html><body>
    <div style="display:none;max-height:0;overflow:hidden">Preheader teaser text</div>
    <table><tr><td><a href="https://news.example.com/issue/12?utm_source=email&mc_eid=9">
      View this email in your browser</a></td></tr></table>
    <table><tr><td>
      <h2><a href="https://site.example/a1?utm_medium=email">First article</a></h2>
      <p>Alpha paragraph with <b>bold</b> text.</p>
      <h2>Second article</h2><p>Beta paragraph.</p>
      <h2>Third article</h2><p>Gamma paragraph and a
        <a href="https://site.example/a3?ref=newsletter&id=5">link</a>.</p>
      <img src="https://cdn.example/photo.jpg" alt="A photo" width="600">
    </td></tr></table>
    <img src="https://list.example/track/open.php?u=1" width="1" height="1" alt="">
    <img src="https://ci.example/beacon.gif" style="width:1px;height:1px">
    <p>You are receiving this email because you subscribed. <a href="https://x/u">Unsubscribe</a>
       | <a href="https://x/p">Manage preferences</a></p>
    <p>Example Inc, 1 Main St</p>
    </body></html>"""
    data = _mail("Issue 12", html, subtype="html")
    item = parse_email(data)
    assert item is not None
    assert item.url == "https://news.example.com/issue/12"
    for heading in ("## [First article](https://site.example/a1)", "## Second article"):
        assert heading in item.text
    assert "## Third article" in item.text
    assert "Alpha paragraph with **bold** text." in item.text
    assert "[link](https://site.example/a3?id=5)" in item.text
    assert "![A photo](https://cdn.example/photo.jpg)" in item.text
    assert "Preheader" not in item.text
    assert "track/open" not in item.text and "beacon" not in item.text
    assert "Unsubscribe" not in item.text and "receiving this email" not in item.text
    assert "View this email" not in item.text
    assert item.extra["tracking_pixels_removed"] == 2


def test_advice_to_opt_out_of_a_feature_is_not_the_footer() -> None:
    # Trigger: the demo's Rust newsletter lost its last two sections. "If something breaks,
    # opt out with -Zlinker-features=-lld" is a short block in the second half, and the cut
    # for a footer started there.
    html = """<html><body>
    <h1>The Dispatch</h1><p>Three changes this week.</p>
    <h2>Async closures</h2><p>You can now write async closures with the new traits.</p>
    <h2>A faster linker</h2>
    <p>Builds link with rust-lld. If something breaks, opt out with
       <code>-Zlinker-features=-lld</code> and file an issue.</p>
    <h2>Check your lockfile in CI</h2><p><code>cargo build --locked</code> fails early.</p>
    <p>Until next week.</p>
    <p>You receive this because you subscribed. <a href="https://x/u">Unsubscribe</a>
       · To opt out of these emails, click here.</p>
    </body></html>"""
    item = parse_email(_mail("Dispatch", html, subtype="html"))
    assert item is not None
    assert "opt out with `-Zlinker-features=-lld`" in item.text
    assert "## Check your lockfile in CI" in item.text and "--locked" in item.text
    assert "Unsubscribe" not in item.text and "these emails" not in item.text


def test_plain_text_newsletter_view_online_and_footer() -> None:
    body = (
        "View this email in your browser (https://mailchi.mp/abc/issue-3?e=42ab)\n\n"
        "Top story: SQLite 3.50 is out.\nRead more: https://sqlite.example/news?utm_source=nl\n\n"
        "Second story: anyio 4.5.\n\n"
        "You are receiving this because you signed up.\nUnsubscribe: https://x.example/u\n"
    )
    item = parse_email(_mail("Plain issue", body))
    assert item is not None
    assert item.url == "https://mailchi.mp/abc/issue-3"
    assert "https://sqlite.example/news\n" in item.text + "\n"
    assert "Second story" in item.text
    assert "Unsubscribe" not in item.text and "View this email" not in item.text


def test_bounce_and_auto_reply_are_skipped() -> None:
    auto = _mail("Out of office", "Away.", headers={"Auto-Submitted": "auto-replied"})
    item, _, reason = parse_email_detailed(auto, accept_all=True)
    assert item is None and reason == "automatic reply"


def test_message_without_message_id_gets_stable_identity() -> None:
    data = _mail("No id", "Body text")
    first, second = parse_email(data), parse_email(data)
    assert first is not None and second is not None
    assert first.guid == second.guid and first.guid and first.guid.startswith("sha256:")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("<abc@host>", "abc@host"),
        ("  <abc@host>  ", "abc@host"),
        ("<abc@\n host>", "abc@host"),
        ("abc@host", "abc@host"),
        ("<a@b> (comment)", "a@b"),
        ("", None),
        (None, None),
        ("<>", None),
    ],
)
def test_message_id_normalisation(raw: str | None, expected: str | None) -> None:
    assert normalise_message_id(raw) == expected


def _settings(folder: Path, **kwargs: object) -> NewsletterSettings:
    return NewsletterSettings(drop_folder=str(folder), **kwargs)  # type: ignore[arg-type]


def test_maildir_mbox_and_eml_drop_folder(tmp_path: Path, mails: Path) -> None:
    drop = tmp_path / "vault" / "00-inbox" / "newsletters"
    drop.mkdir(parents=True)
    names = ["mail_test_13.eml", "mail_test_5.eml", "mail_malformed_2.eml", "mail_test_3.eml"]
    maildir = mailbox.Maildir(drop / "Mail", create=True)
    for name in names:
        maildir.add(mailbox.MaildirMessage(_read(mails, name)))
    maildir.close()
    box = mailbox.mbox(drop / "archive.mbox", create=True)
    for name in ("mail_test_6.eml", "mail_test_16.eml"):
        box.add(mailbox.mboxMessage(_read(mails, name)))
    box.flush()
    box.close()
    shutil.copy(mails / "mail_test_13.eml", drop / "copy.eml")
    (drop / ".partial.eml").write_bytes(b"Subject: half")
    (drop / "junk.eml").write_bytes(os.urandom(3000))
    (drop / "huge.eml").write_bytes(b"Subject: big\n\n" + b"x" * 600_000)
    (drop / "linked.eml").symlink_to(mails / "mail_test_5.eml")

    results = list(
        read_mail_sources(
            _settings(Path("00-inbox/newsletters"), max_message_bytes=500_000), tmp_path / "vault"
        )
    )
    by_location = {r.location: r for r in results}
    assert all(isinstance(r, MailResult) for r in results)
    assert ".partial.eml" not in by_location and "linked.eml" not in by_location
    assert by_location["huge.eml"].error is not None
    assert by_location["junk.eml"].item is None
    maildir_results = [r for r in results if r.location.startswith("Mail#")]
    mbox_results = [r for r in results if r.location.startswith("archive.mbox#")]
    assert len(maildir_results) == 4 and len(mbox_results) == 2
    newsletter_ids = {r.message_id for r in results if r.item is not None}
    assert "20170715091841.33B7F81021@smtp11.ggg.com" in newsletter_ids  # from the mbox
    assert "aidmakfaofhmuoiauhu.afdakighau@unkown" in newsletter_ids  # from the Maildir
    skipped = {r.message_id: r.skipped for r in results if r.item is None and r.error is None}
    assert skipped["B0950073156@apus.netpar.com.br"] == "delivery report (bounce)"
    assert skipped["GTUBE1.1010101@example.net"]
    # The same mail as .eml and inside the Maildir has one Message-ID for the pipeline.
    ids = [r.message_id for r in results if r.item is not None]
    assert (
        ids.count(
            "3f21937f0f636c8cec1db30bf.042ea43672.20180829202633.199bb58d0b.baa034eb@mail90.suw15.mcsv.net"
        )
        == 2
    )
    # Read-only: the Maildir's new/ messages were not moved to cur/.
    assert len(list((drop / "Mail" / "new").iterdir())) == 4


def test_maildir_message_bigger_than_cap_is_reported(tmp_path: Path, mails: Path) -> None:
    box = mailbox.Maildir(tmp_path / "md", create=True)
    box.add(_read(mails, "mail_test_2.eml"))
    box.close()
    (result,) = read_mail_sources(_settings(tmp_path, max_message_bytes=100_000), tmp_path)
    assert result.item is None and "larger than" in (result.error or "")


def test_missing_drop_folder_yields_nothing(tmp_path: Path) -> None:
    assert list(read_mail_sources(NewsletterSettings(), tmp_path)) == []


def test_imap_needs_host_and_env_credentials() -> None:
    with pytest.raises(ImapError, match="not configured"):
        credentials_from_env(NewsletterSettings(), {})
    settings = NewsletterSettings(imap_host="imap.example.com", imap_user_env="NL_USER")
    with pytest.raises(ImapError, match="NL_USER") as info:
        credentials_from_env(settings, {"SIGNALDESK_IMAP_PASSWORD": "pw"})
    assert "never read from the config" in str(info.value)
    creds = credentials_from_env(settings, {"NL_USER": "me", "SIGNALDESK_IMAP_PASSWORD": "s3cret"})
    assert creds.user == "me" and "s3cret" not in repr(creds)


@pytest.mark.anyio
async def test_fetch_imap_fails_clearly_without_credentials() -> None:
    settings = NewsletterSettings(imap_host="imap.example.com")
    with pytest.raises(ImapError, match="SIGNALDESK_IMAP_USER"):
        await fetch_imap(settings, environ={})


@pytest.mark.anyio
async def test_fetch_imap_unreachable_server_is_an_imap_error() -> None:
    # Port 9 on loopback is closed (conftest points proxies at it too): no network needed.
    settings = NewsletterSettings(imap_host="127.0.0.1", imap_port=9, imap_timeout=5)
    env = {"SIGNALDESK_IMAP_USER": "u", "SIGNALDESK_IMAP_PASSWORD": "p"}
    with pytest.raises(ImapError, match="cannot reach IMAP server"):
        await fetch_imap(settings, environ=env)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://e.com/a?utm_source=x&utm_medium=y", "https://e.com/a"),
        ("https://e.com/a?id=3&fbclid=abc#frag", "https://e.com/a?id=3#frag"),
        ("https://e.com/a?q=a%2Fb+c&gclid=1", "https://e.com/a?q=a%2Fb+c"),
        ("https://e.com/a?mc_cid=1&mc_eid=2&_hsenc=3&_hsmi=4&mkt_tok=5", "https://e.com/a"),
        ("https://e.com/?vero_id=1&oly_enc_id=2&rb_clickid=3&s_cid=4", "https://e.com/"),
        ("https://e.com/?igshid=1&yclid=2&msclkid=3&x=1", "https://e.com/?x=1"),
        ("https://e.com/post?ref=hackernews", "https://e.com/post"),
        ("https://github.com/o/r/blob/x?ref=main", "https://github.com/o/r/blob/x?ref=main"),
        ("https://e.com/a?ref_src=twsrc%5Etfw", "https://e.com/a"),
        ("mailto:a@b.c?subject=utm_source", "mailto:a@b.c?subject=utm_source"),
        ("https://e.com/a?page=2", "https://e.com/a?page=2"),
    ],
)
def test_strip_tracking_params(url: str, expected: str) -> None:
    assert strip_tracking_params(url) == expected


def test_tracking_pixel_urls() -> None:
    assert is_tracking_pixel_url("https://x.us14.list-manage.com/track/open.php?u=1&id=2")
    assert is_tracking_pixel_url("https://eotrx.substackcdn.com/open?token=x")
    assert not is_tracking_pixel_url("https://cdn.example.com/images/hero.jpg")


def test_policy_parse_of_every_real_mail_never_raises(mails: Path) -> None:
    """The raw stdlib objects are what `is_newsletter` takes; all real mails must parse."""
    for path in mails.glob("*.eml"):
        msg = read_message(path.read_bytes())
        assert isinstance(msg, email.message.EmailMessage)
        assert msg.policy is email.policy.default


def test_substack_post_mail_points_at_the_post() -> None:
    """The same post by feed and by mail must share one URL (pipeline dedupe)."""
    body = (
        "View this post on the web at https://open.substack.com/pub/someletter/p/"
        "why-sqlite?r=abc12&utm_campaign=post&utm_medium=email\n\n"
        "The post text, which is the article itself.\n"
    )
    item = parse_email(_mail("Why SQLite", body, headers={"List-Id": "<someletter.substack.com>"}))
    assert item is not None
    assert item.url == "https://someletter.substack.com/p/why-sqlite"
    assert item.text == "The post text, which is the article itself."


@pytest.mark.parametrize("depth", [50, 3000])
def test_absurdly_nested_html_keeps_its_text(depth: int) -> None:
    html = "<div><span><b>" * depth + "Deep news item" + "</b></span></div>" * depth
    item = parse_email(_mail("Deep", html, subtype="html"))
    assert item is not None and "Deep news item" in item.text


def test_html_that_is_all_hidden_does_not_resurrect_hidden_text() -> None:
    html = '<div style="display:none">secret preheader</div><img src="https://x/p.gif" width="1">'
    plain = "The plain part."
    msg = email.message.EmailMessage()
    msg["Subject"], msg["From"], msg["List-Id"] = "Hidden", "a@example.com", "<l.example>"
    msg.set_content(plain)
    msg.add_alternative(html, subtype="html")
    item = parse_email(msg.as_bytes())
    assert item is not None and item.text == "The plain part."
