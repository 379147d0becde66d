"""The one HTTP client of the intake layer: capped, deadline-bounded, polite fetches.

Feeds and article pages are fetched through :func:`fetch`, which never trusts the
server: the body is read in a stream against a hard size cap, the whole exchange
(redirects included) runs under one deadline so a server that drips a byte a second
cannot hold a worker, and redirects are followed by hand so the caller can see the
permanent ones (301/308) and update a subscription.
"""

from __future__ import annotations

import email.utils
import functools
import logging
import socket
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urljoin, urlsplit

import anyio
import httpx

from signaldesk.sources.errors import FetchError, ResponseTooLarge, TooManyRedirects
from signaldesk.sources.settings import HttpSettings

__all__ = [
    "PERMANENT_REDIRECTS",
    "FetchResponse",
    "HostBreaker",
    "HostLimiter",
    "build_client",
    "fetch",
    "host_of",
    "is_transient_status",
    "page_timeout",
    "parse_max_age",
    "parse_retry_after",
]

logger = logging.getLogger(__name__)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
PERMANENT_REDIRECTS = frozenset({301, 308})
# 408 Request Timeout, 425 Too Early, 429 Too Many Requests and every 5xx may pass;
# any other 4xx is the server telling us the request itself is wrong.
_TRANSIENT_4XX = frozenset({408, 425, 429})


def build_client(settings: HttpSettings) -> httpx.AsyncClient:
    """Build the shared async client for feeds and pages.

    Honest User-Agent, connect and overall timeouts, compressed transfer (httpx
    decodes gzip/deflate itself), connection limits, and ``follow_redirects=False``:
    :func:`fetch` follows redirects by hand to record them.
    """
    timeout = httpx.Timeout(settings.total_timeout, connect=settings.connect_timeout)
    limits = httpx.Limits(
        max_connections=settings.max_connections,
        max_keepalive_connections=min(settings.max_connections, 10),
    )
    return httpx.AsyncClient(
        headers={"User-Agent": settings.user_agent},
        timeout=timeout,
        limits=limits,
        follow_redirects=False,
        verify=_ssl_context(),
    )


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle costs ~100 ms per client; the verified context is the same
    # every time, so it is built once per process and shared (read-only once built).
    return httpx.create_ssl_context()


