"""A toy model endpoint on loopback: a fixed service time and ONE worker (a FIFO queue).

Requests are served one at a time, each taking `service_s`, so the endpoint's capacity is
`1 / service_s` requests per second and queueing theory gives the latency curve: below capacity
a fixed-rate stream finds the worker free (latency ≈ service time), above it the queue grows by
`rate − capacity` requests every second, so latency grows with the test's elapsed time. HTTP/1.1
keep-alive, answers `200 {"ok": true}` to any method; runs in a daemon thread (also used by
bench/loadtest.py). `silent()` is a listener that accepts and never answers.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_BODY = b'{"ok": true}'
_RESPONSE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
    + str(len(_BODY)).encode()
    + b"\r\n\r\n"
    + _BODY
)


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, worker: asyncio.Lock,
                 service_s: float) -> None:  # fmt: skip
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            async with worker:  # one request at a time, first come first served
                await asyncio.sleep(service_s)
            writer.write(_RESPONSE)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


@contextmanager
def toy_endpoint(service_s: float) -> Iterator[str]:
    """Serve on a free loopback port for the `with` block; yields the URL."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, object] = {}

    async def start() -> None:
        worker = asyncio.Lock()
        server = await asyncio.start_server(
            lambda r, w: _serve(r, w, worker, service_s), "127.0.0.1", 0, backlog=1024
        )
        box["server"] = server
        box["port"] = server.sockets[0].getsockname()[1]
        ready.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop)
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{box['port']}/predict"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


@contextmanager
def silent() -> Iterator[str]:
    """A listener that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1024)
        yield f"http://127.0.0.1:{s.getsockname()[1]}/predict"


def refused_url() -> str:
    """A loopback URL nothing listens on (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/predict"


def serve_forever(service_s: float, port: int) -> None:
    """Serve on 127.0.0.1:`port` until the process ends (bench/loadtest.py's endpoint)."""

    async def main() -> None:
        worker = asyncio.Lock()
        server = await asyncio.start_server(
            lambda r, w: _serve(r, w, worker, service_s), "127.0.0.1", port, backlog=1024
        )
        async with server:
            await server.serve_forever()

    asyncio.run(main())
