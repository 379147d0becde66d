"""`signaldesk serve` answers one-shot `signaldesk search QUERY --json` commands.

A new process pays Python's start-up and the search stack's imports before it searches
(issue 15); serve, which a daily user keeps running, keeps a warm retriever instead and
answers over ``<vault>/.signaldesk/search.sock`` (the protocol:
:mod:`pipeline.service.search_protocol`; the client: :mod:`pipeline.cli._forward`).

- The socket is made mode 0600 before it listens, and a peer of another uid is refused
  (``SO_PEERCRED``, where the platform has it). serve holds the vault's lock, so a
  socket file left by a killed serve is simply replaced; a stop removes it.
- The retriever is opened (and the model loaded) as soon as serve listens, so the
  first client does not wait for it, and kept (it follows new index generations by
  itself); it shares serve's embedding model. An index that cannot be opened yet is
  tried again by the next request.
- Each connection is its own task in this server's task group, at most
  :data:`MAX_CLIENTS` at once; a request is one line of at most
  ``MAX_REQUEST_BYTES``, read within :data:`READ_TIMEOUT`. A bad request gets an error
  reply; nothing a client does stops serve.
- serve answers only a client of its own version that resolved the same vault and the
  same config file, unchanged since serve read it (re-checked per request); otherwise
  it declines and the client searches in-process, with the configuration as it is now.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import struct
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskStatus
from anyio.streams.buffered import BufferedByteReceiveStream

from signaldesk.errors import SignaldeskError
from signaldesk.pipeline.config import Workspace
from signaldesk.pipeline.config_location import config_stamp
from signaldesk.pipeline.service.search_protocol import (
    MAX_REQUEST_BYTES,
    PROTOCOL,
    VERSION,
    socket_path,
    socket_path_fits,
)
from signaldesk.retrieval.embedder import Embedder
from signaldesk.retrieval.errors import QueryError
from signaldesk.retrieval.retriever import Retriever

__all__ = ["MAX_CLIENTS", "READ_TIMEOUT", "SearchAnswer", "SearchSocket"]

logger = logging.getLogger(__name__)

MAX_CLIENTS = 16
"""Connections served at once; more wait in the listen queue."""
READ_TIMEOUT = 5.0
"""Seconds a client has to send its request line."""
SEARCH_TIMEOUT = 30.0
SEND_TIMEOUT = 5.0

SearchAnswer = Callable[[Retriever, Any], Awaitable[str]]
"""Runs a request's ``"search"`` object on the retriever and returns what
``search --json`` prints; raises :class:`QueryError` for the query itself and
``KeyError`` / ``TypeError`` / ``ValueError`` for a malformed object. The `search` verb
provides it (:mod:`pipeline.cli._search_answer`): the output is the verb's own."""


class _Declined(Exception):
    """The client should search in-process; the message says why."""


