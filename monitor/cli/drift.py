"""`modelwatch drift REFERENCE CURRENT`: one-shot drift check of two data files."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click


@click.command("drift")
@click.argument("reference")
@click.argument("current")
@click.option("--slice-by", "slice_by", multiple=True, metavar="COL", help="Slice column.")
@click.option("--columns", default=None, metavar="C,...", help="Columns to compare (default all).")
@click.option("--methods", default=None, metavar="M,...", help="Detectors (default per kind).")
@click.option("--alpha", default=0.01, show_default=True, help="False discovery rate (BH).")
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
    "--threshold-k", default=3.0, show_default=True, help="reference: bound = mean + k·std."
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
@click.option("--bins", default=64, show_default=True, help="Quantile bins per numeric column.")
@click.option("--top-k", default=50, show_default=True, help="Categories kept per column.")
@click.option(
    "--categorical",
    multiple=True,
    metavar="COL",
    help="Profile COL as categories even if it holds numbers (repeatable).",
)
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="Write JSON here.")
@click.option("--html", "html_path", type=click.Path(path_type=Path), help="Write HTML here.")
@click.option(
    "--evidently-html",
    "evidently_path",
    type=click.Path(path_type=Path),
    help="Also run Evidently's DataDriftPreset and write its HTML here (slow).",
)
@click.option("--fail-on-drift", is_flag=True, help="Exit 1 when any result drifts.")
def drift(
    reference: str,
    current: str,
    slice_by: tuple[str, ...],
    columns: str | None,
    methods: str | None,
    alpha: float,
    strategy: str,
    threshold_k: float,
    floor_fraction: float,
    reference_chunks: int,
    bins: int,
    top_k: int,
    categorical: tuple[str, ...],
    json_path: Path | None,
    html_path: Path | None,
    evidently_path: Path | None,
    fail_on_drift: bool,
) -> None:
    """Compare CURRENT with REFERENCE (Parquet/CSV files, directories or globs), per slice."""
    from monitor._stream import profile_source
    from monitor.datasets import open_source
    from monitor.detectors import evaluate, get_detector, threshold_strategy
    from monitor.errors import InputError
    from monitor.profiles import compared_columns
    from monitor.reports import drift_report, render_html, write_json

    method_names = _split(methods)
    for name in method_names or []:
        get_detector(name)
    # A bad name, k or floor fails before any reading.
    threshold_strategy(strategy, k=threshold_k, floor_fraction=floor_fraction)
    wanted = _split(columns)
    ref_source, cur_source = open_source(reference), open_source(current)
    ref_source.require([*(wanted or []), *slice_by])
    cols = compared_columns(wanted or list(ref_source.columns), slice_by)
    cur_source.require(cols)
    chunks = reference_chunks if strategy == "reference" else 0
    if strategy == "reference" and chunks < 1:
        raise InputError(f"reference chunks must be at least 1, got {chunks}")
    ref = profile_source(
        ref_source,
        cols,
        slice_by,
        bins=bins,
        top_k=top_k,
        chunks=chunks,
        categorical=[c for c in categorical if c in cols],
    )
    ref_set, specs, variability = ref.profiles, ref.specs, ref.variability
    cur_set = profile_source(cur_source, cols, slice_by, specs=specs).profiles
    bounds = threshold_strategy(strategy, variability, k=threshold_k, floor_fraction=floor_fraction)
    results = evaluate(ref_set, cur_set, cols, methods=method_names, thresholds=bounds, alpha=alpha)
    document = drift_report(results, ref_set.n_rows, cur_set.n_rows)
    if json_path is not None:
        write_json(json_path, document)
    if html_path is not None:
        _write_text(html_path, render_html(results, ref_set, cur_set, f"{reference} → {current}"))
    if evidently_path is not None:
        _evidently(reference, current, specs, cols, evidently_path)
    _summary(document)
    if fail_on_drift and any(r.status == "drift" for r in results):
        sys.exit(1)


def _summary(document: dict[str, Any]) -> None:
    rows = document["results"]
    drifted = [r for r in rows if r["status"] == "drift"]
    click.echo(
        f"dataset_drift={str(document['dataset_drift']).lower()} "
        f"reference={document['n_reference']} current={document['n_current']} "
        f"results={len(rows)} drift={len(drifted)}"
    )
    for r in drifted:
        where = (
            "" if r["slice"] is None else " " + ",".join(f"{k}={v}" for k, v in r["slice"].items())
        )
        click.echo(
            f"  DRIFT {r['column']}{where} {r['method']}={r['value']:.4g} "
            f"(threshold {r['threshold']:.4g} by {r['threshold_by']}, p={r['p_value']:.3g})"
        )


def _evidently(reference: str, current: str, specs: Any, cols: list[str], path: Path) -> None:
    # Evidently works on whole pandas frames: this report alone reads both datasets into memory.
    from monitor.datafile import read_frame
    from monitor.reports.evidently import run_data_drift, write_evidently_html

    ref, cur = read_frame(reference, cols), read_frame(current, cols)
    write_evidently_html(run_data_drift(ref, cur, specs, cols), path)


def _write_text(path: Path, text: str) -> None:
    from monitor.errors import InputError

    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror}") from None


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]
