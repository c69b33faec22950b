"""A local webhook receiver that verifies modelwatch signatures, as a real receiver would."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from alerts import IDEMPOTENCY_HEADER, SIGNATURE_HEADER, verify_signature


@dataclass
class Received:
    """Deliveries seen so far: verified payloads and rejected requests."""

    verified: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)
    duplicates: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class SignedWebhookReceiver:
    """Serves on 127.0.0.1:<free port>; answers 401 to a request whose signature fails."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.received = Received()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/alerts"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status = outer._accept(
                    body,
                    self.headers.get(SIGNATURE_HEADER, ""),
                    self.headers.get(IDEMPOTENCY_HEADER, ""),
                )
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        return Handler

    def _accept(self, body: bytes, signature: str, key: str) -> int:
        rec = self.received
        if not verify_signature(body, signature, self.secret, idempotency_key=key):
            with rec.lock:
                rec.rejected.append(signature)
            return 401
        with rec.lock:
            if key in rec.keys:
                rec.duplicates += 1
                return 200
            rec.keys.add(key)
            rec.verified.append(orjson.loads(body))
        return 200

    def __enter__(self) -> SignedWebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
