"""`modelwatch baseline`: profile a reference dataset once and store it."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from monitor.app.cli._options import database_options, role_options
from monitor.app.cli._table import echo_table


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
@click.option(
    "--top-k",
    type=int,
    default=None,
    help="Categories kept per column [default: every value up to 256, else the top 50].",
)
@click.option(
    "--categorical",
    multiple=True,
    metavar="COL",
    help="Profile COL as categories even if it holds numbers (repeatable; adds to the "
    "model's `categorical` in --config).",
)
@click.option(
    "--chunks",
    default=10,
    show_default=True,
    help="Contiguous reference chunks profiled for reference-derived thresholds (0: none).",
)
@click.option("--replace", is_flag=True, help="Overwrite an existing baseline of that name.")
@click.option(
    "--engine",
    "engine_name",
    type=click.Choice(["local", "spark"]),
    default="local",
    show_default=True,
    help="local: read DATA here in record batches; spark: profile --table on Spark.",
)
@click.option("--table", default=None, metavar="NAME|PATH", help="spark: catalog table or path.")
@click.option(
    "--attributions",
    "attributions_path",
    default=None,
    metavar="FILE",
    help="Reference attributions (`attr.<feature>` columns) in a separate file; by default "
    "DATA's own `attr.*` columns are used.",
)
@click.option(
    "--score",
    multiple=True,
    metavar="COL|CLASS=COL",
    help="Positive-class probability column (multiclass: CLASS=COL per class): store a CBPE "
    "calibration (with --label).",
)
@click.option(
    "--label",
    default=None,
    metavar="COL",
    help="Label column for --score (0/1, or the class) or --task regression (the target).",
)
@click.option(
    "--task",
    type=click.Choice(["regression"]),
    default=None,
    help="regression: store loss models of --features and --prediction against --label "
    "(direct loss estimation; needs the `regression` extra).",
)
@click.option(
    "--features",
    default=None,
    metavar="COLS",
    help="Comma-separated columns: store a multivariate drift (PCA reconstruction) model.",
)
@click.argument("data", required=False)
@database_options
@role_options
def create_cmd(**params: Any) -> None:
    """Profile DATA (Parquet/CSV file, directory or glob) or a Spark table; store it."""
    from monitor.app.cli._baseline_run import create_baseline

    create_baseline(**params)


@baseline.command("list")
@click.option("--model", default=None, help="Only this model.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@database_options
def list_cmd(
    model: str | None, as_json: bool, database_url: str | None, config_path: Path | None
) -> None:
    """List stored baselines, newest first."""
    from migrations import require_head
    from monitor.app.cli._common import engine_from_options
    from monitor.baselines.store import list_baselines

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
