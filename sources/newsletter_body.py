"""Newsletter bodies: the "view online" link becomes the source; footers and pixels go.

Works on real mail in several languages (the test mails are English, French, Spanish,
Italian, Russian and Chinese), so the patterns below are multilingual on purpose.
"""

from __future__ import annotations

import re
import textwrap

import lxml.html

from signaldesk.sources.html_clean import clean_tree, parse_html, strip_tags
from signaldesk.sources.html_markdown import MAIL, tree_to_markdown
from signaldesk.sources.tracking import strip_tracking_params

__all__ = [
    "canonical_article_url",
    "html_newsletter_to_markdown",
    "plain_newsletter_to_markdown",
    "strip_footer",
]

_VIEW_ONLINE = re.compile(
    r"view (?:this |the |it |our )?(?:e-?mail |message |newsletter |issue |post |edition )?"
    r"(?:online|on the web|in (?:your |a |the )?(?:web ?)?browser|as a web ?page)"
    r"|read (?:it |this )?(?:online|on the web|in (?:your |a )?browser)|open in (?:your )?browser"
    r"|web version|online version|trouble viewing|can'?t see (?:this|the) (?:e-?mail|message)"
    r"|(?:isn't|is not|not) displaying (?:correctly|properly)"
    r"|s'affiche pas correctement|version en ligne|version web"
    r"|afficher dans (?:le|votre) navigateur"
    r"|ver (?:en (?:el |su )?navegador|en l[ií]nea|la versi[oó]n (?:web|en l[ií]nea|online))"
    r"|versi[oó]n (?:web|en l[ií]nea|online)|problemas para visualizar|no (?:se )?visualiza"
    r"|im browser (?:anzeigen|ansehen|öffnen|lesen)|online ansehen|web-?version"
    r"|visualizza (?:nel browser|la versione|online)|versione (?:online|web)"
    r"|ver no navegador|vers[aã]o (?:online|web)"
    r"|открыть в браузере|веб-верси|посмотреть (?:онлайн|в браузере)|не отображается"
    r"|在浏览器中(?:查看|打开)|网页版",
    re.IGNORECASE,
)
# "Opt out" counts only with what a footer opts out of, or as the link it offers ("opt out
# of these emails", "to opt out, click here"): an article's "opt out with
# -Zlinker-features=-lld" is advice, and the newsletter went on after it.
_FOOTER = re.compile(
    r"unsubscribe"
    r"|opt[- ]out(?:\s+(?:of|from))?(?:\s+(?:these|this|all|our|future|further|marketing|such))*"
    r"\s+(?:e-?mails?|messages|newsletters?|communications|mailings?|(?:mailing\s+)?lists?)\b"
    r"|opt[- ]out(?:\s*[,.:]?\s*(?:click|tap)\b|\s+(?:here|at any time|anytime)\b|\s*$)"
    r"|manage (?:your )?(?:e-?mail )?(?:preferences|subscriptions?)"
    r"|update (?:your )?(?:subscription |e-?mail )?preferences|e-?mail preferences"
    r"|you(?:'re| are)? (?:receiv(?:ed|ing)|getting) this|you (?:signed|subscribed) up"
    r"|this (?:e-?mail|message|newsletter) was sent to"
    r"|(?:do not|don't|no longer) (?:want|wish) to receive"
    r"|mailman/listinfo/|/mailman3?/lists/"
    r"|why did I get this|sent to .{1,80} because"
    r"|d[ée]sinscri|d[ée]sabonne|vous recevez ce|ne (?:plus|souhaitez plus) recevoir"
    r"|dar(?:se)? de baja|cancelar (?:la |su )?suscripci[oó]n|desuscrib|para no recibir"
    r"|abmelden|abbestellen|disiscri|cancella(?:re)? (?:l'|la )?iscrizione"
    r"|non (?:desideri|desidera|vuoi|vuole) più ricevere"
    r"|отписаться|отказаться от (?:рассылки|подписки)|не хотите получать|вы получили это письмо"
    r"|退订|取消订阅|您收到此邮件",
    re.IGNORECASE,
)
_COPYRIGHT = re.compile(
    r"(?:©|\(c\)|copyright).{0,120}(?:all rights reserved|tous droits|derechos reservados"
    r"|diritti riservati|rechte vorbehalten|права защищены)",
    re.IGNORECASE,
)
_SECTION_START = re.compile(r"\s*#{1,6}\s")
_LINK_TARGET = re.compile(r"\]\(<?[^)>]*>?\)")
_URL = re.compile(r"https?://[^\s<>()\"']+")
_HERE = re.compile(
    r"^\s*(?:click here|cliquez ici|here|ici|aqu[ií]|hier|qui|здесь|сюда)\W*$", re.IGNORECASE
)
_BLOCK_ANCESTORS = ("p", "div", "td", "tr", "table", "center", "li", "h1", "h2", "h3", "h4")


_SUBSTACK_APP_LINK = re.compile(r"^https?://open\.substack\.com/pub/([\w-]+)/p/([\w-]+)/?$")


def canonical_article_url(url: str) -> str:
    """Tracking stripped, and Substack's app links turned into the post's own URL.

    Why: the same post arrives by feed as ``https://<pub>.substack.com/p/<slug>`` and by mail
    as ``https://open.substack.com/pub/<pub>/p/<slug>?r=..&utm_..``; one URL lets the
    pipeline's URL dedupe see one article.
    """
    url = strip_tracking_params(url)
    match = _SUBSTACK_APP_LINK.match(url)
    return f"https://{match.group(1)}.substack.com/p/{match.group(2)}" if match else url


