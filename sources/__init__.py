"""Sources: one adapter per kind of incoming signal (rss, clipper, newsletter, tool_output).

Each turns what it reads into :class:`signaldesk.Item` records. Knows nothing of the pipeline.
Names other than the settings load on first use (see :mod:`signaldesk.lazy`).
"""

from __future__ import annotations

import typing

from signaldesk.lazy import lazy_attributes as _lazy_attributes
from sources.settings import (
    ClipperSettings,
    HttpSettings,
    NewsletterSettings,
    RssSettings,
    ToolOutputSettings,
)

if typing.TYPE_CHECKING:
    from sources.clipper import (
        ClippingResult,
        clipping_to_item,
        scan_clippings,
    )
    from sources.email_parse import (
        is_newsletter,
    )
    from sources.errors import (
        FeedGone,
        FeedParseError,
        FetchError,
        OpmlError,
        ResponseTooLarge,
        SourceError,
        TooManyRedirects,
    )
    from sources.feed_markdown import (
        feed_html_to_markdown,
    )
    from sources.feed_parse import (
        ParsedFeed,
        parse_feed,
    )
    from sources.feed_policy import (
        FeedState,
    )
    from sources.fulltext import (
        Article,
        extract_article,
        fetch_article,
        merge_article,
        with_full_text,
    )
    from sources.http import (
        FetchResponse,
        HostLimiter,
        build_client,
        fetch,
    )
    from sources.imap import (
        ImapError,
    )
    from sources.newsletter import (
        MailResult,
        fetch_imap,
        parse_email,
        parse_email_detailed,
        read_mail_sources,
    )
    from sources.opml import (
        OpmlFeed,
        export_opml,
        parse_opml,
    )
    from sources.rss import (
        PollResult,
        is_teaser,
        poll_feed,
    )
    from sources.tool_output import (
        DropParseError,
        DropResult,
        parse_drop,
        scan_drop_folder,
        write_capture,
    )
    from sources.tracking import (
        is_tracking_pixel_url,
        strip_tracking_params,
    )

__all__ = [
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
    "feed_html_to_markdown",
    "fetch",
    "fetch_article",
    "fetch_imap",
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
    "ClippingResult": "sources.clipper",
    "clipping_to_item": "sources.clipper",
    "scan_clippings": "sources.clipper",
    "is_newsletter": "sources.email_parse",
    "FeedGone": "sources.errors",
    "FeedParseError": "sources.errors",
    "FetchError": "sources.errors",
    "OpmlError": "sources.errors",
    "ResponseTooLarge": "sources.errors",
    "SourceError": "sources.errors",
    "TooManyRedirects": "sources.errors",
    "feed_html_to_markdown": "sources.feed_markdown",
    "ParsedFeed": "sources.feed_parse",
    "parse_feed": "sources.feed_parse",
    "FeedState": "sources.feed_policy",
    "Article": "sources.fulltext",
    "extract_article": "sources.fulltext",
    "fetch_article": "sources.fulltext",
    "merge_article": "sources.fulltext",
    "with_full_text": "sources.fulltext",
    "FetchResponse": "sources.http",
    "HostLimiter": "sources.http",
    "build_client": "sources.http",
    "fetch": "sources.http",
    "ImapError": "sources.imap",
    "MailResult": "sources.newsletter",
    "fetch_imap": "sources.newsletter",
    "parse_email": "sources.newsletter",
    "parse_email_detailed": "sources.newsletter",
    "read_mail_sources": "sources.newsletter",
    "OpmlFeed": "sources.opml",
    "export_opml": "sources.opml",
    "parse_opml": "sources.opml",
    "PollResult": "sources.rss",
    "is_teaser": "sources.rss",
    "poll_feed": "sources.rss",
    "DropParseError": "sources.tool_output",
    "DropResult": "sources.tool_output",
    "parse_drop": "sources.tool_output",
    "scan_drop_folder": "sources.tool_output",
    "write_capture": "sources.tool_output",
    "is_tracking_pixel_url": "sources.tracking",
    "strip_tracking_params": "sources.tracking",
}
__getattr__ = _lazy_attributes(__name__, _EXPORTS)
