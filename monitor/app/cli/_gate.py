"""`modelwatch gate`: compare a candidate ONNX build with its reference on a golden set.

Exit status: 0 pass, 1 fail, 3 inconclusive, 2 error (bad input, mismatched models).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from monitor.app.cli._options import database_options, output_options

FILE = click.Path(dir_okay=False, path_type=Path)


@click.command()
@click.option("--reference", required=True, type=FILE, help="Reference ONNX model.")
@click.option("--candidate", required=True, type=FILE, help="Optimized ONNX build to check.")
@click.option("--golden", required=True, type=FILE, help="Golden set (.parquet or .csv).")
@click.option("--preset", default="fp32", show_default=True, help="fp32, fp16 or int8.")
@click.option("--features", help="Comma-separated feature columns, in model order.")
@click.option("--label-column", help="Column with true labels (enables task metrics).")
@click.option("--id-column", help="Column identifying rows in the report.")
@click.option("--slice-by", multiple=True, help="Column to slice criteria by (repeatable).")
@click.option("--output", "output_name", help="Model output the task criteria use.")
@click.option("--atol", type=float, help="Elementwise absolute tolerance.")
@click.option("--rtol", type=float, help="Elementwise relative tolerance.")
@click.option("--max-flip-rate", type=float, help="Overall top-1/decision flip rate.")
@click.option("--max-slice-flip-rate", type=float, help="Per-slice flip rate.")
@click.option("--max-metric-drop", type=float, help="Overall task metric drop, in points.")
@click.option("--max-slice-metric-drop", type=float, help="Per-slice metric drop, in points.")
@click.option("--latency-budget-ms", type=float, help="Candidate p95 budget (largest batch).")
@click.option("--max-latency-ratio", type=float, help="Candidate p95 / reference p95 limit.")
@click.option("--batch-size", multiple=True, type=int, help="Latency batch size (repeatable).")
@click.option("--no-latency", is_flag=True, help="Skip the latency measurement.")
@click.option(
    "--localize/--no-localize",
    default=None,
    help="Say where in the graph the candidate diverges (default: when the verdict is fail).",
)
@click.option("--localize-budget", help="Time budget for localisation, e.g. 30s (default 30s).")
@click.option("--localize-rows", type=click.IntRange(min=1), help="Rows replayed (default 2048).")
@output_options("json", "html", "markdown", what="the verdict")
@click.option("--model", help="Model name: record the run and act on the registry.")
@click.option("--version", "model_version", help="Version of --model the candidate is.")
@database_options
def gate(**opts: Any) -> None:
    """Replay a golden set through reference and candidate and decide pass/fail."""
    from monitor.app.cli._gate_run import run_gate_command

    run_gate_command(opts)
