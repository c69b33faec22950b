"""`modelwatch drift REFERENCE CURRENT` (two data files) or `modelwatch drift CURRENT --baseline
NAME --model M [--version V]` (a file against a stored baseline): one-shot drift check.

Exit status: 0, 1 with --fail-on-drift when a result drifts, 2 on bad input or when the current
data is empty or entirely insufficient (1 instead with --fail-on-insufficient).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from monitor.app.cli._options import baseline_options, output_options, role_options


@click.command("drift")
@click.argument("files", nargs=-1, metavar="[REFERENCE] CURRENT")
@click.option("--slice-by", "slice_by", multiple=True, metavar="COL", help="Slice column.")
@click.option("--columns", default=None, metavar="C,...", help="Columns to compare (default all).")
@click.option("--methods", default=None, metavar="M,...", help="Detectors (default per kind).")
@click.option(
    "--alpha",
    default=0.01,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    callback=lambda _ctx, _param, value: _finite(value, "--alpha"),
    help="False discovery rate (BH).",
)
@click.option(
    "--thresholds",
    "strategy",
    default="constant",
    show_default=True,
    metavar="constant|reference",
    help="Where drift bounds come from: each detector's constant default, or the variability "
    "of the statistic between chunks of REFERENCE and all of it.",
)
@click.option(
    "--threshold-k",
    default=3.0,
    show_default=True,
    help="reference: bound = mean + k·std.",
)
@click.option(
    "--threshold-floor",
    "floor_fraction",
    default=0.5,
    show_default=True,
    help="reference: bounds never go below this fraction of the constant bound "
    "(YAML floor_fraction); 0 keeps the reference-derived bound as it is.",
)
@click.option(
    "--reference-chunks",
    default=10,
    show_default=True,
    help="reference: contiguous chunks REFERENCE is split into.",
)
@click.option(
    "--bins",
    default=64,
    show_default=True,
    type=click.IntRange(2),
    help="Quantile bins per numeric column.",
)
@click.option(
    "--top-k",
    default=None,
    type=click.IntRange(1),
    help="Categories kept per column [default: every value up to 256, else the top 50].",
)
@output_options("json", "html")
@click.option(
    "--categorical",
    multiple=True,
    metavar="COL",
    help="Profile COL as categories even if it holds numbers (repeatable).",
)
@click.option(
    "--evidently-html",
    "evidently_path",
    type=click.Path(path_type=Path),
    help="Also run Evidently's DataDriftPreset and write its HTML here (slow).",
)
@click.option("--fail-on-drift", is_flag=True, help="Exit 1 when any result drifts.")
@click.option(
    "--fail-on-insufficient",
    is_flag=True,
    help="Exit 1 (not 2) when the current data is empty or too small for any verdict.",
)
@role_options
@baseline_options
def drift(**params: Any) -> None:
    """Compare CURRENT with REFERENCE (Parquet/CSV files, directories or globs) or with a
    stored baseline, overall and per slice."""
    from monitor.app.cli._drift_run import run_drift

    run_drift(**params)


def _finite(value: float, name: str) -> float:
    # FloatRange lets NaN through (every comparison with it is false)
    if value != value:
        raise click.BadParameter("must be a number, not nan", param_hint=name)
    return value