def _host_key(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        return f"{host}:{parts.port}" if parts.port else host
    except ValueError:  # "http://[::1" and other unparseable netlocs
        return ""


def host_of(url: str | None) -> str:
    """The host (and port, when given) of ``url``, lower-cased; ``?`` when it has none."""
    return _host_key(url or "") or "?"


def page_timeout(settings: HttpSettings) -> httpx.Timeout:
    """Timeouts for an article page: a few seconds to connect and to the first byte.

    Why not the feed timeouts: one feed is one request, but a scan fetches a page per
    teaser entry, and a host that never answers must not cost 30 s each time.
    """
    return httpx.Timeout(
        settings.page_total_timeout,
        connect=settings.page_connect_timeout,
        read=settings.page_first_byte_timeout,
        pool=settings.page_total_timeout,
    )


class HostBreaker:
    """Hosts that did not answer during one run: later requests to them fail at once.

    A host that refused a connection or could not be found is, for the rest of the
    run (a scan), not asked again; one that timed out twice is not either (one slow
    answer from a busy host is not enough). Each of its other pages fails with a
    ``skipped`` :class:`FetchError` carrying the failure's cause, so a silent host
    costs about one timeout per run (its request slots time out side by side) instead
    of one per page.
    """

    # Timeouts a host may cause before it is skipped; other unreachable causes: one.
    TIMEOUT_STRIKES = 2

    def __init__(self) -> None:
        self._open: dict[str, FetchError] = {}
        self._strikes: dict[str, int] = {}

    def check(self, url: str) -> None:
        """:raises FetchError: ``url``'s host failed earlier in this run (``skipped``)."""
        first = self._open.get(_host_key(url))
        if first is not None:
            raise FetchError(
                f"not fetched: {host_of(url)} {first.cause} earlier in this scan",
                transient=True,
                url=url,
                cause=first.cause,
                skipped=True,
            )

    def trip(self, url: str, exc: FetchError) -> None:
        """Count ``exc`` against ``url``'s host when it says the host did not answer."""
        if not exc.unreachable or exc.skipped:
            return
        host = _host_key(url)
        self._strikes[host] = strikes = self._strikes.get(host, 0) + 1
        if exc.cause != "timed out" or strikes >= self.TIMEOUT_STRIKES:
            self._open.setdefault(host, exc)

    @property
    def open_hosts(self) -> dict[str, str]:
        """``{host: cause}`` of the hosts skipped for the rest of the run."""
        return {host: exc.cause for host, exc in self._open.items()}


class HostLimiter:
    """Per-host politeness: at most ``per_host`` requests in flight to one host.

    One limiter is shared by every task of a run; the semaphores are made lazily, on
    first use of a host, inside the running event loop.
    """

    def __init__(self, per_host: int) -> None:
        if per_host < 1:
            raise ValueError("per_host must be at least 1")
        self.per_host = per_host
        self._semaphores: dict[str, anyio.Semaphore] = {}

    def slot(self, url: str) -> AbstractAsyncContextManager[None]:
        """Hold one of the host's slots for the duration of the ``async with`` block."""
        return self._slot(_host_key(url))

    @asynccontextmanager
    async def _slot(self, key: str) -> AsyncIterator[None]:
        semaphore = self._semaphores.get(key)
        if semaphore is None:
            semaphore = self._semaphores[key] = anyio.Semaphore(self.per_host)
        async with semaphore:
            yield


@dataclass(frozen=True)
class FetchResponse:
    """What a fetch got: the final URL, its status, headers and (capped) body.

    :param url: the URL that finally answered (after redirects).
    :param status: that answer's HTTP status (never a redirect unless the chain was cut).
    :param headers: case-insensitive response headers.
    :param body: the decoded (decompressed) body, at most ``max_bytes`` long.
    :param redirects: each hop followed, as ``(status, absolute location)``.
    :param elapsed: seconds the whole exchange took.
    """

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes
    redirects: tuple[tuple[int, str], ...]
    elapsed: float

    @property
    def content_type(self) -> str | None:
        """The ``Content-Type`` header as sent, if any."""
        return self.headers.get("content-type")

    @property
    def permanent_target(self) -> str | None:
        """Where the permanent (301/308) start of the redirect chain leads, if it has one.

        A chain ``301 -> 302 -> final`` yields the 301's location: the temporary hop
        says nothing about where the resource lives for good.
        """
        target: str | None = None
        for status, location in self.redirects:
            if status not in PERMANENT_REDIRECTS:
                break
            target = location
        return target


def is_transient_status(status: int) -> bool:
    """Whether an HTTP error status is worth retrying later (5xx, 408, 425, 429)."""
    return status >= 500 or status in _TRANSIENT_4XX


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date).

    :returns: ``None`` when absent or unreadable; never negative.
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def parse_max_age(cache_control: str | None) -> float | None:
    """The ``max-age`` (or ``s-maxage``) seconds of a ``Cache-Control`` header, if any."""
    if not cache_control:
        return None
    best: float | None = None
    for directive in cache_control.split(","):
        name, _, raw = directive.strip().partition("=")
        if name.strip().lower() in {"max-age", "s-maxage"}:
            raw = raw.strip().strip('"')
            if raw.isdigit():
                best = max(best or 0.0, float(raw))
    return best


async def fetch(
    client: httpx.AsyncClient,
    url: str,
    *,
    settings: HttpSettings,
    limiter: HostLimiter | None = None,
    headers: Mapping[str, str] | None = None,
    max_redirects: int = 5,
    breaker: HostBreaker | None = None,
    timeout: httpx.Timeout | None = None,
    deadline: float | None = None,
) -> FetchResponse:
    """GET ``url`` with a size cap and one overall deadline, following redirects by hand.

    Any final status is returned (4xx and 5xx included): the caller decides what
    it means. Each hop takes its own host slot from ``limiter``.

    :param breaker: hosts that did not answer earlier in the run are not asked again,
        and a host that does not answer now is added to it.
    :param timeout: per-request timeouts (default: the client's).
    :param deadline: seconds the whole exchange may take (default ``settings.total_timeout``).
    :raises ResponseTooLarge: the body passed ``settings.max_bytes``.
    :raises TooManyRedirects: more than ``max_redirects`` hops, or a loop.
    :raises FetchError: timeouts and network failures (``transient=True``), bad URLs
        and undecodable bodies (``transient=False``); ``skipped`` when the breaker
        held the request back.
    """
    started = time.monotonic()
    hops: list[tuple[int, str]] = []
    seen = {url}
    current = url
    deadline = settings.total_timeout if deadline is None else deadline
    try:
        with anyio.fail_after(deadline):
            while True:
                status, response_headers, body = await _fetch_once(
                    client,
                    current,
                    settings=settings,
                    limiter=limiter,
                    headers=headers,
                    breaker=breaker,
                    timeout=timeout,
                )
                location = response_headers.get("location")
                if status not in REDIRECT_STATUSES or not location:
                    break
                target = urljoin(current, location.strip())
                hops.append((status, target))
                if target in seen:
                    raise TooManyRedirects(
                        f"redirect loop at {target}", transient=False, url=url, status=status
                    )
                if len(hops) > max_redirects:
                    raise TooManyRedirects(
                        f"more than {max_redirects} redirects", transient=False, url=url
                    )
                seen.add(target)
                current = target
    except TimeoutError as exc:
        error = FetchError(
            f"timed out after {deadline:g} s", transient=True, url=current, cause="timed out"
        )
        if breaker is not None:
            breaker.trip(current, error)
        raise error from exc
    return FetchResponse(
        url=current,
        status=status,
        headers=response_headers,
        body=body,
        redirects=tuple(hops),
        elapsed=time.monotonic() - started,
    )


