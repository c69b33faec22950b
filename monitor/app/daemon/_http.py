"""The API's HTTP/1.1 server: uvicorn's httptools protocol, guarded against slow and greedy peers.

uvicorn (0.55) offers a header size limit (`h11_max_incomplete_event_size`, but answered 400,
and only with its h11 protocol: the default httptools one reads any header to its end), an idle
timeout that starts only after a first response (`timeout_keep_alive`), and `limit_concurrency`,
which still accepts every connection and answers 503 only once a request is complete. It has no
header-read timeout, so a connection that never finishes its headers is held forever and a few
hundred of them use up the process's file descriptors. This module adds what is missing, in the
protocol class uvicorn is given (`http=`), before any request reaches the application (and so
before authentication). It extends the httptools protocol (C parser), not the h11 one: h11 parses
in pure Python, which cost the API process ~15-20% more CPU per ingest request.

- a connection that has not sent a complete request head within `header_timeout_s` (from its
  accept, or from the previous response on a kept-alive connection) is closed;
- a request head over `max_header_bytes` is answered 431 and the rest of it is read and dropped
  for a moment (so the client sees the answer), never buffered;
- at most `max_connections` connections are open, fewer when the open-files limit
  (`RLIMIT_NOFILE`) leaves less room; a connection over the limit closes the oldest one still
  waiting for its request head, or is answered 503 and closed when every connection is busy
  with a request, so held idle connections never lock a client out.
"""

from __future__ import annotations

import asyncio
import resource
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from monitor.config import ApiConfig

# How long a refused peer's remaining bytes are read and dropped before the connection closes:
# closing with unread data makes the kernel reset the connection, and the peer may lose the answer.
_LINGER_S = 1.0


def connection_budget(configured: int, nofile: tuple[int, int] | None = None) -> tuple[int, int]:
    """(connections, backlog): `configured`, lowered to leave a quarter of the soft open-files
    limit (at least 64 descriptors) to the database, log files, child processes and outbound
    requests; and the listen backlog, which is also how many connections asyncio accepts in one
    go before any of them is counted, so a burst never takes more than a part of that reserve."""
    soft, _hard = nofile or resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return configured, 2048
    reserve = max(64, soft // 4)
    return max(1, min(configured, soft - reserve)), max(8, min(2048, reserve // 4))


@dataclass(frozen=True)
class ConnectionLimits:
    """What a connection may take: time to send its request head, its size, how many at once."""

    header_timeout_s: float
    max_header_bytes: int
    max_connections: int


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header timeout, a 431 header limit and a connection
    cap. A connection is *waiting for its head* from its accept, and again after each response
    with no pipelined request behind it, until the parser has a complete request head."""

    limits: ClassVar[ConnectionLimits]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._waiting_since = 0.0
        self._refused = False
        self._in_head = True
        self._head_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()
        if self._live_connections() > self.limits.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # answered already: the rest is dropped, not buffered
        waiting = self._in_head
        super().data_received(data)
        if waiting and self._in_head:  # still no complete head after this chunk
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_header_bytes:
                self._refuse(431, "request header fields too large")

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)  # the next request's head is in already
        super().on_response_complete()
        if not pipelined:
            self._await_head()

    def waiting_for_head(self) -> bool:
        """True while the connection has not sent a complete request head."""
        return self._head_timer is not None and not self.transport.is_closing()

    def _await_head(self) -> None:
        if self.transport.is_closing():
            return
        self._in_head, self._head_bytes = True, 0
        self._disarm()
        self._waiting_since = time.monotonic()
        timeout = self.limits.header_timeout_s
        self._head_timer = self.loop.call_later(timeout, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self.transport.close()

    def _live_connections(self) -> int:
        return sum(1 for c in self.connections if not c.transport.is_closing())

    def _make_room(self) -> None:
        waiting = [
            c
            for c in self.connections
            if isinstance(c, GuardedHttpToolsProtocol) and c is not self and c.waiting_for_head()
        ]
        if waiting:
            min(waiting, key=lambda c: c._waiting_since)._head_timed_out()
        else:
            self._refuse(503, "too many connections")

    def _refuse(self, status: int, reason: str) -> None:
        """Answer `status` and close: the peer's further bytes are dropped for a moment first."""
        self._disarm()
        self._refused = True
        body = reason.encode()
        phrase = reason_phrase(status)
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (status, phrase, len(body), body)
        )
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(_LINGER_S, self.transport.close)


def reason_phrase(status: int) -> bytes:
    """The reason phrase of the few statuses this module answers."""
    return {431: b"Request Header Fields Too Large", 503: b"Service Unavailable"}[status]


def server_config(app: Any, api: ApiConfig, host: str, port: int, **extra: Any) -> uvicorn.Config:
    """uvicorn's settings for the API: the guarded protocol, limits and timeouts from `api`."""
    connections, backlog = connection_budget(api.max_connections)
    configured = ConnectionLimits(api.header_timeout_s, api.max_header_bytes, connections)

    class Protocol(GuardedHttpToolsProtocol):
        limits = configured

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=Protocol,
        timeout_keep_alive=api.keep_alive_timeout_s,
        backlog=backlog,
        log_level="warning",
        log_config=None,  # uvicorn's records go through our (redacting) handlers
        access_log=False,
        lifespan="off",
        **extra,
    )
