"""Two models' baselines and traffic for the isolation tests (in process and served)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import orjson
import pandas as pd
from sqlalchemy import select, update
from sqlalchemy.engine import Engine

from collectors._base import RawRecord
from collectors._ingest import Ingestor
from monitor.baselines.store import save_baseline
from monitor.config import CollectConfig, ModelConfig
from monitor.profiles import profile_frame, specs_for
from monitor.storage import WindowProfile, transaction, utcnow

START = datetime(2026, 11, 2, tzinfo=UTC)
WINDOW = timedelta(hours=1)


def baseline(engine: Engine, model: str, columns: list[str], seed: int = 0, bins: int = 10) -> None:
    """A normal reference of `columns`; replaces any earlier baseline of the model."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({c: rng.normal(size=2000) for c in columns})
    profiles = profile_frame(frame, specs_for(columns, frame, bins=bins))
    save_baseline(engine, model, "1", profiles, replace=True)


def events(model: str, features: list[str], windows: int, per_window: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    out = []
    for w in range(windows):
        for i in range(per_window):
            ts = START + w * WINDOW + timedelta(seconds=i)
            out.append(
                {
                    "request_id": f"{model}-{w}-{i}",
                    "model": model,
                    "model_version": "1",
                    "timestamp": ts.isoformat(),
                    "features": {f: float(rng.normal()) for f in features},
                    "prediction": 0.5,
                }
            )
    return out


def ingest(
    engine: Engine, models: list[ModelConfig], batch: list[dict[str, Any]], first: int = 0
) -> None:
    """Ingest `batch` as the test source's offsets from `first` on (offsets already ingested
    are skipped, as a source's replay would be)."""
    settings = CollectConfig(pipeline=False, allowed_lateness=timedelta(days=3650))
    ingestor = Ingestor(engine, "test", "http", models, settings)
    ingestor.ingest(
        [
            RawRecord(e["model"], first + i, first + i + 1, orjson.dumps(e))
            for i, e in enumerate(batch)
        ]
    )


def poison_window(engine: Engine, model: str, window: int) -> Callable[[], None]:
    """Make one stored window's profiles unreadable (as a corrupt write would); returns a
    function that puts them back (as a repair would, marking the window changed)."""
    where = (WindowProfile.model == model, WindowProfile.window_start == START + window * WINDOW)
    with transaction(engine) as s:
        saved = s.execute(
            select(WindowProfile.slice_key, WindowProfile.column, WindowProfile.payload).where(
                *where
            )
        ).all()
        s.execute(update(WindowProfile).where(*where).values(payload=b"\x00not a profile"))

    def restore() -> None:
        with transaction(engine) as s:
            for key, column, payload in saved:
                s.execute(
                    update(WindowProfile)
                    .where(*where, WindowProfile.slice_key == key, WindowProfile.column == column)
                    .values(payload=payload, updated_at=utcnow())
                )

    return restore
