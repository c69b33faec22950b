"""What `modelwatch drift` compares: two files, or one file against a stored baseline.

Both paths end in the same `DriftInputs` (reference and current profiles on the same specs), so
the outputs and exit codes of the command are the same whichever way it was called.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import click

from monitor.app.cli._roles import ColumnRoles, check_slice_columns, select_columns
from monitor.baselines.stream import profile_source
from monitor.data.datasets import open_source
from monitor.errors import InputError, NotFoundError
from monitor.profiles import ColumnSpec, ProfileSet, compared_columns


@dataclass(frozen=True)
class DriftInputs:
    """Profiles to compare, the columns and specs they share, and where they came from."""

    reference: ProfileSet
    current: ProfileSet
    columns: list[str]
    specs: dict[str, ColumnSpec]
    variability: Any
    files: tuple[str, str] | None  # (reference, current) as given; None for a baseline
    title: str


@dataclass(frozen=True)
class Profiling:
    """How a REFERENCE file is profiled: bins, top-K, forced categorical columns and the
    contiguous chunks for reference-derived thresholds (None: no variability)."""

    bins: int = 64
    top_k: int | None = None  # None: every value up to EXACT_CATEGORIES, else DEFAULT_TOP_K
    categorical: tuple[str, ...] = ()
    chunks: int | None = None


def sample_frame(source: Any) -> Any:
    """The first record batch of a dataset as `Columns` (its columns' types when it has no
    rows): enough to tell id-like and continuous slice columns apart without reading it all."""
    first = next(iter(source.frames(list(source.columns))), None)
    return source.empty_columns(source.columns) if first is None else first


def load_inputs(
    files: Sequence[str], wanted: list[str] | None, slice_by: Sequence[str],
    roles: ColumnRoles, opts: dict[str, Any], how: Profiling,
) -> DriftInputs:  # fmt: skip
    """Read and profile what the command line names (see the module docstring); `chunks`
    (reference-derived thresholds only) splits a REFERENCE file for its variability."""
    if opts.get("baseline_name"):
        if len(files) != 1:
            raise click.UsageError("with --baseline give one file: CURRENT")
        if not opts.get("model"):
            raise click.UsageError("--baseline needs --model")
        if opts.get("evidently_path") is not None:
            raise InputError("--evidently-html needs a REFERENCE file, not a stored baseline")
        return _from_baseline(files[0], wanted, slice_by, roles, opts)
    if len(files) != 2:
        raise click.UsageError("give REFERENCE and CURRENT files, or CURRENT with --baseline")
    return _from_files(files[0], files[1], wanted, slice_by, roles, how)


def _from_files(
    reference: str, current: str, wanted: list[str] | None, slice_by: Sequence[str],
    roles: ColumnRoles, how: Profiling,
) -> DriftInputs:  # fmt: skip
    """Both datasets read in record batches (bounded memory; see monitor.baselines.stream)."""
    ref_source, cur_source = open_source(reference), open_source(current)
    ref_source.require([*(wanted or []), *slice_by])
    sample = sample_frame(ref_source)
    check_slice_columns(sample, slice_by, reference)
    cols = compared_columns(select_columns(sample, wanted, slice_by, roles, reference), slice_by)
    cur_source.require(cols)
    ref_source.require(how.categorical)
    for col in how.categorical:
        if col not in cols:
            raise InputError(f"--categorical {col}: not among the compared columns")
    if how.chunks is not None and how.chunks < 1:
        raise InputError(f"reference chunks must be at least 1, got {how.chunks}")
    ref = profile_source(
        ref_source, cols, slice_by, bins=how.bins, top_k=how.top_k, chunks=how.chunks or 0,
        categorical=[c for c in how.categorical if c in cols],
    )  # fmt: skip
    cur_set = profile_source(cur_source, cols, slice_by, specs=ref.specs).profiles
    title = f"{reference} → {current}"
    files = (reference, current)
    return DriftInputs(ref.profiles, cur_set, cols, dict(ref.specs), ref.variability, files, title)


def _from_baseline(
    current: str, wanted: list[str] | None, slice_by: Sequence[str], roles: ColumnRoles,
    opts: dict[str, Any],
) -> DriftInputs:  # fmt: skip
    # The database and its libraries load only when a stored baseline is asked for.
    from migrations import require_head
    from monitor.app.cli._common import engine_from_options
    from monitor.baselines.store import load_stored_baseline

    engine = engine_from_options(opts.get("database_url"), opts.get("config_path"))
    require_head(engine)
    name, model = opts["baseline_name"], opts["model"]
    version = opts.get("model_version") or _newest_version(engine, model, name)
    stored = load_stored_baseline(engine, model, version, name)
    ref_set = stored.profiles
    if slice_by and tuple(slice_by) != ref_set.slice_by:
        raise InputError(
            f"baseline '{name}' of model '{model}' version '{version}' is sliced by "
            f"{list(ref_set.slice_by) or 'nothing'}; --slice-by cannot change that"
        )
    for col in wanted or ():
        if col not in ref_set.specs:
            raise InputError(f"column '{col}' is not in baseline '{name}'")
    cols = list(wanted or [c for c in ref_set.columns if c not in roles.skipped])
    source = open_source(current)
    source.require([*cols, *ref_set.slice_by])
    specs = {c: ref_set.specs[c] for c in cols}
    cur_set = profile_source(source, cols, ref_set.slice_by, specs=specs).profiles
    title = f"baseline '{name}' of {model} version {version} → {current}"
    return DriftInputs(ref_set, cur_set, cols, specs, stored.variability, None, title)


def _newest_version(engine: Any, model: str, name: str) -> str:
    from monitor.baselines.store import list_baselines

    for info in list_baselines(engine, model):  # newest first
        if info.name == name:
            return info.version
    raise NotFoundError(f"no baseline '{name}' for model '{model}'")
