"""Column roles shared by `drift`, `baseline create` and `skew`: which columns are compared
(their flags: `_options.role_options`).

An id, a timestamp or an excluded column is never compared; target and prediction columns are
compared (label and prediction drift) and named as such. A column that is unique per row
(integer or string) is an id in all but name: it is left out with a warning unless named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from monitor.common.columns import n_present, n_unique
from monitor.detectors import MIN_N
from monitor.errors import InputError
from monitor.profiles.dataset import DEFAULT_MAX_SLICE_VALUES

if TYPE_CHECKING:
    from monitor.config.columns import ColumnsConfig


@dataclass(frozen=True)
class ColumnRoles:
    """What each named column is; `exclude` lists columns never compared."""

    exclude: tuple[str, ...] = ()
    id_column: str | None = None
    target: str | None = None
    prediction: str | None = None
    timestamp: str | None = None

    @property
    def skipped(self) -> tuple[str, ...]:
        """Columns that are never compared."""
        named = (self.id_column, self.timestamp)
        return (*self.exclude, *(c for c in named if c))

    @property
    def named(self) -> tuple[str, ...]:
        """Every column a role names (they must exist)."""
        roles = (self.id_column, self.target, self.prediction, self.timestamp)
        return (*self.exclude, *(c for c in roles if c))


def roles_from(opts: dict[str, Any], model: str | None = None) -> ColumnRoles:
    """The roles on the command line (see `role_options`) over those of `model` in the file
    given by --config (`models[].columns`): a flag wins, --exclude adds to the config's."""
    cfg = _configured(opts.get("config_path"), model)
    exclude = tuple(c.strip() for v in opts.get("exclude", ()) for c in v.split(",") if c.strip())

    def role(flag: str, key: str) -> str | None:
        value: str | None = opts.get(flag) or (getattr(cfg, key) if cfg else None)
        return value

    return ColumnRoles(
        exclude=(*(cfg.exclude if cfg else ()), *exclude),
        id_column=role("id_column", "id"),
        target=role("target_column", "target"),
        prediction=role("prediction_column", "prediction"),
        timestamp=role("timestamp_column", "timestamp"),
    )


def _configured(config_path: Path | None, model: str | None) -> ColumnsConfig | None:
    """The model's `columns` in the config file; None without a file, a model or that model
    (the config models load only then)."""
    if config_path is None or model is None:
        return None
    from monitor.config import load_config

    found = [m.columns for m in load_config(config_path).models if m.name == model]
    return found[0] if found else None


def select_columns(
    frame: Any, wanted: Sequence[str] | None, slice_by: Sequence[str], roles: ColumnRoles,
    source: str | Path,
) -> list[str]:  # fmt: skip
    """The columns to compare: `wanted` as given, else every column but slices, ids and
    timestamps, excluded and id-like ones (each id-like one is named in a warning)."""
    missing = [c for c in roles.named if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: column '{missing[0]}' not found")
    if wanted:
        return list(wanted)
    skipped = {*slice_by, *roles.skipped}
    cols = [c for c in frame.columns if c not in skipped]
    keep = {roles.target, roles.prediction}
    id_like = [c for c in cols if c not in keep and looks_like_id(frame[c])]
    for col in id_like:
        warn(
            f"column '{col}' is unique per row (an id?): not compared; pass --id-column {col} "
            f"to say so, or name it in --columns to compare it"
        )
    return [c for c in cols if c not in id_like]


def looks_like_id(values: Any) -> bool:
    """Integer or string values, at least MIN_N of them, all distinct (floats never are ids)."""
    kind = getattr(values.dtype, "kind", "O")
    if kind not in "iuOSU" and str(values.dtype) not in ("string", "str"):
        return False
    present = n_present(values)
    return present >= MIN_N and n_unique(values) == present


def check_slice_columns(
    frame: Any, slice_by: Sequence[str], source: str | Path,
    limit: int = DEFAULT_MAX_SLICE_VALUES,
) -> None:  # fmt: skip
    """Refuse a continuous slice column instead of slicing it into `limit` values and 'other'."""
    for col in slice_by:
        if col not in frame.columns:
            continue
        values = frame[col]
        distinct = n_unique(values)
        if getattr(values.dtype, "kind", "O") == "f" and distinct > limit:
            raise InputError(
                f"{source}: --slice-by column '{col}' is continuous ({distinct} distinct values; "
                f"at most {limit} are sliced): bin it into a categorical column first"
            )
        if distinct > limit:
            warn(
                f"--slice-by column '{col}' has {distinct} values: the {limit} most frequent are "
                "sliced, the rest counted as '(other)'"
            )


def warn(message: str) -> None:
    """One warning line on stderr."""
    click.echo(f"modelwatch: warning: {message}", err=True)
