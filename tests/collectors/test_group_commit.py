"""Group commit of intake appends (SQLite's default): concurrent requests committed together,
each answered after its commit; keys still deduplicate; one failing row fails only itself."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from collectors._group_commit import GroupWriter, _Pending
from collectors._http_intake import IntakeLog
from monitor.errors import ConflictError
from monitor.storage import IntakeEntry, utcnow
from tests.collectors.conftest import event


def _body(i: int) -> bytes:
    return orjson.dumps([event(i), event(i + 1)])


def _stored(engine: Engine) -> list[tuple[str | None, int]]:
    with Session(engine) as session:
        rows = session.execute(select(IntakeEntry.key, IntakeEntry.events)).all()
    return sorted(((k, n) for k, n in rows), key=lambda r: str(r[0]))


def test_concurrent_appends_and_retries_count_once(sqlite_engine: Engine) -> None:
    log = IntakeLog(sqlite_engine, max_backlog=1000)
    assert log._writer is not None  # on by default on SQLite
    jobs = [(k % 10, k) for k in range(40)]  # each of 10 keys posted 4 times, concurrently

    def post(job: tuple[int, int]) -> Any:
        key, _ = job
        return log.append("events", _body(key), 2, f"key-{key}")

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(post, jobs))
    assert sum(a.queued for a in answers) == 20 and sum(a.duplicates for a in answers) == 60
    ids = {a.idempotency_key: a.intake_id for a in answers if a.queued}
    assert len(ids) == len(set(ids.values())) == 10
    assert all(a.intake_id == ids[a.idempotency_key] for a in answers)  # duplicates: same row
    assert _stored(sqlite_engine) == [(f"idem:key-{k}", 2) for k in range(10)]
    keyless = [log.append("events", _body(1), 2, None) for _ in range(2)]
    assert [a.queued for a in keyless] == [2, 2]  # without a key every request counts
    with pytest.raises(ConflictError, match="already used for another body"):
        log.append("events", _body(99), 2, "key-3")


def _row(key: str | None, events: Any = 1) -> dict[str, Any]:
    body = b"[]"
    return {
        "key": key, "kind": "events", "sha256": hashlib.sha256(body).hexdigest(),
        "events": events, "body": body, "received_at": utcnow(),
    }  # fmt: skip


def test_a_failing_row_fails_only_its_own_request(sqlite_engine: Engine) -> None:
    writer = GroupWriter(sqlite_engine)
    group = [
        _Pending(_row("idem:a")),
        _Pending(_row("idem:bad", events=None)),  # NOT NULL: the group's transaction fails
        _Pending(_row("idem:a")),  # a key inserted earlier in the same group: a duplicate
        _Pending(_row(None)),
    ]
    writer._commit(group)
    first, bad, again, keyless = group
    assert all(p.done for p in group)
    assert isinstance(first.result(), int) and isinstance(keyless.result(), int)
    assert again.result() is None
    with pytest.raises(IntegrityError):
        bad.result()
    with Session(sqlite_engine) as session:
        assert session.scalar(select(func.count()).select_from(IntakeEntry)) == 2


def test_postgresql_appends_without_group_commit(engine: Engine) -> None:
    log = IntakeLog(engine, max_backlog=10)
    assert (log._writer is None) == (engine.dialect.name == "postgresql")
    first = log.append("events", _body(1), 2, "k")
    assert first.queued == 2 and log.append("events", _body(1), 2, "k").duplicates == 2
