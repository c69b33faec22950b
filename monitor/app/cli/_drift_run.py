"""What `modelwatch drift` does once its flags are parsed (flags, exit codes: `_drift.py`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from monitor.app.cli._drift_input import Profiling, load_inputs
from monitor.app.cli._output import on_stdout
from monitor.app.cli._progress import progress
from monitor.app.cli._roles import roles_from
from monitor.data.datafile import read_frame
from monitor.detectors import evaluate, get_detector, threshold_strategy
from monitor.errors import InputError
from monitor.reports import drift_report, render_html, write_json, write_text
from monitor.reports.evidently import run_data_drift, write_evidently_html


def run_drift(
    files: tuple[str, ...],
    slice_by: tuple[str, ...],
    columns: str | None,
    methods: str | None,
    alpha: float,
    strategy: str,
    threshold_k: float,
    floor_fraction: float,
    reference_chunks: int,
    bins: int,
    top_k: int | None,
    categorical: tuple[str, ...],
    json_path: Path | None,
    html_path: Path | None,
    evidently_path: Path | None,
    fail_on_drift: bool,
    fail_on_insufficient: bool,
    **opts: Any,
) -> None:
    """Profile, compare, write the reports and exit as `modelwatch drift` documents."""
    method_names = _split(methods)
    for name in method_names or []:
        get_detector(name)
    # A bad name, k or floor fails before any reading.
    threshold_strategy(strategy, k=threshold_k, floor_fraction=floor_fraction)
    roles = roles_from(opts, opts.get("model"))
    chunks = reference_chunks if strategy == "reference" else None
    how = Profiling(bins, top_k, categorical, chunks)
    with progress("reading and profiling") as step:
        inputs = load_inputs(
            files, _split(columns), slice_by, roles,
            {**opts, "evidently_path": evidently_path}, how,
        )  # fmt: skip
        step(f"comparing {len(inputs.columns)} columns")
        bounds = threshold_strategy(
            strategy, inputs.variability, k=threshold_k, floor_fraction=floor_fraction
        )
        results = evaluate(
            inputs.reference, inputs.current, inputs.columns, methods=method_names,
            thresholds=bounds, alpha=alpha,
        )  # fmt: skip
    document = drift_report(results, inputs.reference.n_rows, inputs.current.n_rows)
    if json_path is not None:
        write_json(json_path, document)
    if html_path is not None:
        named = {roles.target: "target · label drift", roles.prediction: "prediction drift"}
        labels = {col: text for col, text in named.items() if col is not None}
        page = render_html(
            results, inputs.reference, inputs.current, inputs.title, alpha, roles=labels
        )
        write_text(html_path, page)
    if evidently_path is not None:
        _evidently(inputs.files, inputs.specs, inputs.columns, evidently_path)
    _summary(document, err=on_stdout(json_path, html_path))
    _exit(results, inputs.current.n_rows, fail_on_drift, fail_on_insufficient)


def _exit(results: Any, n_current: int, fail_on_drift: bool, fail_on_insufficient: bool) -> None:
    """Exit 1 on drift (--fail-on-drift); an empty or verdict-less current is never a pass."""
    if fail_on_drift and any(r.status == "drift" for r in results):
        sys.exit(1)
    if n_current and any(r.status != "insufficient_data" for r in results):
        return
    why = "is empty" if not n_current else "is too small for any verdict (all insufficient_data)"
    click.echo(f"modelwatch: error: the current data {why}", err=True)
    sys.exit(1 if fail_on_insufficient else 2)


def _summary(document: dict[str, Any], err: bool = False) -> None:
    rows = document["results"]
    drifted = [r for r in rows if r["status"] == "drift"]
    click.echo(
        f"dataset_drift={str(document['dataset_drift']).lower()} "
        f"reference={document['n_reference']} current={document['n_current']} "
        f"results={len(rows)} drift={len(drifted)}",
        err=err,
    )
    for r in drifted:
        where = (
            "" if r["slice"] is None else " " + ",".join(f"{k}={v}" for k, v in r["slice"].items())
        )
        click.echo(
            f"  DRIFT {r['column']}{where} {r['method']}={r['value']:.4g} "
            f"(threshold {r['threshold']:.4g} by {r['threshold_by']}, p={r['p_value']:.3g})",
            err=err,
        )


def _evidently(files: tuple[str, str] | None, specs: Any, cols: list[str], path: Path) -> None:
    # Evidently works on whole pandas frames: this report alone reads both datasets into memory.
    if files is None:
        raise InputError("--evidently-html needs the REFERENCE file, not a stored baseline")
    ref, cur = read_frame(files[0], cols), read_frame(files[1], cols)
    write_evidently_html(run_data_drift(ref, cur, specs, cols), path)


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]
