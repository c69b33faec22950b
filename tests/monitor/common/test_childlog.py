"""A spawned child's log records reach the parent's handlers at the parent's level, scrubbed of
secrets; a flooded relay drops and counts instead of blocking the child; a killed child, or one
that left a torn frame, never keeps the parent's relay from stopping."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from monitor.common.childlog import MAX_FRAME, ChildLog, LogRelay, RelayHandler, encode
from tests.logged import Lines, root_lines

CTX = multiprocessing.get_context("spawn")
SECRET = "hunter2-Xq9"


@pytest.fixture
def captured() -> Iterator[Lines]:
    """What reaches the root logger (no redacting filter there: the child must scrub)."""
    with root_lines(logging.getLogger().level) as handler:
        yield handler


def _talk(log: ChildLog) -> None:
    log.install()
    child = logging.getLogger("tests.child")
    child.debug("debug line")
    child.info("info line from %s", "the child")
    child.warning("fetching https://svc:%s@example.org/x?token=%s", SECRET, SECRET)
    try:
        raise RuntimeError(f"password={SECRET}")
    except RuntimeError:
        child.exception("it failed")


def _crash(log: ChildLog) -> None:
    with log.relayed():
        thread = threading.Thread(target=_fail, args=("thread",), name="helper")
        thread.start()
        thread.join()
        _fail("target")


def _fail(where: str) -> None:
    raise RuntimeError(f"{where}: cannot reach https://svc:{SECRET}@example.org/")


def _flood(log: ChildLog, torn: bool) -> None:
    """Log until killed; with `torn`, leave half a frame in the pipe and kill itself."""
    relayed = log.install()
    logging.getLogger("tests.child").warning("started")
    if torn:
        relayed.close()  # the record above is sent whole first
        frame = encode(logging.makeLogRecord({"msg": "never whole"}))
        os.write(log.writer.fileno(), frame[: len(frame) // 2])
        os.kill(os.getpid(), signal.SIGKILL)
    while True:
        logging.getLogger("tests.child").warning("busy")


def _record(msg: str, **extra: Any) -> logging.LogRecord:
    fields = {"name": "tests.made", "levelno": logging.WARNING, "levelname": "WARNING"}
    return logging.makeLogRecord({**fields, "msg": msg, **extra})


def _run_child(captured: Lines, level: int) -> list[str]:
    logging.getLogger().setLevel(level)
    with LogRelay(CTX) as relay:
        process = CTX.Process(target=_talk, args=(relay.child,), name="kid", daemon=True)
        process.start()
        relay.child_started()
        process.join(30)
    assert process.exitcode == 0 and not relay.alive()
    return captured.lines


def test_a_childs_records_reach_the_parent_at_its_level_scrubbed(captured: Lines) -> None:
    lines = _run_child(captured, logging.INFO)
    assert lines[0] == "kid INFO tests.child: info line from the child"
    assert lines[1] == (
        "kid WARNING tests.child: fetching https://<redacted>@example.org/x?token=<redacted>"
    )
    assert lines[2].startswith("kid ERROR tests.child: it failed\nTraceback (most recent call")
    assert lines[2].endswith("RuntimeError: password=<redacted>")
    assert len(lines) == 3 and not any(SECRET in line for line in lines)
    assert captured.records[0].process != os.getpid()  # the child's own pid and name


@pytest.mark.slow  # a spawned child: ~0.25 s on an idle machine
def test_below_the_parents_level_a_childs_records_are_not_relayed(captured: Lines) -> None:
    lines = _run_child(captured, logging.WARNING)
    assert [line.split(":")[0] for line in lines] == [
        "kid WARNING tests.child",
        "kid ERROR tests.child",
    ]


@pytest.mark.slow  # a spawned child: ~0.25 s on an idle machine
@pytest.mark.parametrize("torn", [False, True], ids=["killed", "torn-frame"])
def test_a_killed_child_never_keeps_the_relay_from_stopping(captured: Lines, torn: bool) -> None:
    # Like the pool's relay: this process keeps its copy of the pipe, so no EOF ever comes.
    relay = LogRelay(CTX, level=logging.INFO).start()
    process = CTX.Process(target=_flood, args=(relay.child, torn), name="kid", daemon=True)
    process.start()
    try:
        deadline = time.monotonic() + 30
        while not captured.lines and time.monotonic() < deadline:
            time.sleep(0.05)
        assert captured.lines[0] == "kid WARNING tests.child: started"
    finally:
        process.join(10 if torn else 0)  # torn: it killed itself
        if process.is_alive():
            os.kill(process.pid, signal.SIGKILL)  # mid-record, most likely
            process.join(10)
    assert process.exitcode == -signal.SIGKILL
    started = time.monotonic()
    relay.stop(timeout=0.5)
    assert not relay.alive() and time.monotonic() - started < 5
    assert "never whole" not in "".join(captured.lines)


@pytest.mark.slow  # a spawned child: ~0.25 s on an idle machine
def test_a_crash_is_logged_through_the_parent_never_printed_raw(
    captured: Lines, capfd: pytest.CaptureFixture[str]
) -> None:
    with LogRelay(CTX, level=logging.INFO) as relay:
        process = CTX.Process(target=_crash, args=(relay.child,), name="kid", daemon=True)
        process.start()
        relay.child_started()
        process.join(30)
    assert process.exitcode == 1
    thread, target = captured.lines
    assert thread.startswith(
        "kid ERROR monitor.common.childlog: uncaught exception in thread helper"
    )
    assert target.startswith("kid CRITICAL monitor.common.childlog: process kid failed\nTraceback")
    assert target.endswith("RuntimeError: target: cannot reach https://<redacted>@example.org/")
    assert SECRET not in captured.text() + "".join(capfd.readouterr())


def test_a_record_that_cannot_be_formatted_is_named_not_sent(captured: Lines) -> None:
    with LogRelay(CTX, level=logging.INFO) as relay:
        handler = RelayHandler(relay.child.writer)
        handler.handle(_record("token %d", args=(SECRET,)))
        handler.close()
    (line,) = captured.lines
    assert line.startswith("MainProcess WARNING tests.made: a log record that could not be sent:")
    assert SECRET not in line


def test_a_full_relay_drops_and_counts_records_instead_of_waiting(captured: Lines) -> None:
    relay = LogRelay(CTX, level=logging.INFO)  # not reading yet: the pipe and queue fill
    handler = RelayHandler(relay.child.writer, capacity=10)
    flood = [_record(f"record {i}") for i in range(500)]
    for record in flood:  # returns, however full the pipe
        handler.handle(record)
    assert handler.dropped > len(flood) // 2
    with relay:
        handler.close()
    messages = [r.getMessage() for r in captured.records]
    notices = [m for m in messages if m.endswith("dropped so far (the relay was full)")]
    assert notices[-1].startswith(f"{handler.dropped} log records of this process dropped")
    assert len(messages) - len(notices) + handler.dropped == len(flood)


def test_a_garbled_stream_ends_the_relay_with_a_warning(captured: Lines) -> None:
    relay = LogRelay(CTX, level=logging.INFO).start()
    os.write(relay.child.writer.fileno(), (MAX_FRAME + 1).to_bytes(4, "big") + b"junk")
    relay.child.writer.close()
    relay.stop()
    assert captured.lines == [
        "MainProcess WARNING monitor.common.childlog: log relay: a garbled frame from a child "
        "process; its records are lost"
    ]


def test_an_unencodable_value_travels_as_text(captured: Lines) -> None:
    record = _record("with extra", thing=object())
    relay = LogRelay(CTX, level=logging.INFO)
    with relay:
        handler = RelayHandler(relay.child.writer)
        handler.handle(record)
        handler.close()
    (got,) = captured.records
    thing: Any = got.__dict__["thing"]
    assert got.getMessage() == "with extra" and thing.startswith("<object object at")
