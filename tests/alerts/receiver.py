"""A real HTTP receiver on loopback that records requests and verifies their signatures."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from alerts._signing import IDEMPOTENCY_HEADER, SIGNATURE_HEADER, verify_signature
from tests.services.net import free_port


@dataclass(frozen=True)
class Recorded:
    """One request as received."""

    path: str
    key: str
    body: bytes
    signature: str
    valid: bool
    status: int

    def json(self) -> Any:
        return json.loads(self.body)


class RecordingReceiver:
    """A threaded http.server; `fail_next` answers 503, `delay_s` holds each answer.

    `answered` counts responses written; `max_in_flight` is the most requests held at once.
    A request whose body is cut short (its sender was killed) is dropped, as a server would.
    """

    def __init__(self, secret: str | None = None, port: int | None = None) -> None:
        self.secret = secret
        self.port = port or free_port()
        # An automatic port may be taken by another process between free_port() and the bind;
        # until someone has read the url, a fresh one is as good.
        self._port_shown = port is not None
        self.requests: list[Recorded] = []
        self.fail_next = 0
        self.delay_s = 0.0
        # Answers wait until the gate is open (it is, unless a test clears it).
        self.gate = threading.Event()
        self.gate.set()
        self.answered = 0
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        self._port_shown = True
        return f"http://127.0.0.1:{self.port}/hook"

    def _record(self, handler: BaseHTTPRequestHandler) -> int | None:
        length = int(handler.headers.get("Content-Length", "0"))
        body = handler.rfile.read(length)
        if len(body) < length:  # the sender died mid-request: a server drops it, unprocessed
            return None
        sig = handler.headers.get(SIGNATURE_HEADER, "")
        key = handler.headers.get(IDEMPOTENCY_HEADER, "")
        valid = self.secret is not None and verify_signature(
            body, sig, self.secret, idempotency_key=key
        )
        with self._lock:
            status = 503 if self.fail_next > 0 else 200
            self.fail_next = max(self.fail_next - 1, 0)
            self.requests.append(Recorded(handler.path, key, body, sig, valid, status))
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        return status

    def _leaving(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _answered(self) -> None:
        with self._lock:
            self.answered += 1

    def start(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                status = outer._record(self)
                if status is None:
                    return
                time.sleep(outer.delay_s)
                outer.gate.wait(timeout=60)
                # No longer in flight once answered: the sender may send its next request as soon
                # as it reads this answer, before this thread runs another line.
                outer._leaving()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                self.wfile.flush()
                outer._answered()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            # http.server's default backlog of 5 drops the SYNs of a worker's concurrent
            # connections (each then waits a second to retry); real receivers listen wider.
            request_queue_size = 128

        try:
            self._server = Server(("127.0.0.1", self.port), Handler)
        except OSError:
            if self._port_shown:
                raise
            self._server = Server(("127.0.0.1", 0), Handler)
            self.port = int(self._server.server_address[1])
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def delivered(self) -> list[Recorded]:
        """Accepted requests, a duplicate idempotency key dropped as a receiver would."""
        seen: set[str] = set()
        out = []
        with self._lock:
            for r in self.requests:
                if r.status != 200 or r.key in seen:
                    continue
                seen.add(r.key)
                out.append(r)
        return out
