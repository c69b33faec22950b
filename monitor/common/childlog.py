"""Child processes' log records, relayed to the parent's logging.

Some work runs in spawned processes (the HTTP intake drain, the pipelined ingest worker, the
guard replay). A spawned child starts with logging unconfigured: its INFO and DEBUG records
would be lost, and its warnings would reach stderr through Python's last-resort handler in
neither the chosen format nor level, and without the parent's secret redaction. So such a child
logs through a relay:

- The parent makes a :class:`LogRelay` where it starts the child (``with LogRelay(ctx) as
  relay``) and passes ``relay.child`` (a :class:`ChildLog`: the write end of a pipe, and the
  parent's level) in the child's arguments. A thread of the parent reads the pipe and hands
  each record to ``logging.getLogger(record.name).handle(record)``, so the parent's handlers,
  filters (the CLI's ``RedactSecrets``), format (text or JSON) and levels apply to it exactly
  as to the parent's own records.
- The child calls :meth:`ChildLog.install` first (a process target: ``with log.relayed():``
  around its body; a pool worker: in its initializer). Its root logger gets one handler, at
  the parent root's effective level, that sends each record as one frame (a 4-byte length,
  then the record's attributes as JSON, its message and traceback formatted to text). A
  thread's uncaught exception is logged rather than printed, and so (with ``relayed()``) is an
  exception leaving the target, which multiprocessing would print raw to stderr. The parent
  checks each record against its logger's level again on arrival. A named logger the parent
  set below its root's level does not lower the child's level.

Secrets are scrubbed in the child as well, before a record leaves it (`redact.scrub`: URL
userinfo, query values, bearer/basic credentials, key=value secrets): a parent configured
without the redacting filter (library use, a test harness) still never shows them, and no
secret crosses the pipe. The literal values a config names as secrets are the parent's filter's
to replace; the child does not know them. A record whose message cannot be formatted is sent
as a notice naming its format and place, never its arguments.

Nothing here may hold up the work or a shutdown:

- The child never waits on the parent. A record waits in a bounded in-process queue
  (`CAPACITY`) for a sender thread; when the queue is full (the parent reads too slowly, or no
  longer) the record is dropped and counted, and the next record sent is preceded by a WARNING
  saying how many were dropped. A broken pipe (the parent is gone) drops every later record.
- At its exit the child spends at most `CLOSE_S` sending what is queued (logging's shutdown
  closes the handler; call `close()` before an `os._exit`). A child killed (SIGKILL, or a
  SIGTERM it does not handle) loses what it had queued.
- The parent never waits on the child. It reads without blocking, so a frame torn by a child
  killed mid-write is never waited for; the child's exit (EOF, once the parent called
  :meth:`LogRelay.child_started`) ends the reader, and :meth:`LogRelay.stop` ends it within its
  timeout, after reading what is already in the pipe.

Why a pipe with frames of our own rather than a ``multiprocessing.Queue``: a queue's writers
share a lock that a killed child can leave held, its reader blocks for the rest of a message a
killed child tore, and its feeder thread is joined without a bound at the child's exit. So one
child writes to a relay at a time (frames from two writers could interleave): a process pool
relayed this way has one worker. JSON rather than pickle: the parent builds nothing but a log
record from what arrives. Standard library only, plus `redact`.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import queue
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from monitor.common.redact import scrub

# Records a child holds for its sender thread before it drops new ones.
CAPACITY = 1000
# How long a child's exit may spend sending what it has queued.
CLOSE_S = 0.5
# How long the parent's stop reads what is already in the pipe, by default.
STOP_S = 1.0
# How often the parent's reader looks at its stop flag.
POLL_S = 0.1
# Longest message, traceback or stack a record carries (longer: head and tail kept).
MAX_TEXT = 32_000
# Longest frame either side accepts; a longer length prefix means the stream is garbled.
MAX_FRAME = 1 << 20
_HEADER = struct.Struct("!I")
_READ_BYTES = 1 << 16

log = logging.getLogger(__name__)


class ChildLog:
    """The child's end of a relay: pass it in the spawned child's arguments (it pickles only
    while the child is being spawned), and call `install()` first thing in the child."""

    def __init__(self, writer: Any, level: int, capacity: int = CAPACITY) -> None:
        self.writer, self.level, self.capacity = writer, level, capacity

    def install(self) -> RelayHandler:
        """Send this process's records to the parent: the root logger's only handler, at the
        parent's level; a thread's uncaught exception is logged, not printed raw. Returns the
        handler (its `dropped` count; `close()` sends what is queued)."""
        handler = RelayHandler(self.writer, self.capacity)
        root = logging.getLogger()
        for old in list(root.handlers):
            root.removeHandler(old)
        root.addHandler(handler)
        root.setLevel(self.level)
        threading.excepthook = _log_thread_exception
        return handler

    @contextmanager
    def relayed(self) -> Iterator[RelayHandler]:
        """`install()` around a process's target: an exception leaving it is logged (relayed,
        scrubbed) and the process exits with 1, where multiprocessing would have printed its
        traceback, secrets and all, straight to stderr."""
        handler = self.install()
        try:
            yield handler
        except Exception:
            log.critical("process %s failed", multiprocessing.current_process().name,
                         exc_info=True)  # fmt: skip
            raise SystemExit(1) from None


def _log_thread_exception(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    exc_info = (args.exc_type, args.exc_value, args.exc_traceback)
    log.error("uncaught exception in thread %s", name, exc_info=exc_info)  # type: ignore[arg-type]


class RelayHandler(logging.Handler):
    """Queues each record, scrubbed and as one frame, for a thread that writes it to the pipe;
    drops (and counts, in `dropped`) what does not fit rather than wait (module docstring)."""

    def __init__(self, writer: Any, capacity: int = CAPACITY) -> None:
        super().__init__()
        self._writer = writer  # keeps the pipe's end open as long as the handler lives
        self._queue: queue.Queue[bytes | None] = queue.Queue(capacity)
        self.dropped = 0
        self._reported = 0
        self._broken = False
        self._closed = False
        self._sender = threading.Thread(target=self._send, name="log-relay", daemon=True)
        self._sender.start()

    def emit(self, record: logging.LogRecord) -> None:
        if self._broken or self._closed:
            self.dropped += 1
            return
        try:
            frame = encode(record)
        except Exception:  # its arguments do not fit its format, or it is too large
            frame = encode(_unformattable(record))
        try:
            self._queue.put_nowait(frame)
        except queue.Full:
            self.dropped += 1

    def close(self) -> None:
        """Send what is queued, for at most `CLOSE_S`, then stop the sender."""
        if not self._closed:
            self._closed = True
            deadline = time.monotonic() + CLOSE_S
            try:
                self._queue.put(None, timeout=CLOSE_S)
            except queue.Full:
                pass  # the sender is stuck on a full pipe: the join below is bounded too
            self._sender.join(max(0.0, deadline - time.monotonic()))
        super().close()

    def _send(self) -> None:
        while True:
            frame = self._queue.get()
            try:
                if self.dropped > self._reported:
                    self._reported = dropped = self.dropped
                    _write(self._writer.fileno(), encode(_dropped_notice(dropped)))
                if frame is None:
                    return
                _write(self._writer.fileno(), frame)
            except OSError:  # the parent is gone or closed its end: drop from now on
                self._broken = True
                return


def _dropped_notice(count: int) -> logging.LogRecord:
    return logging.makeLogRecord({
        "name": __name__, "levelno": logging.WARNING, "levelname": "WARNING",
        "msg": f"{count} log records of this process dropped so far (the relay was full)",
    })  # fmt: skip


def _unformattable(record: logging.LogRecord) -> logging.LogRecord:
    """What is said instead of a record that cannot be encoded: where it was logged and its
    format (code, not data), never its arguments (logging's own report would print them raw)."""
    text = f"a log record that could not be sent: {str(record.msg)[:200]!r} at "
    return logging.makeLogRecord({
        "name": record.name, "levelno": record.levelno, "levelname": record.levelname,
        "msg": text + f"{record.pathname}:{record.lineno}",
    })  # fmt: skip


def _write(fd: int, frame: bytes) -> None:
    view = memoryview(frame)
    while view:
        view = view[os.write(fd, view) :]


def _clip(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    half = MAX_TEXT // 2
    return f"{text[:half]}\n… ({len(text) - MAX_TEXT} characters cut) …\n{text[-half:]}"


def encode(record: logging.LogRecord) -> bytes:
    """One frame: `record`'s attributes as JSON, its message, traceback and stack formatted,
    clipped to `MAX_TEXT` and scrubbed of secrets (values JSON cannot hold become text)."""
    fields = dict(record.__dict__)
    exc_text = record.exc_text
    if record.exc_info and not exc_text:
        exc_text = logging.Formatter().formatException(record.exc_info)
    fields.pop("message", None)  # a formatter's cache: the parent's formatters set it again
    fields.update(
        msg=scrub(_clip(record.getMessage())),
        args=None,
        exc_info=None,
        exc_text=scrub(_clip(exc_text)) if exc_text else None,
        stack_info=scrub(_clip(record.stack_info)) if record.stack_info else None,
    )
    body = json.dumps(fields, default=str, ensure_ascii=False).encode()
    if len(body) > MAX_FRAME:
        raise ValueError(f"log record of {len(body)} bytes is over the relay's {MAX_FRAME}")
    return _HEADER.pack(len(body)) + body


def relay_level() -> int:
    """The level a child logs at: this process's root logger's effective level."""
    return logging.getLogger().getEffectiveLevel()


class LogRelay:
    """The parent's end: a pipe from the same multiprocessing context as the child, and a
    thread that hands the child's records to this process's loggers (module docstring).

    `level`: what the child logs at (default: `relay_level()` now). Use as a context manager
    around the child's life, or `start()` and `stop()`.
    """

    def __init__(self, ctx: Any, level: int | None = None, capacity: int = CAPACITY) -> None:
        self._reader, writer = ctx.Pipe(duplex=False)
        os.set_blocking(self._reader.fileno(), False)
        self.child = ChildLog(writer, relay_level() if level is None else level, capacity)
        self._stopping = threading.Event()
        self._deadline = 0.0
        self._thread = threading.Thread(target=self._listen, name="log-relay", daemon=True)
        self.undecodable = 0

    def start(self) -> LogRelay:
        self._thread.start()
        return self

    def child_started(self) -> None:
        """Close this process's copy of the child's end (the child holds its own): the child's
        exit then ends the reader at once. Not for a pool that may start its worker later."""
        self.child.writer.close()

    def stop(self, timeout: float = STOP_S) -> None:
        """Read what is already in the pipe for up to `timeout`, then stop (never longer)."""
        self._deadline = time.monotonic() + timeout
        self._stopping.set()
        if self._thread.ident is None:  # never started: nobody else closes the read end
            self._reader.close()
        elif self._thread.is_alive():
            self._thread.join(timeout + POLL_S)
        self.child.writer.close()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def __enter__(self) -> LogRelay:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _listen(self) -> None:
        buffer = bytearray()
        try:
            while self._read_some(buffer):
                while (frame := self._next_frame(buffer)) is not None:
                    self._deliver(frame)
        finally:
            self._reader.close()

    def _read_some(self, buffer: bytearray) -> bool:
        """Append what the pipe holds; False once the reader should end (stop, EOF, garble)."""
        while True:
            stopping = self._stopping.is_set()
            if stopping and time.monotonic() >= self._deadline:
                return False
            if self._reader.poll(0 if stopping else POLL_S):
                break
            if stopping:
                return False  # nothing more in the pipe
        try:
            chunk = os.read(self._reader.fileno(), _READ_BYTES)
        except BlockingIOError:
            return True
        except OSError:
            return False
        buffer += chunk
        return bool(chunk) and not self._garbled(buffer)

    def _garbled(self, buffer: bytearray) -> bool:
        if len(buffer) >= _HEADER.size and _HEADER.unpack_from(buffer)[0] > MAX_FRAME:
            log.warning("log relay: a garbled frame from a child process; its records are lost")
            return True
        return False

    @staticmethod
    def _next_frame(buffer: bytearray) -> bytes | None:
        if len(buffer) < _HEADER.size:
            return None
        end = _HEADER.size + _HEADER.unpack_from(buffer)[0]
        if len(buffer) < end:
            return None  # the rest is on its way (or was torn by a killed child)
        frame = bytes(buffer[_HEADER.size : end])
        del buffer[:end]
        return frame

    def _deliver(self, frame: bytes) -> None:
        try:
            record = logging.makeLogRecord(json.loads(frame))
            logger = logging.getLogger(str(record.name))
            if logger.isEnabledFor(int(record.levelno)):
                logger.handle(record)
        except Exception:  # one bad record never ends the relay
            self.undecodable += 1
