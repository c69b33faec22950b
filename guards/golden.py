"""Golden sets: a labelled or unlabelled table of rows replayed through both models."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from monitor.errors import InputError


@dataclass(frozen=True)
class GoldenSet:
    """Rows (a pandas DataFrame) and the roles of their columns."""

    path: Path
    frame: Any
    id_column: str | None = None
    label_column: str | None = None
    slice_columns: tuple[str, ...] = ()
    features: tuple[str, ...] = ()

    @property
    def rows(self) -> int:
        return len(self.frame)

    def ids(self) -> Any:
        """Row ids: the id column, else the row position."""

        if self.id_column is None:
            return np.arange(self.rows)
        return self.frame[self.id_column].to_numpy()


def load_golden(
    path: Path,
    *,
    id_column: str | None = None,
    label_column: str | None = None,
    slice_by: Sequence[str] = (),
    features: Sequence[str] | None = None,
) -> GoldenSet:
    """Read a golden set (.parquet or .csv) and check the named columns exist.

    Features default to every column except the id, label and slice columns, in file order.
    """
    frame = _read(path)
    if frame.empty:
        raise InputError(f"{path}: golden set has no rows")
    named = [c for c in (id_column, label_column, *slice_by, *(features or ())) if c]
    missing = [c for c in named if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: column(s) not found: {', '.join(missing)}")
    roles = {id_column, label_column, *slice_by}
    chosen = tuple(features) if features else tuple(c for c in frame.columns if c not in roles)
    if label_column is not None and frame[label_column].isna().any():
        raise InputError(f"{path}: label column {label_column!r} has missing values")
    return GoldenSet(path, frame, id_column, label_column, tuple(slice_by), chosen)


def _read(path: Path) -> Any:
    import pandas as pd

    if not path.is_file():
        raise InputError(f"{path}: golden set not found")
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            return pd.read_parquet(path)
        if suffix == ".csv":
            return pd.read_csv(path)
    except Exception as exc:  # pandas/pyarrow raise many types for unreadable files
        raise InputError(f"{path}: cannot read golden set: {exc}".splitlines()[0]) from None
    raise InputError(f"{path}: golden set must be .parquet or .csv, not {suffix or 'no suffix'}")


def sha256_file(path: Path) -> str:
    """Content hash of a file, for the gate history."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
