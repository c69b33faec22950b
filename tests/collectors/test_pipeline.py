"""The pipelined ingest's worker process logs through the parent's logging, at its level and
with its secrets scrubbed, up to the worker's last record before `close`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from collectors._pipeline import PipelinedIngest
from monitor.config import Config, SourceConfig, parse_config
from tests.logged import root_lines

SECRET = "hunter2-Xq9"
CONFIG = parse_config({
    "models": [{"name": "fraud"}],
    "sources": [{"name": "logs", "type": "jsonl", "path": "/var/log/*.jsonl"}],
})  # fmt: skip


class _Quiet:
    def warm_up(self) -> None:
        logging.getLogger("tests.worker").debug("below the parent's level")


def _noisy_factory(_engine: Engine, _config: Config, source: SourceConfig) -> Any:
    """The worker's ingestor factory: logs where it connects, password and token included."""
    log = logging.getLogger("tests.worker")
    log.info("source %s: reading via https://svc:%s@example.org/?token=%s", source.name,
             SECRET, SECRET)  # fmt: skip
    return _Quiet()


@pytest.mark.slow
def test_the_ingest_workers_records_reach_the_parent_scrubbed(tmp_path: Path) -> None:
    with root_lines(logging.INFO) as lines:
        pipe = PipelinedIngest(f"sqlite:///{tmp_path / 'mw.db'}", CONFIG, "logs", _noisy_factory)
        assert pipe.pool.submit(bool, 1).result(60)  # the worker has started
        pipe.close()
    assert [line.split(" ", 1)[1] for line in lines.lines] == [
        "INFO tests.worker: source logs: reading via https://<redacted>@example.org/?token=<redacted>"
    ]
    assert not pipe.relay.alive()
