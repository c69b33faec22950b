"""Group commit for the intake log on SQLite: concurrent appends committed by one writer.

SQLite has one writer at a time. With one transaction per request, concurrent requests (and the
drain's batch transaction) queue on the database lock, each in SQLite's busy handler, which
sleeps in growing steps (up to 100 ms) and so wakes late; every request then pays its own
commit. Here requests hand their row to one writer thread and wait: the writer takes every row
queued meanwhile, inserts them in ONE transaction and answers each request only after that
commit — so an acknowledged request is as durable as before, and N waiting requests cost one lock
acquisition and one commit.

A key that exists already is not an error in the group: the insert is
`ON CONFLICT (key) DO NOTHING RETURNING id`, and a row that returns no id is a duplicate. If the
group's transaction fails, each of its rows is tried again in a transaction of its own, so one
failing row fails only its own request.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any, cast

from sqlalchemy import Table
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine

from monitor.errors import StorageError
from monitor.storage import IntakeEntry

_TABLE = cast(Table, IntakeEntry.__table__)
_INSERT = (
    sqlite_insert(_TABLE).on_conflict_do_nothing(index_elements=["key"]).returning(_TABLE.c.id)
)
# Rows per transaction at most (a burst larger than this is committed in several groups).
MAX_GROUP = 256
# How long a request waits for its group's commit (busy_timeout is 30 s) before it fails.
WAIT_S = 60.0

Pending = tuple[dict[str, Any], "Future[int | None]"]


class GroupWriter:
    """Inserts intake rows through one writer thread, committing concurrent ones together."""

    def __init__(self, engine: Engine, max_group: int = MAX_GROUP) -> None:
        self.engine = engine
        self.max_group = max_group
        self._queue: queue.SimpleQueue[Pending] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def insert(self, row: dict[str, Any]) -> int | None:
        """Insert `row` and wait for its commit: its id, or None when its key exists already.
        Raises the database's error (the group's, or the row's own)."""
        future: Future[int | None] = Future()
        self._queue.put((row, future))
        self._ensure_writer()
        try:
            return future.result(WAIT_S)
        except TimeoutError:
            raise StorageError(f"intake log: not committed within {WAIT_S:.0f}s") from None

    def _ensure_writer(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            with self._lock:
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(
                        target=self._run, name="intake-group-commit", daemon=True
                    )
                    self._thread.start()

    def _run(self) -> None:
        while True:
            group = [self._queue.get()]
            while len(group) < self.max_group:
                try:
                    group.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._commit(group)

    def _commit(self, group: list[Pending]) -> None:
        try:
            with self.engine.begin() as connection:
                ids = [connection.execute(_INSERT, row).scalar() for row, _ in group]
        except Exception as exc:  # one failing row must not fail the others: each on its own
            if len(group) == 1:
                group[0][1].set_exception(exc)
                return
            for pending in group:
                self._commit([pending])
            return
        for (_, future), row_id in zip(group, ids, strict=True):
            future.set_result(None if row_id is None else int(row_id))
