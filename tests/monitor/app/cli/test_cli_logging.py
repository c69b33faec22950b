"""The quiet scheduler: APScheduler's per-tick records are DEBUG, real warnings stay warnings.
Secrets are redacted in every record, a spawned worker's included, which is written in the
chosen format."""

from __future__ import annotations

import json
import logging
import multiprocessing
import sys
from collections.abc import Iterator

import pytest

from monitor.app.cli._logging import (
    NOISY,
    DemoteNoise,
    JsonFormatter,
    RedactSecrets,
    config_secrets,
    configure,
)
from monitor.common.childlog import ChildLog, LogRelay
from monitor.config import parse_config

LITERAL = "literal-Zk7q"


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
        ("monitor.app.daemon", logging.INFO, "serving on %s", ("x",), True),
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


def test_secrets_are_redacted_in_messages_arguments_and_tracebacks() -> None:
    """What the patterns find (URL userinfo and query values, bearer credentials, key=value
    secrets) and the literal values a config names, wherever they appear in a record."""
    config = parse_config(
        {
            "database_url": "postgresql+psycopg://mw:db-pa55word@db:5432/mw",
            "api": {"tokens": [{"name": "ops", "scopes": ["admin"], "token": "tok-9f8e7d"}]},
            "alerts": {
                "receivers": [
                    {
                        "name": "h",
                        "type": "webhook",
                        "url": "https://u:hook-pw@x.test/h",
                        "secret_env": "S",
                    }
                ]
            },
        },  # fmt: skip
        env={"S": "signing-key-1"},
    )
    secrets = config_secrets(config, {"S": "signing-key-1"})
    assert set(secrets) == {"tok-9f8e7d", "signing-key-1", "db-pa55word", "hook-pw"}
    record = _record("httpx", logging.INFO, "HTTP Request: %s %s", "POST",
                     "https://u:hook-pw@x.test/h?token=abc123&sig=s1gnature-7c")  # fmt: skip
    try:
        raise RuntimeError("cannot connect: password=db-pa55word; Authorization: Bearer tok-9f8e7d")
    except RuntimeError:
        record.exc_info = sys.exc_info()
    assert RedactSecrets(secrets).filter(record)
    shown = logging.Formatter().format(record) + JsonFormatter().format(record)
    for secret in ("hook-pw", "abc123", "s1gnature-7c", "db-pa55word", "tok-9f8e7d"):
        assert secret not in shown
    assert "HTTP Request: POST https://<redacted>@x.test/h?token=<redacted>" in shown


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """`configure` replaces the root's handlers and sets levels: put them back afterwards."""
    names = ("", *NOISY)
    saved = [(logging.getLogger(n), logging.getLogger(n).level) for n in names]
    handlers = logging.getLogger().handlers[:]
    yield
    logging.getLogger().handlers[:] = handlers
    for logger, level in saved:
        logger.setLevel(level)


def _worker(log: ChildLog) -> None:
    with log.relayed():
        worker = logging.getLogger("tests.worker")
        worker.debug("below the chosen level")
        try:
            raise RuntimeError(f"https://svc:pw-3x@db.test/x failed with key {LITERAL}")
        except RuntimeError:
            worker.exception("sync failed for %s", LITERAL)


@pytest.mark.slow  # a spawned worker
@pytest.mark.usefixtures("restored_logging")
def test_a_workers_records_come_out_in_the_chosen_format_redacted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure("info", "json", secrets=[LITERAL])
    ctx = multiprocessing.get_context("spawn")
    with LogRelay(ctx) as relay:
        process = ctx.Process(target=_worker, args=(relay.child,), daemon=True)
        process.start()
        relay.child_started()
        process.join(30)
    (line,) = capsys.readouterr().err.splitlines()
    doc = json.loads(line)
    assert (doc["level"], doc["logger"]) == ("error", "tests.worker")
    assert doc["message"] == "sync failed for <redacted>"
    assert doc["exception"].endswith(
        "RuntimeError: https://<redacted>@db.test/x failed with key <redacted>"
    )
    assert LITERAL not in line and "pw-3x" not in line
