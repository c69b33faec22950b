"""Reading user data files (Parquet, CSV) into pandas, with one-line errors naming the file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from monitor.errors import InputError

SUFFIXES = (".parquet", ".pq", ".csv", ".csv.gz")


def read_frame(path: str | Path, columns: Sequence[str] | None = None) -> Any:
    """Read a Parquet or CSV file; missing file, bad format or missing column raise InputError."""
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: file not found")
    name = p.name.lower()
    try:
        if name.endswith((".parquet", ".pq")):
            frame = pd.read_parquet(p)
        elif name.endswith((".csv", ".csv.gz")):
            frame = pd.read_csv(p, low_memory=False)
        else:
            raise InputError(f"{p}: unsupported file type; use one of {', '.join(SUFFIXES)}")
    except InputError:
        raise
    except Exception as exc:  # pyarrow/pandas raise many types for unreadable files
        raise InputError(
            f"{p}: cannot read: {str(exc).splitlines()[0] if str(exc) else exc}"
        ) from None
    require_columns(frame, columns or (), p)
    return frame


def require_columns(frame: Any, columns: Sequence[str], source: str | Path) -> None:
    """InputError naming the first column `frame` lacks."""
    for col in columns:
        if col not in frame.columns:
            raise InputError(f"{source}: column '{col}' not found")
