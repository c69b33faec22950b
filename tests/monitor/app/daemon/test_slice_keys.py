"""A baseline made from pandas bool and int slice columns meets windows of JSON events.

Baselines, windows and results share one slice-key format, so a window's `{"is_new":"true"}`
and `{"tier":"3"}` slices are compared with the baseline's same slices (drift evaluated), not
reported as missing or insufficient.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import orjson
import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from collectors._base import RawRecord
from collectors._ingest import Ingestor
from monitor.app.daemon.wiring import Monitoring
from monitor.baselines.store import save_baseline
from monitor.config import parse_config
from monitor.profiles import profile_frame, specs_for
from monitor.storage import DriftResultRow, session_factory


def test_bool_and_int_slices_of_a_baseline_meet_the_windows_slices(engine: Engine) -> None:
    rng = np.random.default_rng(3)
    n = 3000
    frame = pd.DataFrame(
        {
            "amount": rng.normal(size=n),
            "is_new": rng.random(n) < 0.5,  # a pandas bool column
            "tier": rng.integers(1, 4, size=n),  # an int64 column
        }
    )
    baseline = profile_frame(frame, specs_for(["amount"], frame), ["is_new", "tier"])
    save_baseline(engine, "m", "1", baseline)
    config = parse_config(
        {
            "database_url": str(engine.url),
            "models": [{"name": "m", "slices": ["is_new", "tier"]}],
            "collect": {"pipeline": False},
        },
        env={},
    )
    start = (datetime.now(UTC).timestamp() // 3600 - 3) * 3600
    events = [
        {
            "request_id": f"r{i}",
            "model": "m",
            "model_version": "1",
            "timestamp": start + i,
            "features": {"amount": float(row.amount)},
            "prediction": 0.5,
            # JSON true/false; ints sent as floats on purpose: 3.0 is the slice "3"
            "metadata": {"is_new": bool(row.is_new), "tier": float(row.tier)},
        }
        for i, row in enumerate(frame.itertuples())
    ]
    records = [RawRecord("t", i, i + 1, orjson.dumps(e)) for i, e in enumerate(events)]
    Ingestor(engine, "t", "http", config.models, config.collect).ingest(records)
    Monitoring(engine, config)(now=datetime.now(UTC))

    with session_factory(engine)() as s:
        rows = list(s.scalars(select(DriftResultRow).where(DriftResultRow.column == "amount")))
    by_slice = {r.slice_key: r.status for r in rows}
    expected = {
        "",
        '{"is_new":"false"}',
        '{"is_new":"true"}',
        '{"tier":"1"}',
        '{"tier":"2"}',
        '{"tier":"3"}',
    }
    assert set(baseline.slice_keys) | {""} == expected
    assert expected <= set(by_slice)
    assert all(by_slice[k] in ("ok", "drift") for k in expected), by_slice
