"""What `modelwatch estimate` does once its flags are parsed (flags, exit codes: `_estimate.py`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from monitor.app.cli._estimate_baseline import calibration_summary, loss_summary, with_baseline
from monitor.app.cli._estimate_input import (
    ScoreColumns,
    feature_columns,
    parse_scores,
    read_binary,
    read_frame,
    read_multiclass,
    read_regression,
    sort_by_time,
)
from monitor.app.cli._output import on_stdout
from monitor.config import parse_duration
from monitor.errors import InputError
from monitor.estimation import (
    MULTICLASS_METRICS,
    REGRESSION_METRICS,
    EstimateOptions,
    EstimationResult,
    categorical_features,
    check_features,
    estimate_binary,
    estimate_multiclass,
    estimate_regression,
    fit_calibration,
    fit_multiclass,
    fit_reconstruction,
    fit_regression,
    multivariate_drift,
    period_chunks,
)
from monitor.reports import write_json, write_text
from monitor.reports.estimation import (
    estimate_document,
    multivariate_dict,
    render_estimate_html,
)


def run_estimate(
    files: tuple[str, ...], score: tuple[str, ...], task: str | None, label: str | None,
    prediction: str | None,
    threshold: float, slice_by: tuple[str, ...], chunk_size: int | None, period: str | None,
    timestamp: str | None, bins: int,
    features: str | None, variance: float, json_path: Path | None, html_path: Path | None,
    fail_on_degraded: bool, **opts: Any,
) -> None:  # fmt: skip
    """Estimate, write the reports and exit as `modelwatch estimate` documents."""
    how = EstimateOptions(chunk_size=chunk_size)
    current = files[-1] if files else ""
    window_s = _period(period, timestamp, chunk_size)
    multivariate = None
    if opts.get("baseline_name"):
        if len(files) != 1 or not opts.get("model"):
            raise click.UsageError("with --baseline give one file, CURRENT, and --model")
        results, calibration, multivariate = with_baseline(current, prediction, slice_by, how, opts,
                                             (timestamp, window_s))  # fmt: skip
    else:
        regression = task == "regression"
        if regression and (score or prediction is None):
            raise click.UsageError("--task regression takes --prediction COL --label COL, "
                                   "no --score")  # fmt: skip
        if len(files) != 2 or not (score or regression) or label is None:
            raise click.UsageError("give REFERENCE CURRENT --score COL --label COL "
                                   "(or CURRENT --baseline NAME --model M)")  # fmt: skip
        scores = ScoreColumns(()) if regression else parse_scores(score)
        if task is not None and not regression and (task == "multiclass") != scores.multiclass:
            raise click.UsageError(f"--task {task}: give --score COL (binary) or "
                                   "--score CLASS=COL per class (multiclass)")  # fmt: skip
        asked = Request(scores, label, prediction, threshold, slice_by, timestamp,
                        bins, features, variance, regression)  # fmt: skip
        results, calibration, multivariate = _from_files(files[0], current, asked, how, window_s)
    document = estimate_document(results, calibration, multivariate)
    if json_path is not None:
        write_json(json_path, document)
    if html_path is not None:
        write_text(html_path, render_estimate_html(results, f"estimate: {current}", multivariate))
    _summary(results, multivariate, err=on_stdout(json_path, html_path))
    _exit(document, fail_on_degraded)


@dataclass(frozen=True)
class Request:
    """What the command line asks of a REFERENCE CURRENT run."""

    scores: ScoreColumns
    label: str
    prediction: str | None
    threshold: float
    slice_by: tuple[str, ...]
    timestamp: str | None
    bins: int
    features: str | None
    variance: float
    regression: bool = False


def _from_files(
    reference: str, current: str, r: Request, how: EstimateOptions, window_s: float | None
) -> tuple[list[EstimationResult], dict[str, Any], dict[str, Any] | None]:
    """Estimates (binary or multiclass) and the multivariate check of CURRENT vs REFERENCE."""
    both = Files(reference, current, read_frame(reference, r.scores, r.prediction, r.slice_by),
                 read_frame(current, r.scores, r.prediction, r.slice_by))  # fmt: skip
    if not len(both.cur):
        raise InputError(f"{current}: the current data is empty")
    if window_s is not None and r.timestamp is not None:
        both, how = _by_period(both, r.timestamp, window_s)
    taken = [*r.scores.columns, r.label, *([r.prediction] if r.prediction else []), *r.slice_by,
             *([r.timestamp] if r.timestamp else [])]  # fmt: skip
    wanted = None if r.features is None else [c.strip() for c in r.features.split(",")
                                              if c.strip()]  # fmt: skip
    features = feature_columns(both.ref, wanted, taken, reference)
    if r.regression:
        results, calibration = _regression(both, features, r, how)
    elif r.scores.multiclass:
        results, calibration = _multiclass(both, r.scores, r.label, r.prediction, r.slice_by,
                                           r.bins, how)  # fmt: skip
    else:
        results, calibration = _binary(both, r.scores, r.label, r.prediction, r.threshold,
                                       r.slice_by, r.bins, how)  # fmt: skip
    return results, calibration, _multivariate(both, features, r.variance, how)


@dataclass(frozen=True)
class Files:
    """The two files as given and as read."""

    reference: str
    current: str
    ref: Any
    cur: Any


def _binary(
    files: Files, scores: ScoreColumns, label: str, prediction: str | None, threshold: float,
    slice_by: tuple[str, ...], bins: int, how: EstimateOptions,
) -> tuple[list[EstimationResult], dict[str, Any]]:  # fmt: skip
    ref = read_binary(files.reference, files.ref, scores, label, prediction, threshold, slice_by)
    cur = read_binary(files.current, files.cur, scores, label, prediction, threshold, slice_by)
    if ref.labels is None:
        raise InputError(f"{files.reference}: column '{label}' not found")
    calibration = fit_calibration(ref.scores, ref.labels, threshold, bins)
    return estimate_binary(calibration, ref, cur, how), calibration_summary(calibration)


def _multiclass(
    files: Files, scores: ScoreColumns, label: str, prediction: str | None,
    slice_by: tuple[str, ...], bins: int, how: EstimateOptions,
) -> tuple[list[EstimationResult], dict[str, Any]]:  # fmt: skip
    ref = read_multiclass(files.reference, files.ref, scores, label, prediction, slice_by)
    cur = read_multiclass(files.current, files.cur, scores, label, prediction, slice_by)
    if ref.labels is None:
        raise InputError(f"{files.reference}: column '{label}' not found")
    calibration = fit_multiclass(scores.classes, ref.scores, ref.labels, bins, ref.predicted)
    how = replace(how, metrics=MULTICLASS_METRICS)
    summary = {name: calibration_summary(c) for name, c in zip(scores.classes, calibration.maps,
                                                             strict=True)}  # fmt: skip
    return estimate_multiclass(calibration, ref, cur, how), {"classes": summary}


def _regression(
    files: Files, features: list[str], r: Request, how: EstimateOptions
) -> tuple[list[EstimationResult], dict[str, Any]]:
    """DLE: loss models fitted on REFERENCE's features and prediction, applied to CURRENT."""
    assert r.prediction is not None
    check_features(features, r.prediction, r.label)
    if not features:
        raise InputError(f"{files.reference}: no feature columns for the loss model: "
                         "give --features C,...")  # fmt: skip
    ref = read_regression(files.reference, files.ref, features, r.prediction, r.label,
                          r.slice_by)  # fmt: skip
    cur = read_regression(files.current, files.cur, features, r.prediction, r.label, r.slice_by)
    if ref.labels is None:
        raise InputError(f"{files.reference}: column '{r.label}' not found")
    try:
        model = fit_regression(ref.columns, categorical_features(files.ref, features),
                               ref.prediction, ref.labels)  # fmt: skip
    except InputError as exc:
        raise InputError(f"{files.reference}: {exc}") from None
    how = replace(how, metrics=REGRESSION_METRICS)
    return estimate_regression(model, ref, cur, how), loss_summary(model)


