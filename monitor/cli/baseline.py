"""`modelwatch baseline`: profile a reference dataset once and store it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from monitor.cli._progress import progress
from monitor.cli._roles import check_slice_columns, role_options, roles_from, select_columns
from monitor.cli._table import echo_table
from monitor.cli.common import database_options, engine_from_options
from monitor.errors import InputError
from monitor.storage import prepare_for_writes, require_head


@click.group()
def baseline() -> None:
    """Create and list stored baselines."""


@baseline.command("create")
@click.option("--model", required=True, help="Model name (created if missing).")
@click.option("--version", "version", required=True, help="Model version (created if missing).")
@click.option("--name", default="default", show_default=True, help="Baseline name.")
@click.option("--slice-by", "slice_by", multiple=True, metavar="COL", help="Slice column.")
@click.option("--columns", default=None, metavar="C,...", help="Columns to profile (default all).")
@click.option("--bins", default=64, show_default=True, help="Quantile bins per numeric column.")
@click.option("--top-k", default=50, show_default=True, help="Categories kept per column.")
@click.option(
    "--chunks",
    default=10,
    show_default=True,
    help="Contiguous reference chunks profiled for reference-derived thresholds (0: none).",
)
@click.option("--replace", is_flag=True, help="Overwrite an existing baseline of that name.")
@click.argument("data", type=click.Path(path_type=Path))
@database_options
@role_options
def create_cmd(
    model: str,
    version: str,
    name: str,
    slice_by: tuple[str, ...],
    columns: str | None,
    bins: int,
    top_k: int,
    chunks: int,
    replace: bool,
    data: Path,
    database_url: str | None,
    config_path: Path | None,
    **roles: Any,
) -> None:
    """Profile DATA (Parquet or CSV) and store it as a baseline of MODEL/VERSION."""
    from monitor.baselines import save_baseline
    from monitor.datafile import read_frame
    from monitor.detectors import profile_variability
    from monitor.profiles import profile_frame, specs_for

    if chunks < 0:
        raise InputError(f"--chunks must be 0 or more, got {chunks}")
    wanted = _split(columns)
    with progress(f"reading {data}") as step:
        frame = read_frame(data, [*(wanted or []), *slice_by])
        check_slice_columns(frame, slice_by, data)
        cols = select_columns(
            frame, wanted, slice_by, roles_from({**roles, "config_path": config_path}, model), data
        )
        engine = engine_from_options(database_url, config_path)
        prepare_for_writes(engine)
        step(f"profiling {len(frame)} rows, {len(cols)} columns")
        specs = specs_for(cols, frame, bins, top_k)
        profiles = profile_frame(frame, specs, slice_by)
        step(f"profiling {chunks} reference chunks for thresholds")
        variability = profile_variability(frame, specs, profiles, chunks) if chunks else None
        step("saving the baseline")
        baseline_id = save_baseline(
            engine,
            model,
            version,
            profiles,
            name=name,
            source=str(data),
            source_sha256=_sha256(data),
            replace=replace,
            settings={"bins": bins, "top_k": top_k},
            variability=variability,
        )
    spread = "" if variability is None else f", variability of {chunks} chunks"
    click.echo(
        f"baseline {baseline_id} '{name}' of {model} {version}: {profiles.n_rows} rows, "
        f"{len(cols)} columns, {len(profiles.slice_keys)} slices{spread}"
    )
    # Say what was left out: slice columns are slices, not compared features.
    sliced = f"; sliced by {', '.join(slice_by)} (not compared)" if slice_by else ""
    click.echo(f"  columns: {', '.join(cols)}{sliced}")


@baseline.command("list")
@click.option("--model", default=None, help="Only this model.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@database_options
def list_cmd(
    model: str | None, as_json: bool, database_url: str | None, config_path: Path | None
) -> None:
    """List stored baselines, newest first."""
    from monitor.baselines import list_baselines

    engine = engine_from_options(database_url, config_path)
    require_head(engine)
    found = list_baselines(engine, model)
    if as_json:
        doc = [{**asdict(b), "created_at": b.created_at.isoformat()} for b in found]
        click.echo(json.dumps(doc, indent=2))
        return
    header = ("id", "model", "version", "name", "rows", "profiles", "slice_by", "created_at")
    rows = [
        [b.id, b.model, b.version, b.name, b.n_rows, b.n_profiles, b.slice_by, b.created_at]
        for b in found
    ]
    echo_table(header, rows, "no baselines")


def _split(columns: str | None) -> list[str] | None:
    if columns is None:
        return None
    return [c.strip() for c in columns.split(",") if c.strip()]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
