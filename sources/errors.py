"""Errors raised by the intake adapters."""

from __future__ import annotations

from signaldesk.errors import SignaldeskError


class SourceError(SignaldeskError):
    """Base class for errors raised by the intake adapters."""


class FetchError(SourceError):
    """A request to a source failed: network trouble, a bad status, a timeout.

    ``transient`` tells whether trying again later may succeed (timeouts, 5xx, 429) or
    not (404, redirect loops, a response too large); ``status`` is the HTTP status when
    the server answered, ``retry_after`` the seconds it asked us to wait, if it did.
    """

    def __init__(
        self,
        message: str,
        *,
        transient: bool,
        url: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.transient = transient
        self.url = url
        self.status = status
        self.retry_after = retry_after


class ResponseTooLarge(FetchError):
    """The response body passed the configured size cap (``[http] max_bytes``)."""


class TooManyRedirects(FetchError):
    """More redirects than allowed, or a redirect loop."""


class FeedGone(FetchError):
    """The server answered 410 Gone: the feed was removed for good and is not polled again."""


class FeedParseError(SourceError):
    """A response could not be read as a feed (RSS, Atom, RDF or JSON Feed)."""


class OpmlError(SourceError):
    """An OPML document could not be read."""
