"""`modelwatch estimate REFERENCE CURRENT --score COL --label COL`: estimated performance of a
binary (or, with `--score CLASS=COL` per class, multiclass) classifier on CURRENT (labels not
needed) from a calibration fitted on REFERENCE; with `--task regression --prediction COL --label
COL`, a regression model's MAE, MSE and RMSE from loss models fitted on REFERENCE (DLE).

Exit status: 0, 1 with --fail-on-degraded when an estimate falls below its reference-derived
threshold, 2 on bad input (one line naming the file and column) or when CURRENT is empty.
"""

from __future__ import annotations

from typing import Any

import click

from monitor.app.cli._options import baseline_options, output_options

_BINS_HELP = "Calibration bins (quantiles of the reference score, plus the threshold)."


@click.command("estimate")
@click.argument("files", nargs=-1, metavar="[REFERENCE] CURRENT")
@click.option(
    "--score",
    "score",
    multiple=True,
    metavar="COL|CLASS=COL",
    help="Binary: the positive-class probability column. Multiclass: CLASS=COL per class.",
)
@click.option(
    "--task",
    type=click.Choice(["binary", "multiclass", "regression"]),
    help="What the model predicts (default: binary or multiclass from --score). Regression: "
    "--prediction and --label hold numbers; MAE, MSE, RMSE by direct loss estimation.",
)
@click.option(
    "--label", metavar="COL", help="Label column: 0/1, the class or the target (REFERENCE)."
)
@click.option(
    "--prediction",
    metavar="COL",
    help="Prediction column: 0/1 or the class (default: score ≥ t; multiclass: highest score); "
    "regression: the predicted value.",
)
@click.option(
    "--threshold",
    default=0.5,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="Decision threshold t on the score.",
)
@click.option("--slice-by", "slice_by", multiple=True, metavar="COL", help="Slice column.")
@click.option("--chunk-size", type=click.IntRange(1), metavar="N", help="Rows per chunk.")
@click.option(
    "--period",
    metavar="DURATION",
    help="Chunk by time window instead (1h, 1d, 7d; epoch-aligned, as ingest windows); "
    "needs --timestamp.",
)
@click.option("--timestamp", metavar="COL", help="Timestamp column for --period.")
@click.option("--bins", default=100, show_default=True, type=click.IntRange(2), help=_BINS_HELP)
@output_options("json", "html", what="the estimates")
@click.option(
    "--features",
    metavar="C,...",
    help="Multivariate drift features, and the loss models' with --task regression (default: "
    "every other column but timestamps and ids).",
)
@click.option(
    "--variance",
    default=0.65,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="Multivariate: share of variance the kept principal components explain.",
)
@click.option(
    "--fail-on-degraded",
    is_flag=True,
    help="Exit 1 when an estimate is degraded or the multivariate check drifts.",
)
@baseline_options
def estimate(**params: Any) -> None:
    """Estimate accuracy, precision, recall, F1, specificity and ROC-AUC on CURRENT without its
    labels (CBPE), or a regression model's MAE, MSE and RMSE (DLE, `--task regression`), per
    chunk and slice; realized values too where CURRENT has the label."""
    from monitor.app.cli._estimate_run import run_estimate

    run_estimate(**params)
