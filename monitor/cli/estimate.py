"""`modelwatch estimate REFERENCE CURRENT --score COL --label COL`: estimated performance of a
binary (or, with `--score CLASS=COL` per class, multiclass) classifier on CURRENT (labels not
needed) from a calibration fitted on REFERENCE.

Exit status: 0, 1 with --fail-on-degraded when an estimate falls below its reference-derived
threshold, 2 on bad input (one line naming the file and column) or when CURRENT is empty.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from monitor.cli._estimate_input import (
    ScoreColumns,
    parse_scores,
    read_binary,
    read_multiclass,
)
from monitor.errors import InputError
from monitor.estimation import (
    MULTICLASS_METRICS,
    Calibration,
    EstimateOptions,
    EstimationResult,
    estimate_binary,
    estimate_multiclass,
    fit_calibration,
    fit_multiclass,
)

_BINS_HELP = "Calibration bins (quantiles of the reference score, plus the threshold)."


@click.command("estimate")
@click.argument("reference", metavar="REFERENCE")
@click.argument("current", metavar="CURRENT")
@click.option(
    "--score",
    "score",
    required=True,
    multiple=True,
    metavar="COL|CLASS=COL",
    help="Binary: the positive-class probability column. Multiclass: CLASS=COL per class.",
)
@click.option(
    "--label", required=True, metavar="COL", help="Label column: 0/1, or the class (REFERENCE)."
)
@click.option(
    "--prediction",
    metavar="COL",
    help="Prediction column: 0/1 or the class (default: score ≥ t; multiclass: highest score).",
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
@click.option("--bins", default=100, show_default=True, type=click.IntRange(2), help=_BINS_HELP)
@click.option(
    "--json", "json_path", type=click.Path(path_type=Path), help="Write JSON here (- for stdout)."
)
@click.option(
    "--html", "html_path", type=click.Path(path_type=Path), help="Write HTML here (- for stdout)."
)
@click.option("--fail-on-degraded", is_flag=True, help="Exit 1 when an estimate is degraded.")
def estimate(
    reference: str, current: str, score: tuple[str, ...], label: str, prediction: str | None,
    threshold: float, slice_by: tuple[str, ...], chunk_size: int | None, bins: int,
    json_path: Path | None, html_path: Path | None, fail_on_degraded: bool,
) -> None:  # fmt: skip
    """Estimate accuracy, precision, recall, F1, specificity and ROC-AUC on CURRENT without its
    labels (CBPE), per chunk and slice; realized values too where CURRENT has the label."""
    from monitor.reports import is_stdout, write_json, write_text
    from monitor.reports.estimation import estimate_document, render_estimate_html

    scores = parse_scores(score)
    how = EstimateOptions(chunk_size=chunk_size)
    if scores.multiclass:
        results, calibration = _multiclass(reference, current, scores, label, prediction,
                                           slice_by, bins, how)  # fmt: skip
    else:
        results, calibration = _binary(reference, current, scores, label, prediction,
                                       threshold, slice_by, bins, how)  # fmt: skip
    document = estimate_document(results, calibration)
    if json_path is not None:
        write_json(json_path, document)
    if html_path is not None:
        write_text(html_path, render_estimate_html(results, f"estimate: {current}"))
    _summary(results, err=is_stdout(json_path) or is_stdout(html_path))
    _exit(results, fail_on_degraded)


def _binary(
    reference: str, current: str, scores: ScoreColumns, label: str, prediction: str | None,
    threshold: float, slice_by: tuple[str, ...], bins: int, how: EstimateOptions,
) -> tuple[list[EstimationResult], dict[str, Any]]:  # fmt: skip
    ref = read_binary(reference, scores, label, prediction, threshold, slice_by)
    cur = read_binary(current, scores, label, prediction, threshold, slice_by)
    if ref.labels is None:
        raise InputError(f"{reference}: column '{label}' not found")
    _require_rows(current, cur.scores.size)
    calibration = fit_calibration(ref.scores, ref.labels, threshold, bins)
    return estimate_binary(calibration, ref, cur, how), _calibration_dict(calibration)


def _multiclass(
    reference: str, current: str, scores: ScoreColumns, label: str, prediction: str | None,
    slice_by: tuple[str, ...], bins: int, how: EstimateOptions,
) -> tuple[list[EstimationResult], dict[str, Any]]:  # fmt: skip
    ref = read_multiclass(reference, scores, label, prediction, slice_by)
    cur = read_multiclass(current, scores, label, prediction, slice_by)
    if ref.labels is None:
        raise InputError(f"{reference}: column '{label}' not found")
    _require_rows(current, cur.scores.shape[0])
    calibration = fit_multiclass(scores.classes, ref.scores, ref.labels, bins)
    how = EstimateOptions(how.chunk_size, MULTICLASS_METRICS, how.min_n)
    summary = {name: _calibration_dict(c) for name, c in zip(scores.classes, calibration.maps,
                                                             strict=True)}  # fmt: skip
    return estimate_multiclass(calibration, ref, cur, how), {"classes": summary}


def _require_rows(path: str, n: int) -> None:
    if not n:
        raise InputError(f"{path}: the current data is empty")


def _calibration_dict(c: Calibration) -> dict[str, Any]:
    return {"bins": c.n_bins, "threshold": c.threshold, "raw_ece": c.raw_ece,
            "reference_rows": sum(c.counts)}  # fmt: skip


def _summary(results: list[EstimationResult], err: bool) -> None:
    degraded = [r for r in results if r.status == "degraded"]
    click.echo(f"results={len(results)} degraded={len(degraded)}", err=err)
    for r in degraded:
        where = "" if r.slice is None else " " + ",".join(f"{k}={v}" for k, v in r.slice.items())
        chunk = "" if r.chunk is None else f" chunk={r.chunk.index}"
        click.echo(
            f"  DEGRADED {r.metric}{where}{chunk} estimated={r.estimated:.4g} "
            f"(threshold {r.threshold_low:.4g})",
            err=err,
        )


def _exit(results: list[EstimationResult], fail_on_degraded: bool) -> None:
    if fail_on_degraded and any(r.status == "degraded" for r in results):
        sys.exit(1)