class SearchSocket:
    """The search socket of one serve.

    :param answer: runs one search and renders its output.
    :param peer_uid: the only uid answered (default: this process's).
    """

    def __init__(
        self,
        workspace: Workspace,
        embedder: Embedder | None,
        answer: SearchAnswer,
        *,
        peer_uid: int | None = None,
    ) -> None:
        self.path: Path = socket_path(workspace.vault)
        self._workspace = workspace
        self._embedder = embedder
        self._answer_search = answer
        self._uid = os.getuid() if peer_uid is None else peer_uid
        config = workspace.config_path
        self._config_path = os.path.realpath(config) if config is not None else None
        # What serve read; a Workspace made without its stamp is stamped now.
        self._config_stamp = workspace.config_stamp or config_stamp(config)
        self._retriever: Retriever | None = None
        self._opening = anyio.Lock()
        self.answered = 0
        """Searches answered so far (``signaldesk status`` could show it; tests read it)."""

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen until cancelled, then remove the socket file and close the retriever."""
        if not socket_path_fits(self.path):
            logger.info(
                "one-shot searches are not answered by serve: the socket path is too long "
                "for AF_UNIX (%s)",
                self.path,
            )
            task_status.started()
            return
        # Bound and chmod-ed to 0600 before it listens (anyio does both, in that order):
        # no connection is accepted while the file has the umask's mode. A stale socket
        # file (a killed serve's) is unlinked first.
        try:
            listener = await anyio.create_unix_listener(self.path, mode=0o600)
        except OSError as exc:  # no socket: every search runs in its own process, as before
            logger.warning(
                "one-shot searches are not answered by serve: cannot listen on %s: %s",
                self.path,
                exc,
            )
            task_status.started()
            return
        slots = anyio.Semaphore(MAX_CLIENTS)
        try:
            async with listener, anyio.create_task_group() as tg:
                logger.info("answering one-shot searches on %s", self.path)
                task_status.started()
                tg.start_soon(self._warm)
                while True:
                    await slots.acquire()
                    try:
                        stream = await listener.accept()
                    except OSError as exc:  # out of file descriptors, say: try again soon
                        slots.release()
                        logger.warning("search socket: accept failed: %s", exc)
                        await anyio.sleep(0.5)
                        continue
                    except BaseException:
                        slots.release()
                        raise
                    tg.start_soon(self._connection, stream, slots)
        finally:
            with suppress(FileNotFoundError):
                self.path.unlink()
            with anyio.CancelScope(shield=True):
                await self._close()

    async def _warm(self) -> None:
        """Open the index and load the model now, not in the first client's second."""
        try:
            retriever = await self._open()
            await retriever.search("warm up", limit=1)
        except (_Declined, SignaldeskError) as exc:  # no index yet: the first request retries
            logger.debug("search socket: not warmed up: %s", exc)

    async def _close(self) -> None:
        retriever, self._retriever = self._retriever, None
        if retriever is not None:
            await retriever.aclose()

    async def _connection(self, stream: SocketStream, slots: anyio.Semaphore) -> None:
        try:
            async with stream:
                reply = await self._reply(stream)
                if reply is not None:
                    data = json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n"
                    with anyio.move_on_after(SEND_TIMEOUT):
                        await stream.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            logger.debug("search socket: the client went away: %s", exc)
        except Exception as exc:  # a bug answering one request must not stop serve
            logger.warning("search socket: a request failed: %s: %s", type(exc).__name__, exc)
            logger.debug("what failed:", exc_info=exc)
        finally:
            slots.release()

    async def _reply(self, stream: SocketStream) -> dict[str, Any] | None:
        uid = _peer_uid(stream)
        if uid is not None and uid != self._uid:
            logger.info("search socket: refused a client of uid %d", uid)
            return _declined("refused: serve answers its own user only")
        receiver = BufferedByteReceiveStream(stream)
        try:
            with anyio.fail_after(READ_TIMEOUT):
                line = await receiver.receive_until(b"\n", MAX_REQUEST_BYTES)
        except TimeoutError:
            return _declined(f"no request line within {READ_TIMEOUT:g} s")
        except anyio.DelimiterNotFound:
            return _declined(f"the request is longer than {MAX_REQUEST_BYTES} bytes")
        except anyio.IncompleteRead:
            return None  # closed before a whole line: nobody to answer
        try:
            return await self._answer(line)
        except _Declined as why:
            return _declined(str(why))

    async def _answer(self, line: bytes) -> dict[str, Any]:
        try:
            request = json.loads(line)
        except ValueError as exc:
            raise _Declined(f"the request is not JSON: {exc}") from exc
        if not isinstance(request, dict):
            raise _Declined("the request is not a JSON object")
        self._check_identity(request)
        retriever = await self._open()
        try:
            with anyio.fail_after(SEARCH_TIMEOUT):
                text = await self._answer_search(retriever, request.get("search"))
        except QueryError as exc:  # the query itself: said as the in-process search says it
            return {"ok": False, "error": {"message": exc.message, "hint": exc.hint}}
        except (KeyError, TypeError, ValueError) as exc:
            raise _Declined(f"a malformed search: {type(exc).__name__}: {exc}") from exc
        except SignaldeskError as exc:
            raise _Declined(f"the search failed: {exc}") from exc
        except TimeoutError as exc:
            raise _Declined(f"the search took longer than {SEARCH_TIMEOUT:g} s") from exc
        self.answered += 1
        return {"ok": True, "stdout": text}

    def _check_identity(self, request: dict[str, Any]) -> None:
        if request.get("protocol") != PROTOCOL:
            raise _Declined(f"protocol {request.get('protocol')!r}; serve speaks {PROTOCOL}")
        if request.get("version") != VERSION:
            raise _Declined(f"signaldesk {request.get('version')!r}; serve runs {VERSION}")
        if request.get("vault") != str(self._workspace.vault):
            raise _Declined(f"another vault; serve's is {self._workspace.vault}")
        config = request.get("config")
        if not isinstance(config, dict) or config.get("path") != self._config_path:
            raise _Declined(f"another config file; serve's is {self._config_path}")
        now = config_stamp(self._workspace.config_path)
        if now != self._config_stamp:
            raise _Declined("the config file changed since serve read it (restart serve)")
        stamp = config.get("stamp")
        if (tuple(stamp) if isinstance(stamp, list) else stamp) != now:
            raise _Declined("the client read another version of the config file")

    async def _open(self) -> Retriever:
        async with self._opening:
            if self._retriever is None:
                from signaldesk.retrieval.backends import open_retriever

                config = self._workspace.config
                try:
                    self._retriever = await open_retriever(
                        self._workspace.vault,
                        config.index,
                        config.search,
                        self._embedder,
                        postgres=config.postgres,
                    )
                except SignaldeskError as exc:
                    raise _Declined(f"the index cannot be opened: {exc}") from exc
            return self._retriever


def _declined(why: str) -> dict[str, Any]:
    logger.debug("search socket: declined: %s", why)
    return {"ok": False, "declined": why}


def _peer_uid(stream: SocketStream) -> int | None:
    """The connecting process's uid (Linux); ``None`` where the platform cannot tell
    (the socket's mode 0600 is the guard there)."""
    raw = stream.extra(SocketAttribute.raw_socket, None)
    if raw is None or not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = raw.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)
