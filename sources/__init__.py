"""Sources: one adapter per kind of incoming signal (rss, clipper, newsletter, tool_output).

Each turns what it reads into :class:`signaldesk.Item` records. Knows nothing of the pipeline.
Names other than the settings load on first use (see :mod:`signaldesk.lazy`).
"""

from __future__ import annotations

import typing

from signaldesk.lazy import lazy_attributes as _lazy_attributes
from signaldesk.sources.settings import (
    ClipperSettings,
    HttpSettings,
    NewsletterSettings,
    RssSettings,
    ToolOutputSettings,
)

if typing.TYPE_CHECKING:
    from signaldesk.sources.clipper import (
        ClippingResult,
        clipping_to_item,
        scan_clippings,
    )
    from signaldesk.sources.email_parse import (
        is_newsletter,
    )
    from signaldesk.sources.errors import (
        FeedGone,
        FeedParseError,
        FetchError,
        OpmlError,
        ResponseTooLarge,
        SourceError,
        TooManyRedirects,
    )
    from signaldesk.sources.feed_parse import (
        ParsedFeed,
        parse_feed,
    )
    from signaldesk.sources.feed_policy import (
        FeedState,
    )
    from signaldesk.sources.fulltext import (
        Article,
        extract_article,
        fetch_article,
        merge_article,
        with_full_text,
    )
    from signaldesk.sources.html_markdown import (
        FEED,
        MAIL,
        HtmlProfile,
        html_to_markdown,
        html_to_text,
    )
    from signaldesk.sources.http import (
        FetchResponse,
        HostLimiter,
        build_client,
        fetch,
    )
    from signaldesk.sources.imap import (
        ImapError,
    )
    from signaldesk.sources.newsletter import (
        MailResult,
        fetch_imap,
        parse_email,
        parse_email_detailed,
        read_mail_sources,
    )
    from signaldesk.sources.opml import (
        OpmlFeed,
        export_opml,
        parse_opml,
    )
    from signaldesk.sources.rss import (
        PollResult,
        is_teaser,
        poll_feed,
    )
    from signaldesk.sources.tool_output import (
        DropParseError,
        DropResult,
        parse_drop,
        scan_drop_folder,
        write_capture,
    )
    from signaldesk.sources.tracking import (
        is_tracking_pixel_url,
        strip_tracking_params,
    )

__all__ = [
    "FEED",
    "MAIL",
    "Article",
    "ClipperSettings",
    "ClippingResult",
    "DropParseError",
    "DropResult",
    "FeedGone",
    "FeedParseError",
    "FeedState",
    "FetchError",
    "FetchResponse",
    "HostLimiter",
    "HtmlProfile",
    "HttpSettings",
    "ImapError",
    "MailResult",
    "NewsletterSettings",
    "OpmlError",
    "OpmlFeed",
    "ParsedFeed",
    "PollResult",
    "ResponseTooLarge",
    "RssSettings",
    "SourceError",
    "TooManyRedirects",
    "ToolOutputSettings",
    "build_client",
    "clipping_to_item",
    "export_opml",
    "extract_article",
    "fetch",
    "fetch_article",
    "fetch_imap",
    "html_to_markdown",
    "html_to_text",
    "is_newsletter",
    "is_teaser",
    "is_tracking_pixel_url",
    "merge_article",
    "parse_drop",
    "parse_email",
    "parse_email_detailed",
    "parse_feed",
    "parse_opml",
    "poll_feed",
    "read_mail_sources",
    "scan_clippings",
    "scan_drop_folder",
    "strip_tracking_params",
    "with_full_text",
    "write_capture",
]

_EXPORTS = {
    "ClippingResult": "signaldesk.sources.clipper",
    "clipping_to_item": "signaldesk.sources.clipper",
    "scan_clippings": "signaldesk.sources.clipper",
    "is_newsletter": "signaldesk.sources.email_parse",
    "FeedGone": "signaldesk.sources.errors",
    "FeedParseError": "signaldesk.sources.errors",
    "FetchError": "signaldesk.sources.errors",
    "OpmlError": "signaldesk.sources.errors",
    "ResponseTooLarge": "signaldesk.sources.errors",
    "SourceError": "signaldesk.sources.errors",
    "TooManyRedirects": "signaldesk.sources.errors",
    "ParsedFeed": "signaldesk.sources.feed_parse",
    "parse_feed": "signaldesk.sources.feed_parse",
    "FeedState": "signaldesk.sources.feed_policy",
    "Article": "signaldesk.sources.fulltext",
    "extract_article": "signaldesk.sources.fulltext",
    "fetch_article": "signaldesk.sources.fulltext",
    "merge_article": "signaldesk.sources.fulltext",
    "with_full_text": "signaldesk.sources.fulltext",
    "FEED": "signaldesk.sources.html_markdown",
    "MAIL": "signaldesk.sources.html_markdown",
    "HtmlProfile": "signaldesk.sources.html_markdown",
    "html_to_markdown": "signaldesk.sources.html_markdown",
    "html_to_text": "signaldesk.sources.html_markdown",
    "FetchResponse": "signaldesk.sources.http",
    "HostLimiter": "signaldesk.sources.http",
    "build_client": "signaldesk.sources.http",
    "fetch": "signaldesk.sources.http",
    "ImapError": "signaldesk.sources.imap",
    "MailResult": "signaldesk.sources.newsletter",
    "fetch_imap": "signaldesk.sources.newsletter",
    "parse_email": "signaldesk.sources.newsletter",
    "parse_email_detailed": "signaldesk.sources.newsletter",
    "read_mail_sources": "signaldesk.sources.newsletter",
    "OpmlFeed": "signaldesk.sources.opml",
    "export_opml": "signaldesk.sources.opml",
    "parse_opml": "signaldesk.sources.opml",
    "PollResult": "signaldesk.sources.rss",
    "is_teaser": "signaldesk.sources.rss",
    "poll_feed": "signaldesk.sources.rss",
    "DropParseError": "signaldesk.sources.tool_output",
    "DropResult": "signaldesk.sources.tool_output",
    "parse_drop": "signaldesk.sources.tool_output",
    "scan_drop_folder": "signaldesk.sources.tool_output",
    "write_capture": "signaldesk.sources.tool_output",
    "is_tracking_pixel_url": "signaldesk.sources.tracking",
    "strip_tracking_params": "signaldesk.sources.tracking",
}
__getattr__ = _lazy_attributes(__name__, _EXPORTS)
