"""Errors raised by the intake adapters."""

from __future__ import annotations

from typing import ClassVar

from signaldesk.errors import SignaldeskError


class SourceError(SignaldeskError):
    """Base class for errors raised by the intake adapters."""


# Causes meaning the host itself did not answer: a per-host breaker stops asking it.
UNREACHABLE_CAUSES = frozenset(
    {"timed out", "connection refused", "host not found", "no connection"}
)


class FetchError(SourceError):
    """A request to a source failed: network trouble, a bad status, a timeout.

    ``transient`` tells whether trying again later may succeed (timeouts, 5xx, 429) or
    not (404, redirect loops, a response too large); ``status`` is the HTTP status when
    the server answered, ``retry_after`` the seconds it asked us to wait, if it did.
    ``cause`` is a short label for grouping failures ("timed out", "connection refused",
    "HTTP 404", ...); ``skipped`` is set when the request was not even sent because
    its host had not answered earlier in the same run.
    """

    default_cause: ClassVar[str | None] = None

    def __init__(
        self,
        message: str,
        *,
        transient: bool,
        url: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        hint: str | None = None,
        cause: str | None = None,
        skipped: bool = False,
    ) -> None:
        super().__init__(message, hint=hint)
        self.transient = transient
        self.url = url
        self.status = status
        self.retry_after = retry_after
        self.cause = (
            cause or self.default_cause or (f"HTTP {status}" if status else "request failed")
        )
        self.skipped = skipped

    @property
    def unreachable(self) -> bool:
        """The host did not answer (refused, timed out, unknown): not worth asking again soon."""
        return self.cause in UNREACHABLE_CAUSES


class ResponseTooLarge(FetchError):
    """The response body passed the configured size cap (``[http] max_bytes``)."""

    default_cause = "too large"


class TooManyRedirects(FetchError):
    """More redirects than allowed, or a redirect loop."""

    default_cause = "too many redirects"


class FeedGone(FetchError):
    """The server answered 410 Gone: the feed was removed for good and is not polled again."""

    default_cause = "gone (410)"


class FeedParseError(SourceError):
    """A response could not be read as a feed (RSS, Atom, RDF or JSON Feed)."""


class OpmlError(SourceError):
    """An OPML document could not be read."""
