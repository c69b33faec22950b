"""What `modelwatch drift` compares: two files, or one file against a stored baseline.

Both paths end in the same `DriftInputs` (reference and current profiles on the same specs), so
the outputs and exit codes of the command are the same whichever way it was called.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from monitor.cli._roles import ColumnRoles, check_slice_columns, select_columns
from monitor.cli.common import database_options, engine_from_options
from monitor.errors import InputError
from monitor.profiles import ColumnSpec, ProfileSet

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class DriftInputs:
    """Profiles to compare, the columns and specs they share, and where they came from."""

    reference: ProfileSet
    current: ProfileSet
    columns: list[str]
    specs: dict[str, ColumnSpec]
    variability: Any
    frames: tuple[Any, Any] | None  # raw (reference, current) frames; None for a baseline
    title: str


def baseline_options(func: F) -> F:
    """Add --baseline, --model, --version and the database options to a command."""
    func = database_options(func)
    func = click.option(
        "--version", "model_version", metavar="V", help="Baseline's model version (default: "
        "the newest version with a baseline of that name).",
    )(func)  # fmt: skip
    func = click.option("--model", metavar="M", help="Model the --baseline belongs to.")(func)
    return click.option(
        "--baseline",
        "baseline_name",
        metavar="NAME",
        help="Compare CURRENT with this stored baseline (needs --model) instead of a REFERENCE.",
    )(func)


def load_inputs(
    files: Sequence[Path], wanted: list[str] | None, slice_by: Sequence[str],
    roles: ColumnRoles, opts: dict[str, Any], bins: int, top_k: int, chunks: int | None,
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
    return _from_files(files[0], files[1], wanted, slice_by, roles, bins, top_k, chunks)


def _from_files(
    reference: Path, current: Path, wanted: list[str] | None, slice_by: Sequence[str],
    roles: ColumnRoles, bins: int, top_k: int, chunks: int | None,
) -> DriftInputs:  # fmt: skip
    from monitor.datafile import read_frame, require_columns
    from monitor.detectors import profile_variability
    from monitor.profiles import profile_frame, specs_for

    ref = read_frame(reference, [*(wanted or []), *slice_by])
    cur = read_frame(current, [*(wanted or []), *slice_by])
    check_slice_columns(ref, slice_by, reference)
    cols = select_columns(ref, wanted, slice_by, roles, reference)
    require_columns(cur, cols, current)
    specs = specs_for(cols, ref, bins, top_k)
    ref_set = profile_frame(ref, specs, slice_by)
    cur_set = profile_frame(cur, specs, slice_by)
    variability = None if chunks is None else profile_variability(ref, specs, ref_set, chunks)
    title = f"{reference} → {current}"
    return DriftInputs(ref_set, cur_set, cols, specs, variability, (ref, cur), title)


def _from_baseline(
    current: Path, wanted: list[str] | None, slice_by: Sequence[str], roles: ColumnRoles,
    opts: dict[str, Any],
) -> DriftInputs:  # fmt: skip
    from monitor.baselines import load_stored_baseline
    from monitor.datafile import read_frame, require_columns
    from monitor.profiles import profile_frame
    from monitor.storage import require_head

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
    cur = read_frame(current, list(ref_set.slice_by))
    require_columns(cur, cols, current)
    specs = {c: ref_set.specs[c] for c in cols}
    cur_set = profile_frame(cur, specs, ref_set.slice_by)
    title = f"baseline '{name}' of {model} version {version} → {current}"
    return DriftInputs(ref_set, cur_set, cols, specs, stored.variability, None, title)


def _newest_version(engine: Any, model: str, name: str) -> str:
    from monitor.baselines import list_baselines
    from monitor.errors import NotFoundError

    for info in list_baselines(engine, model):  # newest first
        if info.name == name:
            return info.version
    raise NotFoundError(f"no baseline '{name}' for model '{model}'")
