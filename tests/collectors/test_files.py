"""JSONL serving logs: rotation, truncation, gzip, partial lines, catch-up."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import orjson
from sqlalchemy.engine import Engine

from collectors._files import JsonlSource
from collectors._ingest import Ingestor
from collectors.runner import RunState, pump
from monitor.config import CollectConfig, ModelConfig
from tests.collectors.conftest import aggregated, counters, event

MODELS = [ModelConfig(name="fraud", slices=["region"])]


def lines(start: int, n: int) -> bytes:
    return b"".join(orjson.dumps(event(i)) + b"\n" for i in range(start, start + n))


def drain(engine: Engine, pattern: str) -> JsonlSource:
    """Run a file source until it has caught up with what exists now."""
    ing = Ingestor(engine, "logs", "jsonl", MODELS, CollectConfig(batch_size=70))
    source = JsonlSource("logs", pattern, ing.positions, batch_size=70, poll_interval=0.01)
    pump(source, ing, RunState(), until_caught_up=True)
    source.close()
    return source


def test_rotation_by_rename_and_new_file_counts_every_line_once(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    log = tmp_path / "app.jsonl"
    log.write_bytes(lines(0, 100))
    drain(sqlite_engine, str(tmp_path / "*.jsonl*"))
    with log.open("ab") as fh:
        fh.write(lines(100, 50))
    os.rename(log, tmp_path / "app.jsonl.1")  # logrotate: rename, then a new file
    log.write_bytes(lines(150, 30))
    drain(sqlite_engine, str(tmp_path / "*.jsonl*"))
    # A compressed copy of the rotated file has the same first line: not read twice.
    with gzip.open(tmp_path / "app.jsonl.2.gz", "wb") as gz:
        gz.write((tmp_path / "app.jsonl.1").read_bytes())
    os.remove(tmp_path / "app.jsonl.1")
    drain(sqlite_engine, str(tmp_path / "*.jsonl*"))
    assert aggregated(sqlite_engine) == 180
    assert counters(sqlite_engine, "logs").dead_letters == 0


def test_truncation_restarts_the_file_and_partial_lines_wait(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    log = tmp_path / "app.jsonl"
    partial = orjson.dumps(event(40))
    log.write_bytes(lines(0, 40) + partial[:20])
    drain(sqlite_engine, str(log))
    assert aggregated(sqlite_engine) == 40  # the unterminated line is not read yet
    with log.open("ab") as fh:
        fh.write(partial[20:] + b"\n")
    drain(sqlite_engine, str(log))
    assert aggregated(sqlite_engine) == 41
    log.write_bytes(lines(100, 10))  # copytruncate: same inode, new content
    drain(sqlite_engine, str(log))
    assert aggregated(sqlite_engine) == 51


def test_gzip_backfill_and_malformed_lines(sqlite_engine: Engine, tmp_path: Path) -> None:
    with gzip.open(tmp_path / "old.jsonl.gz", "wb") as gz:
        gz.write(lines(0, 200) + b"{not json}\n" + b"\xff\xfe\n" + lines(200, 5).rstrip(b"\n"))
    drain(sqlite_engine, str(tmp_path / "*.gz"))
    assert aggregated(sqlite_engine) == 205  # the last line of a gzip file may end at EOF
    assert counters(sqlite_engine, "logs").dead_letters == 2
