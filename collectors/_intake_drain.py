"""The HTTP intake log's drain: pending request bodies aggregated in large batches, exactly once.

A background thread reads the oldest pending rows of `intake_log` (up to `collect.batch_size`
events), splits them into one record per event and hands them to the `Ingestor` of their
adapter; inside that batch's transaction the rows are marked consumed (a keyed row keeps its key
and digest for duplicate detection, its body is dropped; a keyless row is deleted). On PostgreSQL
the rows are read `FOR UPDATE SKIP LOCKED` inside the batch's transaction, so replicas' drains
take disjoint rows; on SQLite (one writer), if another drain consumed one of them first, the
batch is rolled back and read again. Records sit at the positions of this drain's own key
(`drain:<replica>`), consecutive like a Kafka partition's. After a small batch the drain
lingers (`Drain.pause_s`): longer for busy thin traffic, up to `collect.drain_max_delay`.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from itertools import repeat
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors._base import Batch, RawRecord
from collectors._http_bodies import ADAPTERS, split
from collectors._ingest import Ingestor
from collectors._intake_requests import RequestSpan, trace_dead_letters
from collectors._profiling import default_backend
from monitor.failures import Backoff, redact
from monitor.storage import IntakeEntry, utcnow

log = logging.getLogger(__name__)

# An idle drain looks at the log this often: every append in this process wakes it at once
# (`wake`), so the poll only finds what another replica appended while its own drain was down,
# or what a restart left pending. Every 0.1 s cost an idle replica 3% of a core on PostgreSQL.
IDLE_POLL_S = 1.0
# A batch with fewer events than this many per touched window is thin traffic (`Drain.thin`).
THIN_EVENTS_PER_WINDOW = 2
# ... and it keeps the drain busy when it took more than this share of `linger_s`.
BUSY_SHARE = 0.25
# While lingering, how often the drain looks whether a full batch is already waiting.
LINGER_CHECK_S = 0.05
LINGER_CHECK_MAX_S = 1.0


# After a batch of at least this many events the freed heap is handed back (`trim_heap`).
TRIM_AFTER_EVENTS = 2000


def trim_heap() -> None:
    """Hand the heap a large batch freed back to the OS. glibc keeps it, so a drain's RSS
    stayed at its largest batch's: a window's worth of a 1,000-model fleet's thin traffic in
    one batch (`next_batch_at`) is ~100 MiB of records and profiles per 9,000 events
    (measured: 404 MiB after such a batch, 292 MiB trimmed). A no-op off glibc."""
    if (libc := _glibc()) is not None:
        libc.malloc_trim(0)


@functools.cache
def _glibc() -> Any:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc only
    except (OSError, AttributeError):
        return None
    return libc


class Superseded(Exception):
    """Some rows of the batch were consumed by another drain first; the batch rolls back."""


class Drain:
    """Aggregates the intake log in the background; `drain_once` does one batch."""

    def __init__(
        self,
        engine: Engine,
        ingestor_for: Callable[[str], Ingestor],
        replica: str,
        batch_events: int = 5000,
        interval_s: float = IDLE_POLL_S,
        linger_s: float = 0.25,
        max_delay_s: float = 2.0,
        window_s: float = 0.0,
        offset_s: float = 0.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self._ingestor_for = ingestor_for
        self.key = f"drain:{replica}"
        self.batch_events = batch_events
        self.interval_s = interval_s
        # After a batch smaller than batch_events, let more requests arrive first: fewer, larger
        # transactions (each merges every touched window profile once), still visible in <1 s.
        # Counted from the batch's start, and cut short once a full batch is pending: a busy
        # drain never sits idle while a backlog grows (a fixed pause after each small batch
        # cost up to a fifth of the time until all was counted in bench/api_ingest.py, issue 40).
        self.linger_s = linger_s
        # At most this long from a thin batch's start to the next (`collect.drain_max_delay`),
        # on the clock's grid of it and of the windows (`collect.window`; 0: none).
        self.max_delay_s = max(max_delay_s, linger_s)
        self.window_s = window_s
        # ... shifted by the evaluation ticks' offset (`scheduler.tick_offset_s`): the batch
        # after a window's end takes what the tick after it waits for (`_watermark`).
        self.offset_s = offset_s
        self.clock = clock
        self._began = 0.0  # the clock when the last batch began
        self._gathered_s = linger_s  # ... and how long after the batch before it
        self._last_events = 0
        self._last_windows = 0
        self._adapter = "modelwatch"  # PostgreSQL: whose rows the next batch claims first
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._flush_until = 0.0
        self.last_error: str | None = None

    def drain_once(self) -> int:
        """Aggregate one batch of pending rows; returns the rows consumed (0: nothing pending)."""
        with self._lock:
            if self.engine.dialect.name == "postgresql":
                return self._claim_once()
            rows = self._pending()
            if not rows:
                return 0
            ingestor, rows = self._ingestor_of(rows)
            start = ingestor.position(self.key)
            records, spans = self._records(rows, start)
            within = _consume([r.id for r in rows], ingestor.source, self.key, spans)
            try:
                ingestor.ingest(Batch(records), within=within)
            except Superseded:
                log.info("intake drain: rows consumed by another replica; reading again")
                return 0
            self._done(ingestor, len(records))
            return len(rows)

    def _claim_once(self) -> int:
        """PostgreSQL: the batch's rows are read `FOR UPDATE SKIP LOCKED` in its transaction,
        so replicas' drains aggregate disjoint rows side by side instead of reading the same
        ones and all but one rolling back. Rows of the adapter of the last batch first; when
        none is pending, those of the oldest pending row's adapter."""
        done = self._claim(self._adapter)
        if done:
            return done
        oldest = self._oldest_kind()
        if oldest is None or (adapter := ADAPTERS.get(oldest, "modelwatch")) == self._adapter:
            return 0
        self._adapter = adapter
        return self._claim(adapter)

    def _claim(self, adapter: str) -> int:
        """One batch of `adapter`'s pending rows (0: none pending that no other drain holds)."""
        ingestor = self._ingestor_for(adapter)
        taken: list[int] = []

        def claim(session: Session) -> tuple[Batch, Callable[[Session], None]] | None:
            rows = self._pending(session, adapter)
            if not rows:
                return None
            records, spans = self._records(rows, ingestor.position(self.key))
            taken[:] = [len(rows), len(records)]
            return Batch(records), _consume([r.id for r in rows], ingestor.source, self.key, spans)

        if ingestor.ingest_claimed(claim) is None:
            return 0
        self._done(ingestor, taken[1])
        return taken[0]

    def _ingestor_of(self, rows: list[Any]) -> tuple[Ingestor, list[Any]]:
        """The ingestor of the first row's adapter, and the rows of that adapter."""
        adapter = ADAPTERS.get(rows[0].kind, "modelwatch")
        rows = [r for r in rows if ADAPTERS.get(r.kind, "modelwatch") == adapter]
        return self._ingestor_for(adapter), rows

    def _done(self, ingestor: Ingestor, events: int) -> None:
        """Remember the batch's size and the windows it touched (how long to linger next)."""
        self._last_events = events
        self._last_windows = getattr(ingestor, "last_windows", 0)
        if events >= TRIM_AFTER_EVENTS:
            trim_heap()
        log.debug(
            "intake drain: %d events of %d windows, gathered over %.1f s, done %.1f s after "
            "it began", events, self._last_windows, self._gathered_s, self.clock() - self._began,
        )  # fmt: skip

    def _oldest_kind(self) -> str | None:
        """The kind of the oldest pending row (None: nothing pending)."""
        entry = IntakeEntry.__table__.c
        with Session(self.engine) as session:
            return session.scalar(
                select(entry.kind).where(entry.consumed_at.is_(None)).order_by(entry.id).limit(1)
            )

    def _pending(self, claim: Session | None = None, adapter: str | None = None) -> list[Any]:
        """The oldest pending rows, up to batch_events events (at least one row), with bodies;
        sizes are read first so a long backlog's bodies are not all read each round. With
        `claim` (PostgreSQL), in that transaction, rows of `adapter` that no other drain holds,
        locked until it ends (only as many as fit: locking a row writes it)."""
        entry = IntakeEntry.__table__.c
        # As many rows as events fit in a batch: thin traffic sends one event per request.
        sizes = (
            select(entry.id, entry.events)
            .where(entry.consumed_at.is_(None))
            .order_by(entry.id)
            .limit(max(self.batch_events, 1))
        )
        if adapter is not None:
            sizes = sizes.where(_of_adapter(entry.kind, adapter))
        with nullcontext(claim) if claim is not None else Session(self.engine) as session:
            ids = self._fitting(session.execute(sizes).all())
            if claim is not None and ids:
                locked = sizes.limit(len(ids)).with_for_update(skip_locked=True)
                ids = self._fitting(session.execute(locked).all())
            if not ids:
                return []
            stmt = select(entry.id, entry.key, entry.kind, entry.body).where(
                entry.id.in_(ids), entry.consumed_at.is_(None)
            )
            return sorted(session.execute(stmt).all(), key=lambda row: row.id)

    def _fitting(self, rows: Sequence[Any]) -> list[int]:
        """Ids of the first `rows` whose events fit in a batch (at least one)."""
        ids: list[int] = []
        events = 0
        for row in rows:
            if ids and events + row.events > self.batch_events:
                break
            ids.append(row.id)
            events += row.events
        return ids

    def _records(
        self, rows: Sequence[Any], start: int
    ) -> tuple[list[RawRecord], list[RequestSpan]]:
        """One record per event at consecutive offsets, and each request's span of them."""
        records: list[RawRecord] = []
        spans: list[RequestSpan] = []
        offset = start
        for row in rows:
            payloads, decoded = split(row.kind, row.body or b"")
            n = len(payloads)
            ends = range(offset + 1, offset + n + 1)
            records += map(RawRecord, repeat(self.key), range(offset, offset + n), ends,
                           payloads, decoded)  # fmt: skip
            spans.append(RequestSpan(row.id, row.key, offset, n))
            offset += n
        return records, spans

    def pause_s(self, took_s: float) -> float:
        """Seconds to wait after a batch that took `took_s` before reading the next: none after
        a full one; `linger_s` from the start of a small batch; when the drain is busy with
        thin traffic (see `thin`), until the next point of the clock's grid of `max_delay_s`
        or of the windows after the batch began (see `next_batch_at`)."""
        if self._last_events >= self.batch_events:
            return 0.0
        if not self.thin(took_s):
            return max(0.0, self.linger_s - took_s)
        return max(0.0, self.next_batch_at(self._began) - self.clock())

    def next_batch_at(self, began: float) -> float:
        """When the batch after a thin one that began at `began` (clock seconds) starts: the
        first point after it of the clock's grid of `max_delay_s`, or of a window's end if one
        comes first, shifted by `offset_s` and `linger_s` (the evaluation tick after a window
        ends waits for the requests received before it began; a window's last events, sent
        just before its end, are received just after it). A window's events are aggregated
        together, its profiles written once per step instead of once per batch, and the last
        step follows its end: with `collect.drain_max_delay` set to the window, each window's
        profiles are written once (issue 40: a fleet of thin traffic)."""
        shift = self.offset_s + self.linger_s
        step = _next_multiple(began - shift, self.max_delay_s)
        if self.window_s > 0:
            step = min(step, _next_multiple(began - shift, self.window_s))
        return step + shift

    def thin(self, took_s: float) -> bool:
        """Whether the last batch was thin traffic keeping the drain busy: at its rate, a
        `linger_s`'s worth of it would touch more than one window per THIN_EVENTS_PER_WINDOW
        events (a batch's cost follows the window profiles it rewrites, not its events), and
        it took over BUSY_SHARE of `linger_s`. Waiting longer then gathers more events per
        window rewrite; a quiet drain (a small deployment) keeps answering within `linger_s`.
        The rate, not the batch: a batch that gathered a whole window's thin traffic has many
        events per window and is thin all the same."""
        per_linger = self._last_events * self.linger_s / max(self._gathered_s, self.linger_s)
        many_windows = self._last_windows * THIN_EVENTS_PER_WINDOW > per_linger
        return many_windows and took_s > BUSY_SHARE * self.linger_s

    def _linger(self, pause: float) -> None:
        """Wait up to `pause` seconds, less once a full batch is pending (a burst that began
        with a small batch goes on at once)."""
        deadline = time.monotonic() + pause
        # A long pause (a window's worth of thin traffic) looks less often: the sum runs over
        # every pending row.
        check = max(LINGER_CHECK_S, min(LINGER_CHECK_MAX_S, pause / 20))
        while (rest := deadline - time.monotonic()) > 0:
            if self._stop.wait(min(rest, check)):
                return
            try:
                if self._pending_events() >= self.batch_events:
                    return
            except Exception:  # an outage: the next batch meets it and backs off
                return

    def _pending_events(self) -> int:
        """Events pending in the log (few: the drain lingers only when it has caught up)."""
        entry = IntakeEntry.__table__.c
        with Session(self.engine) as session:
            total = session.scalar(
                select(func.sum(entry.events)).where(entry.consumed_at.is_(None))
            )
        return int(total or 0)

    def wake(self) -> None:
        """Tell the drain a request was appended (it otherwise polls every `interval_s`)."""
        self._wake.set()

    def start(self) -> None:
        """Run the drain on a daemon thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="intake-drain", daemon=True)
            self._thread.start()

    def stop(self, timeout: float) -> None:
        """Aggregate what is pending for most of `timeout`, then stop; the rest waits in the
        log for the next start (nothing accepted is lost either way)."""
        self._flush_until = time.monotonic() + 0.8 * timeout
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def started(self) -> bool:
        return self._thread is not None

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        default_backend().warm_up()  # profiling's imports, before the first request waits on them
        backoff = Backoff(0.2, 5.0)
        failures = 0
        while True:
            stopping = self._stop.is_set()
            if stopping and time.monotonic() >= self._flush_until:
                return
            began = time.monotonic()
            at = self.clock()
            self._gathered_s = at - self._began if self._began else self.linger_s
            self._began = at
            try:
                done = self.drain_once()
                failures, self.last_error = 0, None
            except Exception as exc:  # one bad batch or an outage must not end the drain
                failures += 1
                self.last_error = redact(exc)
                log.exception("intake drain failed; retrying")
                if stopping:
                    return
                self._stop.wait(backoff.delay(failures).total_seconds())
                continue
            if not done:
                if stopping:
                    return
                self._wake.wait(self.interval_s)
                self._wake.clear()
            elif not stopping and (pause := self.pause_s(time.monotonic() - began)) > 0:
                self._linger(pause)


def _next_multiple(t: float, step: float) -> float:
    """The first multiple of `step` after `t`."""
    return (math.floor(t / step) + 1) * step


def _of_adapter(kind: Any, adapter: str) -> Any:
    """A condition on an intake row's `kind`: its body goes to `adapter` (an unknown kind goes
    to "modelwatch", as `ADAPTERS.get(kind, "modelwatch")`)."""
    if adapter == "modelwatch":
        return kind.not_in(sorted(k for k, a in ADAPTERS.items() if a != adapter))
    return kind.in_(sorted(k for k, a in ADAPTERS.items() if a == adapter))


def _consume(
    ids: list[int], source: str, key: str, spans: list[RequestSpan]
) -> Callable[[Session], None]:
    """Mark `ids` consumed in the batch's transaction (Superseded if one already was) and tag
    the batch's dead letters with their requests."""

    def consume(session: Session) -> None:
        trace_dead_letters(session, source, key, spans)
        table: Any = IntakeEntry.__table__
        pending = [table.c.id.in_(ids), table.c.consumed_at.is_(None)]
        kept: int = session.execute(  # type: ignore[attr-defined]
            update(table)
            .where(*pending, table.c.key.is_not(None))
            .values(consumed_at=utcnow(), body=None)
        ).rowcount
        gone = delete(table).where(*pending, table.c.key.is_(None))
        dropped: int = session.execute(gone).rowcount  # type: ignore[attr-defined]
        if kept + dropped != len(ids):
            raise Superseded()

    return consume
