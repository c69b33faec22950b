"""`modelwatch estimate REFERENCE CURRENT --score COL --label COL`: estimated performance of a
binary classifier on CURRENT (labels not needed) from a calibration fitted on REFERENCE.

Exit status: 0, 1 with --fail-on-degraded when an estimate falls below its reference-derived
threshold, 2 on bad input (one line naming the file and column) or when CURRENT is empty.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import numpy as np

from monitor.errors import InputError
from monitor.estimation import (
    BinaryData,
    Calibration,
    EstimateOptions,
    EstimationResult,
    estimate_binary,
    fit_calibration,
)

_BINS_HELP = "Calibration bins (quantiles of the reference score, plus the threshold)."


@click.command("estimate")
@click.argument("reference", metavar="REFERENCE")
@click.argument("current", metavar="CURRENT")
@click.option("--score", required=True, metavar="COL", help="Positive-class probability column.")
@click.option("--label", required=True, metavar="COL", help="0/1 label column (REFERENCE).")
@click.option("--prediction", metavar="COL", help="0/1 prediction column (default: score ≥ t).")
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
    reference: str, current: str, score: str, label: str, prediction: str | None,
    threshold: float, slice_by: tuple[str, ...], chunk_size: int | None, bins: int,
    json_path: Path | None, html_path: Path | None, fail_on_degraded: bool,
) -> None:  # fmt: skip
    """Estimate accuracy, precision, recall, F1, specificity and ROC-AUC on CURRENT without its
    labels (CBPE), per chunk and slice; realized values too where CURRENT has the label."""
    from monitor.reports import is_stdout, write_json, write_text
    from monitor.reports.estimation import estimate_document, render_estimate_html

    columns = [score, *([prediction] if prediction else []), *slice_by]
    ref = _read(reference, [*columns, label], label, score, prediction, threshold, slice_by)
    cur = _read(current, columns, label, score, prediction, threshold, slice_by)
    if ref.labels is None:
        raise InputError(f"{reference}: column '{label}' not found")
    calibration = fit_calibration(ref.scores, ref.labels, threshold, bins)
    results = estimate_binary(calibration, ref, cur, EstimateOptions(chunk_size=chunk_size))
    document = estimate_document(results, _calibration_dict(calibration))
    if json_path is not None:
        write_json(json_path, document)
    if html_path is not None:
        write_text(html_path, render_estimate_html(results, f"estimate: {current}"))
    _summary(results, err=is_stdout(json_path) or is_stdout(html_path))
    _exit(results, cur.scores.size, fail_on_degraded)


def _read(
    path: str, columns: list[str], label: str, score: str, prediction: str | None,
    threshold: float, slice_by: tuple[str, ...],
) -> BinaryData:  # fmt: skip
    from monitor.datafile import read_frame

    frame = read_frame(path, columns)
    scores = _numeric(frame, score, path)
    finite = scores[np.isfinite(scores)]
    if ((finite < 0) | (finite > 1)).any():
        raise InputError(f"{path}: column '{score}': scores must be probabilities in [0, 1]")
    predicted = (
        (scores >= threshold).astype(np.float64)
        if prediction is None
        else _binary(frame, prediction, path)
    )
    labels = _binary(frame, label, path) if label in frame.columns else None
    slices = {c: frame[c].to_numpy(dtype=object) for c in slice_by}
    return BinaryData(scores, predicted, labels, slices)


def _numeric(frame: Any, column: str, path: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    import pandas as pd

    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna() & frame[column].notna()
    if bad.any():
        first = frame[column][bad].iloc[0]
        raise InputError(f"{path}: column '{column}': not a number: {first!r}")
    return np.asarray(values.to_numpy(dtype=np.float64, na_value=np.nan))


def _binary(frame: Any, column: str, path: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    """0/1 (or true/false) values; NaN where missing; InputError on anything else."""
    raw = frame[column]
    if raw.dtype == bool:
        return np.asarray(raw.to_numpy(dtype=np.float64))
    values = _numeric(frame, column, path)
    known = values[np.isfinite(values)]
    if not np.isin(known, (0.0, 1.0)).all():
        other = known[~np.isin(known, (0.0, 1.0))][0]
        raise InputError(f"{path}: column '{column}': expected 0/1, got {other:g}")
    return values


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


def _exit(results: list[EstimationResult], n_current: int, fail_on_degraded: bool) -> None:
    if not n_current:
        click.echo("modelwatch: error: the current data is empty", err=True)
        sys.exit(2)
    if fail_on_degraded and any(r.status == "degraded" for r in results):
        sys.exit(1)
