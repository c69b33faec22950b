"""Scheduled training-serving skew: read a check's two feature sources, compare, store.

A source is a Parquet (or CSV) file, a directory of them, or a SQL query run through
SQLAlchemy on the URL its `url_env` variable holds. Every problem of a source (missing file,
unreadable data, a failing query, more rows than `max_rows`, a missing key) is an InputError
naming the source, never its URL.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import create_engine, make_url, select, text
from sqlalchemy.engine import Engine

from monitor.config import FeatureSourceConfig, SkewCheckConfig
from monitor.data.datasets import open_source
from monitor.errors import InputError
from monitor.skew import SkewReport, compute_skew
from monitor.storage import SkewRun, session_factory, transaction

# Seconds a SQL source may take to connect; the query itself is bounded by `max_rows`.
CONNECT_TIMEOUT_S = 10


def read_source(
    src: FeatureSourceConfig, key: str | None, environ: Mapping[str, str] | None = None
) -> Any:
    """The source's rows as a pandas DataFrame; InputError naming the source (or its `key`
    column when one is given and missing)."""
    frame = _read_sql(src, environ or os.environ) if src.sql is not None else _read_files(src)
    if len(frame) > src.max_rows:
        raise InputError(f"{src.name}: more than max_rows={src.max_rows} rows")
    if key is not None and key not in frame.columns:
        raise InputError(f"{src.name}: key column '{key}' not found")
    return frame


def _read_files(src: FeatureSourceConfig) -> Any:
    import pandas as pd

    data = open_source(str(src.path))
    frames, n = [], 0
    for batch in data.batches(data.columns):
        frames.append(batch)
        n += len(batch)
        if n > src.max_rows:
            break
    return pd.concat(frames, ignore_index=True) if frames else data.empty_frame(data.columns)


def _read_sql(src: FeatureSourceConfig, environ: Mapping[str, str]) -> Any:
    import pandas as pd

    url = environ.get(src.url_env or "")
    if not url:
        raise InputError(f"{src.name}: environment variable {src.url_env} is not set")
    try:
        parsed = make_url(url)
        if parsed.drivername in ("postgresql", "postgres"):  # psycopg 3, as the daemon's own
            parsed = parsed.set(drivername="postgresql+psycopg")
        engine = create_engine(parsed, connect_args=_connect_args(parsed.get_backend_name()))
    except Exception as exc:  # a malformed URL; its text may hold a password: not echoed
        raise InputError(f"{src.name}: invalid database URL ({type(exc).__name__})") from None
    try:
        with engine.connect() as conn:
            result = conn.execute(text(src.sql or ""))
            rows = result.fetchmany(src.max_rows + 1)
            return pd.DataFrame(rows, columns=list(result.keys()))
    except Exception as exc:  # drivers raise many types; the first line says what went wrong
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{src.name}: query failed: {first[:300]}") from None
    finally:
        engine.dispose()


def _connect_args(backend: str) -> dict[str, Any]:
    if backend == "postgresql":
        return {"connect_timeout": CONNECT_TIMEOUT_S}
    if backend == "sqlite":
        return {"timeout": CONNECT_TIMEOUT_S}
    return {}


def compare_frames(check: SkewCheckConfig, serving: Any, offline: Any) -> SkewReport:
    """The check's skew of two frames read from its sources."""
    names = (check.serving.name, check.offline.name)
    return compute_skew(serving, offline, check.key, check.columns or None, check.rtol,
                        check.atol, names=names)  # fmt: skip


def status_of(check: SkewCheckConfig, report: SkewReport) -> str:
    """`skew` when a feature's mismatch rate is above the check's threshold, else `ok`."""
    worst = max((f.mismatch_rate for f in report.features), default=0.0)
    return "skew" if worst > check.threshold else "ok"


def store_skew(
    engine: Engine, check: SkewCheckConfig, report: SkewReport, evaluated_at: datetime
) -> int:
    """Append one run to the check's history; the row's id."""
    worst = max((f.mismatch_rate for f in report.features), default=None)
    with transaction(engine) as s:
        row = SkewRun(
            check_name=check.name, model=check.model, status=status_of(check, report),
            n_joined=report.n_joined, worst_rate=worst,
            report={**report.to_dict(), "threshold": check.threshold},
            evaluated_at=evaluated_at,
        )  # fmt: skip
        s.add(row)
        s.flush()
        return int(row.id)


def skew_history(engine: Engine, check: str, limit: int = 1) -> list[SkewRun]:
    """The newest stored runs of a check, newest first."""
    t = SkewRun
    stmt = (
        select(t).where(t.check_name == check).order_by(t.evaluated_at.desc(), t.id.desc())
    ).limit(limit)
    with session_factory(engine)() as s:
        return list(s.scalars(stmt))
