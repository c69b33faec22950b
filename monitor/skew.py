"""Training-serving skew: join serving and offline feature rows by key, compare per feature."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from monitor.errors import InputError
from monitor.profiles.categorical import category_label

DEFAULT_RTOL = 1e-6
DEFAULT_ATOL = 1e-9
DEFAULT_WORST = 5


@dataclass(frozen=True)
class FeatureSkew:
    """How one feature differs between serving and offline rows of the same keys."""

    column: str
    kind: str
    n_compared: int
    mismatches: int
    mismatch_rate: float
    mean_abs_diff: float | None
    worst: list[dict[str, Any]]


@dataclass(frozen=True)
class SkewReport:
    """Join counts (rows missing on either side included) and per-feature skew, worst first."""

    key: str
    n_serving: int
    n_offline: int
    n_joined: int
    only_serving: int
    only_offline: int
    missing_columns: dict[str, list[str]]
    features: list[FeatureSkew]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compute_skew(
    serving: Any,
    offline: Any,
    key: str,
    columns: Sequence[str] | None = None,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    worst: int = DEFAULT_WORST,
    names: tuple[str, str] = ("serving", "offline"),
) -> SkewReport:
    """Compare two DataFrames row by row on `key`.

    Numeric values match when ``|s - o| <= atol + rtol * |o|``; other values when their
    string forms are equal; two nulls match, one null does not. Keys must be unique per side.
    """
    import pandas as pd

    for frame, name in ((serving, names[0]), (offline, names[1])):
        _check_key(frame, key, name)
    shared = [c for c in serving.columns if c in offline.columns and c != key]
    cols = list(columns) if columns else shared
    for col in cols:
        for frame, name in ((serving, names[0]), (offline, names[1])):
            if col not in frame.columns:
                raise InputError(f"{name}: column '{col}' not found")
    joined = pd.merge(serving, offline, on=key, how="outer", suffixes=("__s", "__o"),
                      indicator=True)  # fmt: skip
    both = joined[joined["_merge"] == "both"]
    features = [_feature(both, key, col, rtol, atol, worst) for col in cols]
    features.sort(key=lambda f: (-f.mismatch_rate, f.column))
    return SkewReport(
        key=key,
        n_serving=len(serving),
        n_offline=len(offline),
        n_joined=len(both),
        only_serving=int((joined["_merge"] == "left_only").sum()),
        only_offline=int((joined["_merge"] == "right_only").sum()),
        missing_columns={
            names[0]: sorted(c for c in offline.columns if c not in serving.columns),
            names[1]: sorted(c for c in serving.columns if c not in offline.columns),
        },
        features=features,
    )


def _check_key(frame: Any, key: str, name: str) -> None:
    if key not in frame.columns:
        raise InputError(f"{name}: key column '{key}' not found")
    dupes = frame[key][frame[key].duplicated()]
    if len(dupes):
        raise InputError(
            f"{name}: key '{key}' is not unique ({len(dupes)} duplicate rows, "
            f"e.g. {dupes.iloc[0]!r})"
        )


def _feature(both: Any, key: str, col: str, rtol: float, atol: float, n_worst: int) -> FeatureSkew:
    s, o = both[f"{col}__s"], both[f"{col}__o"]
    s_null, o_null = s.isna().to_numpy(), o.isna().to_numpy()
    numeric = _is_numeric(s) and _is_numeric(o)
    if numeric:
        sv = s.to_numpy(dtype=np.float64, na_value=np.nan)
        ov = o.to_numpy(dtype=np.float64, na_value=np.nan)
        diff = np.abs(sv - ov)
        close = np.zeros(len(both), dtype=bool)
        ok = ~s_null & ~o_null
        close[ok] = diff[ok] <= atol + rtol * np.abs(ov[ok])
        score = np.where(ok, diff, np.inf)
        mad = float(diff[ok].mean()) if ok.any() else None
    else:
        sl = np.array([category_label(v) for v in s], dtype=object)
        ol = np.array([category_label(v) for v in o], dtype=object)
        close = (sl == ol) & ~s_null & ~o_null
        score = np.zeros(len(both))
        mad = None
    match = close | (s_null & o_null)
    bad = np.flatnonzero(~match)
    order = bad[np.argsort(-score[bad], kind="stable")][:n_worst]
    keys, sval, oval = both[key].to_numpy(), s.to_numpy(), o.to_numpy()
    worst = [{"key": _plain(keys[i]), "serving": _plain(sval[i]), "offline": _plain(oval[i])}
             for i in order]  # fmt: skip
    n = len(both)
    return FeatureSkew(col, "numeric" if numeric else "categorical", n, int(bad.size),
                       float(bad.size / n) if n else 0.0, mad, worst)  # fmt: skip


def _is_numeric(series: Any) -> bool:
    return getattr(series.dtype, "kind", "O") in "iuf"


def _plain(value: Any) -> Any:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, np.generic):
        value = value.item()
    return value if isinstance(value, int | float | str | bool) else str(value)
