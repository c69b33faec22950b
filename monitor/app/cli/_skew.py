"""`modelwatch skew SERVING OFFLINE --key COL`: training-serving skew of two data files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from monitor.app.cli._options import output_options, role_options
from monitor.errors import InputError


@click.command("skew")
@click.argument("serving", type=click.Path(path_type=Path))
@click.argument("offline", type=click.Path(path_type=Path))
@click.option("--key", required=True, metavar="COL", help="Join key column (unique per file).")
@click.option("--columns", default=None, metavar="C,...", help="Features to compare.")
@click.option("--rtol", default=1e-6, show_default=True, help="Relative tolerance (numeric).")
@click.option("--atol", default=1e-9, show_default=True, help="Absolute tolerance (numeric).")
@click.option("--worst", default=5, show_default=True, help="Worst keys listed per feature.")
@output_options("json", "html")
@click.option(
    "--model",
    default=None,
    metavar="M",
    help="Take column roles from this model's `columns` in --config (flags win).",
)
@click.option("--config", "config_path", type=click.Path(path_type=Path), default=None,
              metavar="FILE", help="Config file with the model's column roles.")  # fmt: skip
@role_options
def skew(
    serving: Path,
    offline: Path,
    key: str,
    columns: str | None,
    rtol: float,
    atol: float,
    worst: int,
    json_path: Path | None,
    html_path: Path | None,
    model: str | None,
    config_path: Path | None,
    **roles: Any,
) -> None:
    """Join SERVING and OFFLINE rows by --key and report per-feature mismatches."""
    from monitor.app.cli._output import on_stdout
    from monitor.app.cli._roles import roles_from
    from monitor.data.datafile import read_frame
    from monitor.reports import render_skew_html, write_json, write_text
    from monitor.skew import compute_skew

    wanted = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    s_frame = read_frame(serving, [key])
    o_frame = read_frame(offline, [key])
    if model is not None:
        _require_model(config_path, model)
    skipped = roles_from({**roles, "config_path": config_path}, model).skipped
    if wanted is None and skipped:
        shared = [c for c in s_frame.columns if c in o_frame.columns and c != key]
        wanted = [c for c in shared if c not in skipped]
    report = compute_skew(
        s_frame, o_frame, key, wanted, rtol, atol, worst, names=(str(serving), str(offline))
    )
    if json_path is not None:
        write_json(json_path, report.to_dict())
    if html_path is not None:
        write_text(html_path, render_skew_html(report, f"skew: {serving} vs {offline}"))
    err = on_stdout(json_path, html_path)
    click.echo(
        f"joined={report.n_joined} only_serving={report.only_serving} "
        f"only_offline={report.only_offline} features={len(report.features)}",
        err=err,
    )
    for f in report.features:
        mad = "" if f.mean_abs_diff is None else f" mean_abs_diff={f.mean_abs_diff:.4g}"
        click.echo(
            f"  {f.column}: mismatch_rate={f.mismatch_rate:.4f} ({f.mismatches}){mad}", err=err
        )


def _require_model(config_path: Path | None, model: str) -> None:
    """--model names a model of --config: its roles are what the user asked for."""
    if config_path is None:
        raise click.UsageError("--model needs --config (the file with the model's columns)")
    from monitor.config import load_config

    names = [m.name for m in load_config(config_path).models]
    if model not in names:
        raise InputError(
            f"{config_path}: no model '{model}' (models: {', '.join(names) or 'none'})"
        )
