"""Group commit for the intake log on SQLite: concurrent appends committed together.

SQLite has one writer at a time. With one transaction per request, concurrent requests (and the
drain's batch transaction) queue on the database lock, each in SQLite's busy handler, which
sleeps in growing steps (up to 100 ms) and so wakes late; every request then pays its own
commit. Here a request queues its row; if no commit is under way its own thread becomes the
leader and inserts every row queued so far in ONE transaction, else it waits for the leader
that takes its row. Each request is answered only after the commit that holds its row, so an
acknowledged request is as durable as before; a lone request commits on its own thread (no
hand-off), and N waiting requests cost one lock acquisition and one commit.

A key that exists already is not an error in the group: the insert is
`ON CONFLICT (key) DO NOTHING RETURNING id`, and a row that returns no id is a duplicate. If the
group's transaction fails, each of its rows is tried again in a transaction of its own, so one
failing row fails only its own request.
"""

from __future__ import annotations

import threading
import time
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


class _Pending:
    """One queued row and, once its group committed, its id (None: key exists) or error."""

    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row
        self.done = False
        self.row_id: int | None = None
        self.error: BaseException | None = None

    def result(self) -> int | None:
        if self.error is not None:
            raise self.error
        return self.row_id


class GroupWriter:
    """Inserts intake rows, committing the rows of concurrent callers together."""

    def __init__(self, engine: Engine, max_group: int = MAX_GROUP) -> None:
        self.engine = engine
        self.max_group = max_group
        self._cond = threading.Condition()
        self._queue: list[_Pending] = []
        self._committing = False

    def insert(self, row: dict[str, Any]) -> int | None:
        """Insert `row` and wait for its commit: its id, or None when its key exists already.
        Raises the database's error (the group's, or the row's own)."""
        pending = _Pending(row)
        deadline = time.monotonic() + WAIT_S
        with self._cond:
            self._queue.append(pending)
            while not pending.done:
                if not self._committing:
                    self._lead()
                    continue
                left = deadline - time.monotonic()
                if left <= 0 and pending in self._queue:  # not taken by a leader: never stored
                    self._queue.remove(pending)
                    raise StorageError(f"intake log: not committed within {WAIT_S:.0f}s")
                self._cond.wait(max(left, 0.1))
        return pending.result()

    def _lead(self) -> None:
        """Commit the queued rows (up to max_group) as leader; called holding the condition."""
        group, self._queue = self._queue[: self.max_group], self._queue[self.max_group :]
        self._committing = True
        self._cond.release()
        try:
            self._commit(group)
        finally:
            for pending in group:  # only if interrupted: nobody waits forever
                if not pending.done:
                    pending.error = StorageError("intake log: commit interrupted")
                    pending.done = True
            self._cond.acquire()
            self._committing = False
            self._cond.notify_all()

    def _commit(self, group: list[_Pending]) -> None:
        try:
            with self.engine.begin() as connection:
                ids = [connection.execute(_INSERT, p.row).scalar() for p in group]
        except Exception as exc:  # one failing row must not fail the others: each on its own
            if len(group) == 1:
                group[0].error, group[0].done = exc, True
                return
            for pending in group:
                self._commit([pending])
            return
        for pending, row_id in zip(group, ids, strict=True):
            pending.row_id = None if row_id is None else int(row_id)
            pending.done = True
