"""`modelwatch segments DATA --label COL --prediction COL`: weak-segment discovery."""

from __future__ import annotations

from pathlib import Path

import click

from monitor.app.cli._options import baseline_options, output_options

METRICS = ("error_rate", "accuracy", "absolute_error", "log_loss")  # monitor.segments.METRICS


@click.command("segments")
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--label", required=True, metavar="COL", help="Label column.")
@click.option("--prediction", required=True, metavar="COL", help="Prediction column "
              "(the positive class's probability for log_loss).")  # fmt: skip
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
    label: str,
    prediction: str,
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

    With --baseline, numeric features are binned on the baseline's quantile edges (coarsened to
    --bins shares of the baseline's reference).
    """
    from monitor.app.cli._output import on_stdout
    from monitor.data.datafile import read_frame, require_columns
    from monitor.errors import InputError
    from monitor.reports import write_json, write_text
    from monitor.segments import find_segments, render_segments_html, render_segments_markdown

    wanted = [c.strip() for c in features.split(",") if c.strip()] if features else None
    frame = read_frame(data, [label, prediction])
    require_columns(frame, wanted or (), data)
    if not 0 < alpha < 1:
        raise click.BadParameter("must be between 0 and 1 (exclusive)", param_hint="--alpha")
    edges = None
    if baseline_name is not None:
        if model is None:
            raise click.UsageError("--baseline needs --model")
        edges = _baseline_edges(baseline_name, model, model_version, database_url, config_path)
        edges = {c: _coarsen(e, bins) for c, e in edges.items()}
    try:
        report = find_segments(frame, label, prediction, wanted, metric, max_predicates,
                               min_support, min_share, top, alpha, bins=bins,
                               edges=edges)  # fmt: skip
    except InputError as exc:
        raise InputError(f"{data}: {exc}") from None
    if json_path is not None:
        write_json(json_path, report.to_dict())
    if html_path is not None:
        write_text(html_path, render_segments_html(report, f"Weak segments: {data}"))
    if markdown_path is not None:
        write_text(markdown_path, render_segments_markdown(report))
    err = on_stdout(json_path, html_path, markdown_path)
    overall = "n/a" if report.overall is None else f"{report.overall:.4g}"
    click.echo(
        f"rows={report.n_rows} {report.metric}={overall} tested={report.candidates_tested} "
        f"reported={len(report.segments)}",
        err=err,
    )
    if report.reason:
        click.echo(f"  {report.reason}", err=err)
    for s in report.segments:
        click.echo(
            f"  {s.describe()}: support={s.support} {report.metric}={s.value:.4g} "
            f"(rest {s.rest_value:.4g}) q={s.q_value:.3g}",
            err=err,
        )


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
