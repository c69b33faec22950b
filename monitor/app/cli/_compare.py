"""`modelwatch compare`: several candidate builds against one reference, as one table.

The reference is the first row. Exit status: 0 when at least one candidate passes its gate and
meets every SLO, 1 when none does, 2 for bad input.
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
@click.option("--hourly-price", "hourly_prices", multiple=True, metavar="[NAME=]DOLLARS",
              help="Price of one serving replica per hour, for cost per 1,000 predictions: "
                   "DOLLARS for every build, NAME=DOLLARS for one (its file name or stem, or "
                   "`reference`); repeatable.")  # fmt: skip
@click.option("--replicas", default=1, show_default=True, type=click.IntRange(min=1),
              help="Replicas the hourly price is paid for.")  # fmt: skip
@click.option("--latency-slo-ms", type=click.FloatRange(min=0, min_open=True), metavar="MS",
              help="p95 bound of the throughput-at-SLO column (default: --slo latency_p95_ms, "
                   "then --model's configured slo.latency_p95_ms).")  # fmt: skip
@click.option("--model", metavar="M", help="Registered model: its configured latency SLO, and "
              "where --store-settings writes.")  # fmt: skip
@click.option("--store-settings", is_flag=True,
              help="Write each build's price, size, peak memory and throughput at the SLO to "
                   "--model's registry: to the version registered with its file, else to a new "
                   "version named by its file stem.")  # fmt: skip
@click.option("--no-memory", is_flag=True, help="Skip the peak-memory child processes.")
@output_options("json", what="the table")
@click.option("--config", "config_path", type=FILE,
              help="Config (guards: providers, threads; models' SLOs; database_url).")  # fmt: skip
@click.option("--database-url", default=None, metavar="URL",
              help="Registry for --store-settings (default: $MODELWATCH_DATABASE_URL, then the "
                   "config's database_url).")  # fmt: skip
def compare(**opts: Any) -> None:
    """Gate and measure each --candidate against --reference on --golden, side by side."""
    from guards.candidates import compare_candidates, parse_prices, parse_slo, store_settings
    from monitor.app.cli._output import on_stdout
    from monitor.app.cli._progress import progress
    from monitor.reports import write_text

    slo = parse_slo(opts["slo"])
    pairs = _pairs(opts["candidates"], opts["presets"])
    paths = [opts["reference"], *(p for p, _ in pairs)]
    prices = parse_prices(opts["hourly_prices"], [p.name for p in paths])
    config = _config(opts["config_path"])
    store = _store_targets(opts, paths)  # before measuring: a bad target stops here
    base = _request(opts, config, pairs[0][0])
    with progress(f"gating and timing {len(pairs)} candidates"):
        bound = _latency_slo(opts, config, slo)
        rows = compare_candidates(
            base, pairs, slo, prices, opts["replicas"], bound, not opts["no_memory"]
        )
    if store is not None:
        versions = store_settings(store[0], opts["model"], store[1], rows, opts["replicas"])
        click.echo(f"stored settings of {opts['model']} {', '.join(versions)}", err=True)
    if opts["json_path"] is not None:
        write_text(opts["json_path"], json.dumps([r.to_dict() for r in rows], indent=2))
    if not on_stdout(opts["json_path"]):
        _print(rows)
    sys.exit(0 if any(r.meets_slo and r.verdict == "pass" for r in rows[1:]) else 1)


def _config(path: Path | None) -> Any:
    from monitor.app.cli._common import load_checked_config
    from monitor.config import Config

    return load_checked_config(path) if path is not None else Config()


def _latency_slo(opts: dict[str, Any], config: Any, slo: dict[str, float]) -> float | None:
    """--latency-slo-ms, else --slo latency_p95_ms, else --model's configured p95 SLO."""
    if opts["latency_slo_ms"] is not None:
        return float(opts["latency_slo_ms"])
    if "latency_p95_ms" in slo:
        return slo["latency_p95_ms"]
    model = next((m for m in config.models if m.name == opts["model"]), None)
    return None if model is None or model.slo is None else model.slo.latency_p95_ms


def _store_targets(opts: dict[str, Any], paths: list[Path]) -> tuple[Any, list[Any]] | None:
    """The registry engine and each build's target version when --store-settings is given."""
    if not opts["store_settings"]:
        return None
    if not opts["model"]:
        raise click.UsageError("--store-settings needs --model")
    from guards.candidates import settings_targets
    from migrations import prepare_for_writes
    from monitor.app.cli._common import engine_from_options

    for path in paths:
        if not path.is_file():
            raise click.BadParameter(f"{path}: model file not found", param_hint="--candidate")
    engine = engine_from_options(opts["database_url"], opts["config_path"])
    prepare_for_writes(engine)
    return engine, settings_targets(engine, opts["model"], paths)


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


def _request(opts: dict[str, Any], config: Any, first: Path) -> Any:
    from guards.gate import GateRequest
    from guards.golden import load_golden
    from guards.policy import preset

    cfg = config.guards
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
        at_slo = None if r.at_slo is None else f"{r.at_slo.rows_per_s:.4g} (b{r.at_slo.batch_size})"
        price = None if r.hourly_price is None else f"${r.hourly_price:.4g}"
        cost = None if r.cost_per_1k is None else f"${r.cost_per_1k:.4g}"
        meets = "yes" if r.meets_slo else "no: " + ", ".join(r.missed)
        name = f"{r.candidate} (reference)" if r.role == "reference" else r.candidate
        table.append([name, r.preset, r.verdict, metric, drop, p95, f"{top.rows_per_s:.4g}",
                      at_slo, _size(r.file_bytes), _memory(r.memory), price, cost,
                      meets])  # fmt: skip
    header = ("build", "preset", "gate", "metric", "drop", "p95 per batch", "rows/s",
              "rows/s at SLO", "size", "peak mem", "$/h", "cost/1k", "meets SLOs?")  # fmt: skip
    echo_table(header, table, "no candidates")


def _size(n: int | None) -> str | None:
    if n is None:
        return None
    return f"{n / 1e6:.3g} MB" if n >= 1e6 else f"{n / 1e3:.3g} kB"


def _memory(use: Any) -> str:
    """Peak RSS the build added; device memory too where a GPU reported it ("n/a": none)."""
    if use is None:
        return "n/a"
    host = _size(use.rss_bytes) or "n/a"
    return host if use.device_bytes is None else f"{host} + {_size(use.device_bytes)} device"