def _view_online_link(root: lxml.html.HtmlElement) -> tuple[str | None, int]:
    """Find the "view in browser" link, remove its line from the tree; returns (url, removed)."""
    for anchor in root.iter("a"):
        href = (anchor.get("href") or "").strip()
        if not re.match(r"https?://", href, re.IGNORECASE):
            continue
        text = " ".join(anchor.text_content().split())
        block = _enclosing_block(anchor)
        context = " ".join(block.text_content().split()) if block is not None else text
        if not (_VIEW_ONLINE.search(text) or (_HERE.match(text) and _VIEW_ONLINE.search(context))):
            continue
        target = block if block is not None and len(context) <= 250 else anchor
        if target.getparent() is not None:
            target.drop_tree()
        return canonical_article_url(href), 1
    return None, 0


def _enclosing_block(el: lxml.html.HtmlElement) -> lxml.html.HtmlElement | None:
    for ancestor in el.iterancestors():
        if isinstance(ancestor.tag, str) and ancestor.tag.lower() in _BLOCK_ANCESTORS:
            return ancestor
    return None


def strip_footer(blocks: list[str]) -> list[str]:
    """Drop the unsubscribe / "you received this" footer and stray unsubscribe lines.

    The cut starts at the first short footer-like block in the second half, and only when
    what follows it is small (a footer, not half an article that happens to mention
    opting out). Elsewhere only the short matching blocks themselves go.
    """
    if not blocks:
        return blocks
    sizes = [_visible_len(b) for b in blocks]
    total = sum(sizes) or 1
    half = len(blocks) // 2
    for index, block in enumerate(blocks):
        if index == 0 or index < half or sizes[index] > 600:
            continue
        if not (_FOOTER.search(block) or _COPYRIGHT.search(block)):
            continue
        rest = sum(sizes[index:])
        # A heading or code after it: the newsletter goes on (another section), so this
        # is not where its footer starts.
        goes_on = any(_SECTION_START.match(b) or "```" in b for b in blocks[index + 1 :])
        if rest <= max(1500, total // 4) and not goes_on:
            blocks = blocks[:index]
            break
    return [b for b in blocks if not (_visible_len(b) <= 300 and _FOOTER.search(b))]


def _visible_len(block: str) -> int:
    """Length of a block as read, not counting link targets (tracking URLs are long)."""
    return len(_LINK_TARGET.sub("]", block))


def html_newsletter_to_markdown(html: str) -> tuple[str, str | None, int]:
    """Newsletter HTML -> ``(markdown, view_online_url, pixels_removed)``."""
    root = parse_html(html)
    parsed_empty = not root.text_content().strip()
    pixels = clean_tree(root)
    url, _ = _view_online_link(root)
    blocks = tree_to_markdown(root, profile=MAIL)
    if parsed_empty and not blocks:
        blocks = [strip_tags(html)]  # the parser lost the text (absurd nesting): keep it plain
    blocks = strip_footer(blocks)
    return _tidy("\n\n".join(blocks)), url, pixels


def plain_newsletter_to_markdown(text: str) -> tuple[str, str | None]:
    """A text/plain newsletter -> ``(markdown, view_online_url)``, tracking stripped from URLs."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    paragraphs = _plain_paragraphs(text)
    url: str | None = None
    kept: list[str] = []
    for paragraph in paragraphs:
        if url is None and len(paragraph) <= 300 and _VIEW_ONLINE.search(paragraph):
            found = _URL.search(paragraph)
            if found is not None:
                url = canonical_article_url(found.group(0).rstrip(".,;"))
                continue
        kept.append(paragraph)
    kept = strip_footer(kept)
    body = _URL.sub(lambda m: strip_tracking_params(m.group(0)), "\n\n".join(kept))
    return _tidy(body), url


_INDENTED = re.compile(r"^(?: {4}|\t)")


def _plain_paragraphs(text: str) -> list[str]:
    """Paragraphs of a text/plain mail; indented ones (commands, code) as fenced blocks.

    Trigger: a list post with ``    $ pip install ...`` lines came out as one prose line
    (the first line's indentation stripped, the rest a lazy continuation): the code was
    lost as code. A mail whose paragraphs are mostly indented is laid out that way, not
    code, and stays prose.
    """
    raw = [p.rstrip() for p in re.split(r"\n[ \t]*\n", text) if p.strip()]
    raw = [p.lstrip("\n") for p in raw]

    def indented(paragraph: str) -> bool:
        return all(_INDENTED.match(ln) for ln in paragraph.split("\n") if ln.strip())

    code = [indented(p) for p in raw]
    if sum(code) * 2 >= len(raw):
        return [p.strip() for p in raw]
    return [
        "```\n" + textwrap.dedent(p.expandtabs(4)) + "\n```" if is_code else p.strip()
        for p, is_code in zip(raw, code, strict=True)
    ]


_TABLE_RULE = re.compile(r"^\|(?: *:?-{3,}:? *\|)+$")  # a pipe table's header rule stays


def _tidy(markdown: str) -> str:
    """Collapse separator debris (rows of `|`, `-`, `*`) that layout tables leave behind."""
    lines = [ln.rstrip() for ln in markdown.split("\n")]
    lines = [
        ln
        for ln in lines
        if not re.fullmatch(r"\s*[|*_=~·•\-\s]{1,}\s*", ln) or ln == "---" or _TABLE_RULE.match(ln)
    ]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    # A rule left at either end once the footer (or the view-online line) is gone.
    return re.sub(r"\A(?:---\n+)+|(?:\n+---)+\Z", "", text).strip()
