"""A wall-clock deadline over a whole HTTP exchange (connect, send, and every read of the answer).

httpx's timeouts bound each socket operation, so a receiver that trickles its answer one byte a
second never trips a 10 s read timeout and holds the attempt for as long as it likes. Here the
network backend under httpx's connection pool shortens every socket operation's timeout to what
is left of the calling thread's deadline (set with :func:`attempt_deadline`), and fails it at
once when nothing is left: the attempt ends with an httpx timeout error at its deadline.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any, TypeVar

import httpcore
import httpx

_local = threading.local()
T = TypeVar("T")


@contextlib.contextmanager
def attempt_deadline(seconds: float) -> Iterator[None]:
    """Every socket operation of this thread's HTTP calls ends by `seconds` from now."""
    previous = getattr(_local, "deadline", None)
    _local.deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.deadline = previous


def _remaining(timeout: float | None, error: type[Exception]) -> float | None:
    deadline: float | None = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the attempt's deadline has passed")
    return left if timeout is None else min(timeout, left)


def _within(timeout: float | None, error: type[Exception], call: Callable[[float | None], T]) -> T:
    """`call` with the timeout shortened to the deadline; a timeout the deadline caused says so."""
    left = _remaining(timeout, error)
    try:
        return call(left)
    except error:
        _remaining(None, error)
        raise


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return _within(timeout, httpcore.ReadTimeout, partial(self._stream.read, max_bytes))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        _within(timeout, httpcore.WriteTimeout, partial(self._stream.write, buffer))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        start = partial(self._stream.start_tls, ssl_context, server_hostname)
        return _DeadlineStream(_within(timeout, httpcore.ConnectTimeout, start))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        def connect(left: float | None) -> httpcore.NetworkStream:
            return self._backend.connect_tcp(host, port, left, local_address, socket_options)

        return _DeadlineStream(_within(timeout, httpcore.ConnectTimeout, connect))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        def connect(left: float | None) -> httpcore.NetworkStream:
            return self._backend.connect_unix_socket(path, left, socket_options)

        return _DeadlineStream(_within(timeout, httpcore.ConnectTimeout, connect))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def deadline_client(timeout: float = 10.0) -> httpx.Client:
    """An `httpx.Client` whose calls inside :func:`attempt_deadline` end at that deadline."""
    transport = httpx.HTTPTransport(verify=True)
    # httpx does not expose the pool's network backend; the pool is httpcore's public class
    # and `_network_backend` is the one attribute it reads when it opens a connection.
    pool = transport._pool
    if not isinstance(pool, httpcore.ConnectionPool) or not hasattr(pool, "_network_backend"):
        raise RuntimeError("this httpx/httpcore version has no pluggable network backend")
    pool._network_backend = _DeadlineBackend(pool._network_backend)
    return httpx.Client(transport=transport, timeout=timeout)
