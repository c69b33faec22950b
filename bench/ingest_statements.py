"""The drain's own ingest cost, deterministically: SQL statements and CPU seconds of the
collectors' `Ingestor` (what the HTTP intake drain runs) over the HTTP ingest bench's events.

Counts every statement the ingestor sends while it ingests `--events` events in batches of 100
into one SQLite database; run it against two checkouts to compare them without the scatter of
a shared machine's rates:

    PYTHONPATH=. python bench/ingest_statements.py [--events 20000]
    (cd ../before && PYTHONPATH=. python ../modelwatch/bench/ingest_statements.py)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from sqlalchemy import event

from bench.ingest import make_events
from collectors._base import RawRecord
from collectors._ingest import Ingestor
from migrations import upgrade
from monitor.config import parse_config
from monitor.storage import make_engine

BATCH = 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args()
    models = [{"name": "fraud", "slices": ["region"]}]
    config = parse_config(
        {"database_url": "sqlite://", "models": models, "collect": {"window": "1h"}}, env={}
    )
    events = make_events(args.events)
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'bench.db'}")
        upgrade(engine)
        ingestor = Ingestor(engine, "http", "http", config.models, config.collect)
        statements = [0]

        def count(*_args: object, **_kwargs: object) -> None:
            statements[0] += 1

        event.listen(engine, "before_cursor_execute", count)
        cpu = time.process_time()
        for first in range(0, len(events), BATCH):
            batch = events[first : first + BATCH]
            ingestor.ingest(
                [RawRecord("k", first + i, first + i + 1, e) for i, e in enumerate(batch)]
            )
        cpu = time.process_time() - cpu
        engine.dispose()
    batches = -(-len(events) // BATCH)
    print(f"{len(events)} events in {batches} batches: {statements[0]} statements, {cpu:.2f} s CPU")


if __name__ == "__main__":
    main()
