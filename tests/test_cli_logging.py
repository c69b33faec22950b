"""The quiet scheduler: APScheduler's per-tick records are DEBUG, real warnings stay warnings."""

from __future__ import annotations

import logging

import pytest

from monitor.cli._logging import DemoteNoise


def _record(name: str, level: int, msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


@pytest.mark.parametrize(
    ("name", "level", "msg", "args", "shown"),
    [
        ("apscheduler.executors.default", logging.INFO, 'Running job "%s"', ("evaluate",), False),
        (
            "apscheduler.scheduler",
            logging.WARNING,
            'Execution of job "%s" skipped: maximum number of running instances reached (%d)',
            ("evaluate", 1),
            False,
        ),
        ("apscheduler.scheduler", logging.WARNING, "Run time of job %s was missed", ("x",), True),
        ("apscheduler.executors.default", logging.ERROR, "Job %s raised", ("x",), True),
        ("monitor.daemon", logging.INFO, "serving on %s", ("x",), True),
    ],
)
def test_per_tick_chatter_is_debug_and_the_rest_passes(
    name: str, level: int, msg: str, args: tuple[object, ...], shown: bool
) -> None:
    record = _record(name, level, msg, *args)
    assert DemoteNoise(logging.INFO).filter(record) is shown
    if not shown:
        assert record.levelname == "DEBUG"
        assert DemoteNoise(logging.DEBUG).filter(record), "shown at --log-level debug"
