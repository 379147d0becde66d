"""Sources: one adapter per kind of incoming signal (rss, clipper, newsletter, tool_output).

Each turns what it reads into :class:`signaldesk.Item` records. Knows nothing of the pipeline.
"""

from __future__ import annotations

from sources.settings import (
    ClipperSettings,
    HttpSettings,
    NewsletterSettings,
    RssSettings,
    ToolOutputSettings,
)

__all__ = [
    "ClipperSettings",
    "HttpSettings",
    "NewsletterSettings",
    "RssSettings",
    "ToolOutputSettings",
]
