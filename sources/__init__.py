"""Sources: one adapter per kind of incoming signal (rss, clipper, newsletter, tool_output).

Each turns what it reads into :class:`signaldesk.Item` records. Knows nothing of the pipeline.
"""

from __future__ import annotations

from sources.clipper import ClippingResult, clipping_to_item, scan_clippings
from sources.email_parse import is_newsletter
from sources.errors import (
    FeedGone,
    FeedParseError,
    FetchError,
    OpmlError,
    ResponseTooLarge,
    SourceError,
    TooManyRedirects,
)
from sources.feed_markdown import feed_html_to_markdown
from sources.feed_parse import ParsedFeed, parse_feed
from sources.feed_policy import FeedState
from sources.fulltext import Article, extract_article, fetch_article, with_full_text
from sources.http import FetchResponse, HostLimiter, build_client, fetch
from sources.imap import ImapError
from sources.newsletter import (
    MailResult,
    fetch_imap,
    parse_email,
    parse_email_detailed,
    read_mail_sources,
)
from sources.opml import OpmlFeed, export_opml, parse_opml
from sources.rss import PollResult, is_teaser, poll_feed
from sources.settings import (
    ClipperSettings,
    HttpSettings,
    NewsletterSettings,
    RssSettings,
    ToolOutputSettings,
)
from sources.tool_output import (
    DropParseError,
    DropResult,
    parse_drop,
    scan_drop_folder,
    write_capture,
)
from sources.tracking import is_tracking_pixel_url, strip_tracking_params

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
