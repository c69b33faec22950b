"""`modelwatch compare`: several candidate builds against one reference, as one table.

Exit status: 0 when at least one candidate passes its gate and meets every SLO, 1 when none
does, 2 for bad input.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from monitor.app.cli._options import output_options
from monitor.app.cli._table import echo_table

FILE = click.Path(dir_okay=False, path_type=Path)


@click.command()
@click.option("--reference", required=True, type=FILE, help="Reference ONNX model.")
@click.option("--candidate", "candidates", required=True, multiple=True, type=FILE,
              help="Candidate ONNX build (repeatable).")  # fmt: skip
@click.option("--preset", "presets", multiple=True,
              help="fp32, fp16 or int8: one for all candidates or one per --candidate, in order "
                   "(default fp32).")  # fmt: skip
@click.option("--golden", required=True, type=FILE, help="Golden set (.parquet or .csv).")
@click.option("--features", help="Comma-separated feature columns, in model order.")
@click.option("--label-column", help="Column with true labels (enables the task metric).")
@click.option("--id-column", help="Column identifying rows.")
@click.option("--output", "output_name", help="Model output the task criteria use.")
@click.option("--batch-size", multiple=True, type=click.IntRange(min=1),
              help="Latency batch size (repeatable; SLOs judge the largest).")  # fmt: skip
@click.option("--slo", multiple=True, metavar="KEY=VALUE",
              help="latency_p95_ms, latency_p99_ms, metric_drop, min_rps or cost_per_1k "
                   "(repeatable).")  # fmt: skip
@click.option(
    "--hourly-price",
    type=click.FloatRange(min=0, min_open=True),
    help="Price of one serving replica per hour, for cost per 1,000 predictions.",
)
@click.option("--replicas", default=1, show_default=True, type=click.IntRange(min=1),
              help="Replicas the hourly price is paid for.")  # fmt: skip
@output_options("json", what="the table")
@click.option("--config", "config_path", type=FILE, help="Config (guards: providers, threads).")
def compare(**opts: Any) -> None:
    """Gate and measure each --candidate against --reference on --golden, side by side."""
    from guards.candidates import compare_candidates, parse_slo
    from monitor.app.cli._output import on_stdout
    from monitor.app.cli._progress import progress
    from monitor.reports import write_text

    slo = parse_slo(opts["slo"])
    pairs = _pairs(opts["candidates"], opts["presets"])
    base = _request(opts, pairs[0][0])
    with progress(f"gating and timing {len(pairs)} candidates"):
        rows = compare_candidates(base, pairs, slo, opts["hourly_price"], opts["replicas"])
    if opts["json_path"] is not None:
        write_text(opts["json_path"], json.dumps([r.to_dict() for r in rows], indent=2))
    if not on_stdout(opts["json_path"]):
        _print(rows)
    sys.exit(0 if any(r.meets_slo and r.verdict == "pass" for r in rows) else 1)


def _pairs(candidates: tuple[Path, ...], presets: tuple[str, ...]) -> list[tuple[Path, str]]:
    if len(presets) > 1 and len(presets) != len(candidates):
        raise click.UsageError(
            f"give one --preset for all candidates or one per --candidate "
            f"({len(candidates)}); got {len(presets)}"
        )
    chosen = (
        list(presets) if len(presets) > 1 else [presets[0] if presets else "fp32"] * len(candidates)
    )
    return list(zip(candidates, chosen, strict=True))


def _request(opts: dict[str, Any], first: Path) -> Any:
    from guards.gate import GateRequest
    from guards.golden import load_golden
    from guards.policy import preset
    from monitor.app.cli._common import load_checked_config
    from monitor.config import Config

    path = opts["config_path"]
    cfg = (load_checked_config(path) if path is not None else Config()).guards
    features = [f.strip() for f in opts["features"].split(",")] if opts["features"] else None
    golden = load_golden(opts["golden"], id_column=opts["id_column"],
                         label_column=opts["label_column"], features=features)  # fmt: skip
    return GateRequest(
        reference=opts["reference"],
        candidate=first,
        golden=golden,
        policy=preset("fp32"),
        output=opts["output_name"],
        providers=tuple(cfg.providers) or None,
        batch_size=cfg.batch_size,
        latency_batch_sizes=tuple(opts["batch_size"]) or tuple(cfg.latency_batch_sizes),
        intra_op_threads=cfg.intra_op_threads,
    )


def _print(rows: list[Any]) -> None:
    table = []
    for r in rows:
        top = r.latency[-1]
        drop = None if r.metric_drop is None else f"{r.metric_drop:.3g}"
        metric = None if r.candidate_metric is None else f"{r.metric} {r.candidate_metric:.4g}"
        p95 = ", ".join(f"b{s.batch_size} {s.p95_ms:.3g}ms" for s in r.latency)
        cost = None if r.cost_per_1k is None else f"${r.cost_per_1k:.4g}"
        meets = "yes" if r.meets_slo else "no: " + ", ".join(r.missed)
        table.append([r.candidate, r.preset, r.verdict, metric, drop, p95,
                      f"{top.rows_per_s:.4g}", cost, meets])  # fmt: skip
    header = ("candidate", "preset", "gate", "metric", "drop", "p95 per batch", "rows/s",
              "cost/1k", "meets SLOs?")  # fmt: skip
    echo_table(header, table, "no candidates")
