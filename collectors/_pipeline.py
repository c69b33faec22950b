"""Pipelined ingest: the source polls in this process while a worker process ingests.

Consuming (kafka-python is pure Python) and ingesting (decode, validate, profile, commit) each
take a core; overlapping them nearly doubles throughput on a two-core machine. Exactly-once is
unchanged: the worker's Ingestor commits aggregates and positions in one transaction and skips
records at or before the stored positions, so a batch re-polled after a rebalance (while an
earlier one was still in flight) is applied once. Batches are ingested in order, at most
`depth` in flight.

Batches polled while the worker is busy are merged into one (up to `max_records`): when
ingest is the slower side, its per-batch costs (reading and rewriting each window's profiles)
are spread over more events instead of the backlog growing.

A worker that dies (kill -9, the OOM killer) breaks the pool: the next `submit`, `idle` or
`drain` raises `BrokenProcessPool`, the source's loop ends with it, and its supervisor starts
the source again (a fresh worker) after its backoff; what the dead worker had not committed is
read again from the stored positions. The worker calls itself `mw-ingest` (Linux: `ps`, `top`);
its log records go through this process's logging (`monitor.common.childlog`).
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from sqlalchemy.engine import Engine

from collectors._base import Batch, RawRecord
from collectors._ingest import Ingestor
from monitor.common.childlog import ChildLog, LogRelay
from monitor.common.children import name_process, watch_parent
from monitor.config import Config, SourceConfig
from monitor.storage import make_engine

# The worker's ingestor of one configured source (collectors.runner.make_ingestor, passed in by
# reference: a spawned worker re-imports it by name, and this module needs no import of the runner).
IngestorFactory = Callable[[Engine, Config, SourceConfig], Ingestor]

_INGESTOR: Any = None
# What the worker process is called (Linux's 15-byte process name).
WORKER_NAME = "mw-ingest"


def _start_worker(
    factory: IngestorFactory,
    database_url: str,
    config: Config,
    source_name: str,
    parent: int,
    log: ChildLog,
) -> None:
    global _INGESTOR
    log.install()
    name_process(WORKER_NAME)
    watch_parent(parent)
    source = next(s for s in config.sources if s.name == source_name)
    _INGESTOR = factory(make_engine(database_url), config, source)
    _INGESTOR.warm_up()


def _ready() -> bool:
    return _INGESTOR is not None


def _ingest(
    columns: tuple[list[str], list[int], list[int], list[bytes]], batch: Batch
) -> dict[str, int]:
    keys, starts, ends, payloads = columns
    records = list(map(RawRecord, keys, starts, ends, payloads))
    _INGESTOR.ingest(Batch(records, batch.ends, batch.details))
    return {k: _INGESTOR.position(k) for k in set(keys)}


class PipelinedIngest:
    """Sends batches to one worker process; hands back committed positions in order."""

    def __init__(
        self,
        database_url: str,
        config: Config,
        source_name: str,
        factory: IngestorFactory,
        depth: int = 2,
        max_records: int = 50_000,
    ) -> None:
        ctx = multiprocessing.get_context("spawn")
        # One worker, one writer to the relay; the pool starts it when it likes, so this
        # process keeps its copy of the relay's pipe (the relay ends with `close`, not EOF).
        self.relay = LogRelay(ctx).start()
        self.pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=ctx,
            initializer=_start_worker,
            initargs=(factory, database_url, config, source_name, os.getpid(), self.relay.child),
        )
        self.depth = depth
        self.max_records = max_records
        self.inflight: deque[Future[dict[str, int]]] = deque()
        self.pending: list[Batch] = []
        # Start the worker now: its interpreter and imports load while the source connects.
        self.pool.submit(_ready)

    def submit(self, batch: Batch) -> list[dict[str, int]]:
        """Queue a batch; returns positions of batches committed meanwhile.

        Blocks only when `max_records` are waiting and the worker is still busy.
        """
        self.pending.append(batch)
        done = self._collect()
        if len(self.inflight) >= self.depth and self._waiting() >= self.max_records:
            done.append(self.inflight.popleft().result())
        if len(self.inflight) < self.depth:
            self._send()
        return done

    def idle(self) -> list[dict[str, int]]:
        """Nothing new was polled: send what waits if the worker has room; never blocks.

        Raises BrokenProcessPool when the worker died, even with nothing in flight."""
        broken = getattr(self.pool, "_broken", False)  # set by the pool's manager thread
        if broken:
            raise BrokenProcessPool(broken)
        done = self._collect()
        if len(self.inflight) < self.depth:
            self._send()
        return done

    def drain(self) -> list[dict[str, int]]:
        """Wait for every queued batch; their committed positions, in order."""
        self._send()
        done = []
        while self.inflight:
            done.append(self.inflight.popleft().result())
        return done

    def close(self) -> None:
        try:
            self.pool.shutdown(wait=True, cancel_futures=False)
        finally:
            self.relay.stop()

    def _collect(self) -> list[dict[str, int]]:
        done = []
        while self.inflight and self.inflight[0].done():
            done.append(self.inflight.popleft().result())
        return done

    def _waiting(self) -> int:
        return sum(len(b.records) for b in self.pending)

    def _send(self) -> None:
        """Send the waiting batches to the worker as one."""
        if not self.pending:
            return
        records = [r for b in self.pending for r in b.records]
        ends = {k: v for b in self.pending for k, v in b.ends.items()}
        details = {k: v for b in self.pending for k, v in b.details.items()}
        self.pending = []
        columns = (
            [r.key for r in records],
            [r.start for r in records],
            [r.end for r in records],
            [r.payload for r in records],
        )
        self.inflight.append(self.pool.submit(_ingest, columns, Batch((), ends, details)))