def _period(period: str | None, timestamp: str | None, chunk_size: int | None) -> float | None:

    if period is None:
        if timestamp is not None:
            raise click.UsageError("--timestamp goes with --period")
        return None
    if timestamp is None or chunk_size is not None:
        raise click.UsageError("--period needs --timestamp COL, and replaces --chunk-size")
    try:
        seconds = parse_duration(period).total_seconds()
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--period") from None
    if seconds <= 0:
        raise click.BadParameter("must be longer than 0s", param_hint="--period")
    return seconds


def _by_period(files: Files, timestamp: str, window_s: float) -> tuple[Files, EstimateOptions]:
    ref, ref_starts = sort_by_time(files.ref, timestamp, window_s, files.reference)
    cur, cur_starts = sort_by_time(files.cur, timestamp, window_s, files.current)
    periods = (tuple(period_chunks(cur_starts)), tuple(period_chunks(ref_starts)))
    return Files(files.reference, files.current, ref, cur), EstimateOptions(periods=periods)


def _multivariate(
    files: Files, features: list[str], variance: float, how: EstimateOptions
) -> dict[str, Any] | None:
    if not features:
        return None
    model = fit_reconstruction(files.ref, features, variance)
    overall = multivariate_drift(model, files.ref, files.cur, None)[0]
    chunked = how.chunk_size is not None or how.periods is not None
    chunks = (
        multivariate_drift(model, files.ref, files.cur, how.chunk_size, periods=how.periods)
        if chunked else []
    )  # fmt: skip
    return multivariate_dict(model, overall, chunks)


def _summary(
    results: list[EstimationResult], multivariate: dict[str, Any] | None, err: bool
) -> None:
    degraded = [r for r in results if r.status == "degraded"]
    drifted = [r for r in results if r.status == "drift"]  # a loss below its reference band
    mv = "none" if multivariate is None else multivariate["status"]
    shifted = f" drift={len(drifted)}" if drifted else ""
    click.echo(f"results={len(results)} degraded={len(degraded)}{shifted} multivariate={mv}",
               err=err)  # fmt: skip
    for r in [*degraded, *drifted]:
        where = "" if r.slice is None else " " + ",".join(f"{k}={v}" for k, v in r.slice.items())
        chunk = "" if r.chunk is None else f" chunk={r.chunk.index}"
        bound = r.threshold_high if r.status == "degraded" and r.threshold_high is not None else (
            r.threshold_low)  # fmt: skip
        click.echo(
            f"  {r.status.upper()} {r.metric}{where}{chunk} estimated={r.estimated:.4g} "
            f"(threshold {bound:.4g})",
            err=err,
        )


def _exit(document: dict[str, Any], fail_on_degraded: bool) -> None:
    degraded = any(r["status"] == "degraded" for r in document["results"])
    multivariate = document["multivariate"]
    drifted = multivariate is not None and multivariate["status"] == "drift"
    if fail_on_degraded and (degraded or drifted):
        sys.exit(1)
