"""`modelwatch segments DATA [--reference REF] --mode labels|estimated|drift`: weak segments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from monitor.app.cli._options import baseline_options, output_options

METRICS = ("error_rate", "accuracy", "absolute_error", "log_loss")  # monitor.segments.METRICS
MODES = ("labels", "estimated", "drift")  # monitor.segments.MODES


@click.command("segments")
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--mode", type=click.Choice(MODES), default="labels", show_default=True,
              help="labels: DATA's errors; estimated: DATA's expected errors under a CBPE "
              "calibration fitted on --reference; drift: segments whose share moved from "
              "--reference to DATA.")  # fmt: skip
@click.option("--reference", "reference_path", type=click.Path(path_type=Path), default=None,
              help="Reference data (with --label for estimated).")  # fmt: skip
@click.option("--label", default=None, metavar="COL", help="Label column (labels; estimated: "
              "of the reference).")  # fmt: skip
@click.option("--prediction", default=None, metavar="COL", help="Prediction column (the "
              "positive class's probability for log_loss; the score for estimated).")  # fmt: skip
@click.option("--threshold", default=0.5, show_default=True, type=float,
              help="estimated: a score at or above this predicts the positive class.")  # fmt: skip
@click.option("--features", default=None, metavar="C,...", help="Features to search "
              "(default: every other column).")  # fmt: skip
@click.option("--metric", type=click.Choice(METRICS), default="error_rate", show_default=True,
              help="Per-row loss a segment is judged on.")  # fmt: skip
@click.option("--max-predicates", default=3, show_default=True, type=click.IntRange(1, 5),
              help="Most predicates in one segment.")  # fmt: skip
@click.option("--min-support", default=30, show_default=True, type=click.IntRange(min=1),
              help="Fewest rows in a segment.")  # fmt: skip
@click.option("--min-share", default=0.01, show_default=True, type=click.FloatRange(0, 1),
              help="Smallest share of the rows in a segment.")  # fmt: skip
@click.option("--bins", default=10, show_default=True, type=click.IntRange(min=2),
              help="Quantile bins of a numeric feature.")  # fmt: skip
@click.option("--alpha", default=0.05, show_default=True, type=click.FloatRange(0, 1),
              help="False-discovery rate (BH over every slice tested).")  # fmt: skip
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=1),
              help="Most segments reported.")  # fmt: skip
@output_options("json", "html", "markdown")
@baseline_options
def segments(
    data: Path,
    mode: str,
    reference_path: Path | None,
    label: str | None,
    prediction: str | None,
    threshold: float,
    features: str | None,
    metric: str,
    max_predicates: int,
    min_support: int,
    min_share: float,
    bins: int,
    alpha: float,
    top: int,
    json_path: Path | None,
    html_path: Path | None,
    markdown_path: Path | None,
    baseline_name: str | None,
    model: str | None,
    model_version: str | None,
    database_url: str | None,
    config_path: Path | None,
) -> None:
    """Search conjunctions of feature predicates in DATA for segments worse than the rest.

    Without labels, --mode estimated searches each row's expected error (calibrated on the
    labelled --reference) and --mode drift the segments whose share of the rows moved from
    --reference to DATA; both reports are flagged estimated. With --baseline, numeric features
    are binned on the baseline's quantile edges (coarsened to --bins shares of its reference).
    """
    from monitor.app.cli._output import on_stdout
    from monitor.reports import write_json, write_text
    from monitor.segments import Options, render_segments_html, render_segments_markdown

    if not 0 < alpha < 1:
        raise click.BadParameter("must be between 0 and 1 (exclusive)", param_hint="--alpha")
    _require_options(mode, reference_path, label, prediction)
    edges = None
    if baseline_name is not None:
        if model is None:
            raise click.UsageError("--baseline needs --model")
        edges = _baseline_edges(baseline_name, model, model_version, database_url, config_path)
        edges = {c: _coarsen(e, bins) for c, e in edges.items()}
    wanted = [c.strip() for c in features.split(",") if c.strip()] if features else None
    opts = Options(max_predicates, min_support, min_share, top, alpha, None, bins)
    if mode == "labels":
        assert label is not None and prediction is not None
        report = _labels(data, label, prediction, wanted, metric, opts, edges)
    else:
        assert reference_path is not None
        report = _label_free(data, reference_path, mode, label, prediction, threshold, wanted,
                             opts, edges)  # fmt: skip
    if json_path is not None:
        write_json(json_path, report.to_dict())
    if html_path is not None:
        write_text(html_path, render_segments_html(report, f"Weak segments: {data}"))
    if markdown_path is not None:
        write_text(markdown_path, render_segments_markdown(report))
    err = on_stdout(json_path, html_path, markdown_path)
    overall = "n/a" if report.overall is None else f"{report.overall:.4g}"
    click.echo(
        f"mode={report.mode} rows={report.n_rows} {report.metric}={overall} "
        f"tested={report.candidates_tested} status={report.status} "
        f"reported={len(report.segments)}",
        err=err,
    )
    if report.reason:
        click.echo(f"  {report.reason}", err=err)
    for s in report.segments:
        click.echo(
            f"  {s.describe()}: support={s.support} {report.metric}={s.value:.4g} "
            f"({'reference' if report.mode == 'drift' else 'rest'} {s.rest_value:.4g}) "
            f"q={s.q_value:.3g}",
            err=err,
        )


def _require_options(mode: str, reference: Path | None, label: str | None,
                     prediction: str | None) -> None:  # fmt: skip
    """A usage error naming the option `mode` needs and did not get."""
    needs = {"labels": ("--label", "--prediction"),
             "estimated": ("--reference", "--label", "--prediction"),
             "drift": ("--reference",)}[mode]  # fmt: skip
    given = {"--reference": reference, "--label": label, "--prediction": prediction}
    for option in needs:
        if given[option] is None:
            raise click.UsageError(f"--mode {mode} needs {option}")


def _labels(data: Path, label: str, prediction: str, wanted: list[str] | None, metric: str,
            opts: Any, edges: dict[str, list[float]] | None) -> Any:  # fmt: skip
    from monitor.data.datafile import read_frame, require_columns
    from monitor.errors import InputError
    from monitor.segments import find_segments

    frame = read_frame(data, [label, prediction])
    require_columns(frame, wanted or (), data)
    try:
        return find_segments(frame, label, prediction, wanted, metric, opts.max_predicates,
                             opts.min_support, opts.min_share, opts.top, opts.alpha,
                             bins=opts.bins, edges=edges)  # fmt: skip
    except InputError as exc:
        raise InputError(f"{data}: {exc}") from None


def _label_free(data: Path, reference: Path, mode: str, label: str | None,
                prediction: str | None, threshold: float, wanted: list[str] | None, opts: Any,
                edges: dict[str, list[float]] | None) -> Any:  # fmt: skip
    """The estimated or drift report of DATA against REFERENCE."""
    from monitor.data.datafile import read_frame, require_columns
    from monitor.errors import InputError
    from monitor.estimation import fit_calibration
    from monitor.segments import find_drift_segments, find_estimated_segments

    roles = [c for c in (label, prediction) if c is not None]
    current, ref = read_frame(data), read_frame(reference)
    require_columns(current, wanted or (), data)
    require_columns(ref, wanted or (), reference)
    feats = wanted or [c for c in current.columns if c not in roles]
    if mode == "drift":
        return find_drift_segments(ref, current, feats, opts, edges)
    assert label is not None and prediction is not None
    require_columns(ref, (label, prediction), reference)
    require_columns(current, (prediction,), data)
    try:
        scores, labels = (ref[c].to_numpy(dtype=float, na_value=float("nan"))
                          for c in (prediction, label))  # fmt: skip
        cal = fit_calibration(scores, labels, threshold)
    except (InputError, TypeError, ValueError) as exc:
        raise InputError(f"{reference}: {exc}") from None
    try:
        return find_estimated_segments(current, prediction, cal, feats, opts, edges)
    except InputError as exc:
        raise InputError(f"{data}: {exc}") from None


def _baseline_edges(
    name: str, model: str, version: str | None, database_url: str | None, config: Path | None
) -> dict[str, list[float]]:
    """The quantile edges of the stored baseline's numeric columns."""
    from migrations import require_head
    from monitor.app.cli._common import engine_from_options
    from monitor.baselines.store import list_baselines, load_stored_baseline
    from monitor.errors import NotFoundError

    engine = engine_from_options(database_url, config)
    require_head(engine)
    if version is None:
        versions = [b.version for b in list_baselines(engine, model) if b.name == name]
        if not versions:
            raise NotFoundError(f"no baseline '{name}' for model '{model}'")
        version = versions[0]  # newest first
    specs = load_stored_baseline(engine, model, version, name).profiles.specs
    return {c: list(s.edges) for c, s in specs.items() if s.kind == "numeric"}


def _coarsen(edges: list[float], bins: int) -> list[float]:
    """Every k-th of a baseline's (fine, for drift) quantile edges: about `bins` equal shares."""
    if len(edges) <= bins + 1:
        return edges
    step = (len(edges) - 1) / bins
    return [edges[round(k * step)] for k in range(1, bins)]