async def _fetch_once(
    client: httpx.AsyncClient,
    url: str,
    *,
    settings: HttpSettings,
    limiter: HostLimiter | None,
    headers: Mapping[str, str] | None,
    breaker: HostBreaker | None = None,
    timeout: httpx.Timeout | None = None,
) -> tuple[int, httpx.Headers, bytes]:
    """One request, no redirects: status, headers and the capped, decoded body."""
    if breaker is not None:
        breaker.check(url)
    async with _maybe_slot(limiter, url):
        if breaker is not None:
            breaker.check(url)  # it may have failed while this request waited its turn
        try:
            return await _exchange(client, url, settings=settings, headers=headers, timeout=timeout)
        except FetchError as exc:
            if breaker is not None:
                breaker.trip(url, exc)  # before the slot goes to the next request
            raise


async def _exchange(
    client: httpx.AsyncClient,
    url: str,
    *,
    settings: HttpSettings,
    headers: Mapping[str, str] | None,
    timeout: httpx.Timeout | None,
) -> tuple[int, httpx.Headers, bytes]:
    try:
        stream = (
            client.stream("GET", url, headers=headers)
            if timeout is None
            else client.stream("GET", url, headers=headers, timeout=timeout)
        )
        async with stream as resp:
            if resp.status_code in REDIRECT_STATUSES and "location" in resp.headers:
                # The redirect's own body is never wanted.
                return resp.status_code, resp.headers, b""
            declared = resp.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > settings.max_bytes:
                raise ResponseTooLarge(
                    f"response declares {declared} bytes, over the {settings.max_bytes} cap",
                    transient=False,
                    url=url,
                    status=resp.status_code,
                )
            chunks: list[bytes] = []
            size = 0
            # aiter_bytes yields decompressed data, so the cap also stops gzip bombs.
            async for chunk in resp.aiter_bytes():
                size += len(chunk)
                if size > settings.max_bytes:
                    raise ResponseTooLarge(
                        f"response passed the {settings.max_bytes}-byte cap",
                        transient=False,
                        url=url,
                        status=resp.status_code,
                    )
                chunks.append(chunk)
            return resp.status_code, resp.headers, b"".join(chunks)
    except httpx.PoolTimeout as exc:
        # Our own connection pool was full: the host is not to blame.
        raise FetchError(
            "no free connection in time", transient=True, url=url, cause="client busy"
        ) from exc
    except httpx.TimeoutException as exc:
        what = "connecting" if isinstance(exc, httpx.ConnectTimeout) else "waiting for data"
        raise FetchError(f"timed out {what}", transient=True, url=url, cause="timed out") from exc
    except httpx.DecodingError as exc:
        raise FetchError(
            f"undecodable response: {exc}", transient=False, url=url, cause="undecodable"
        ) from exc
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise FetchError(
            f"bad URL {url!r}: {exc}", transient=False, url=url, cause="bad URL"
        ) from exc
    except httpx.HTTPError as exc:
        # Connection refused/reset, protocol errors: the network, not the request.
        cause = _network_cause(exc)
        raise FetchError(f"{cause}: {exc}", transient=True, url=url, cause=cause) from exc
    except ValueError as exc:  # URLs httpx cannot even split (an unclosed "[")
        raise FetchError(
            f"bad URL {url!r}: {exc}", transient=False, url=url, cause="bad URL"
        ) from exc


def _network_cause(exc: httpx.HTTPError) -> str:
    """A short label for a network failure, from the OS error behind it."""
    os_error = _root_os_error(exc)
    if isinstance(os_error, socket.gaierror):
        return "host not found"
    if isinstance(os_error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(os_error, TimeoutError):
        return "timed out"
    text = f"{exc} {os_error or ''}".lower()
    if isinstance(exc, httpx.ConnectError):
        if "refused" in text:
            return "connection refused"
        if any(k in text for k in ("name or service", "nodename", "name resolution", "errno -")):
            return "host not found"
        if "ssl" in text or "certificate" in text:
            return "TLS error"
        return "no connection"
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        return "connection dropped"
    return "request failed"


def _root_os_error(exc: BaseException) -> OSError | None:
    """The OS error at the bottom of an exception's chain (httpx and anyio wrap it twice)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    found: OSError | None = None
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError):
            found = current
        current = current.__cause__ or current.__context__
    return found


@asynccontextmanager
async def _maybe_slot(limiter: HostLimiter | None, url: str) -> AsyncIterator[None]:
    if limiter is None:
        yield
    else:
        async with limiter.slot(url):
            yield
