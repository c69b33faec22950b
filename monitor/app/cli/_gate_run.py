"""What `modelwatch gate` does once its flags are parsed (the flags: `_gate.py`)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from guards import (
    CollectingListener,
    GoldenSet,
    GuardVerdict,
    gate_request,
    load_golden,
    record_gate,
    run_gate,
)
from guards.history import judged_hashes
from guards.registry import verify_registered, version_settings
from guards.reports import (
    headline,
    localization_lines,
    render_html,
    render_json,
    render_markdown,
)
from migrations import prepare_for_writes
from monitor.app.cli._common import load_checked_config, resolve_database_url
from monitor.app.cli._output import on_stdout
from monitor.app.cli._progress import progress
from monitor.config import Config, GuardsConfig, parse_duration
from monitor.reports import write_text
from monitor.storage import make_engine

# Threshold flags layered over the preset (and its `guards.presets` config); None: not given.
POLICY_FLAGS = (
    "atol", "rtol", "max_flip_rate", "max_slice_flip_rate", "max_metric_drop",
    "max_slice_metric_drop", "latency_budget_ms", "max_latency_ratio",
)  # fmt: skip


def run_gate_command(opts: dict[str, Any]) -> None:
    """Gate, write the reports, print the summary, record the run; exit with the verdict's code."""
    if bool(opts["model"]) != bool(opts["model_version"]):
        raise click.UsageError("--model and --version go together")
    cfg = _config(opts["config_path"])
    request = gate_request(
        opts["reference"],
        opts["candidate"],
        _golden(opts),
        cfg.guards,
        opts["preset"],
        [{k: opts[k] for k in POLICY_FLAGS}],
        latency_batch_sizes=_latency_sizes(opts),
        output=opts["output_name"],
        model=opts["model"],
        version=opts["model_version"],
        **_localize(opts, cfg.guards),
    )
    if opts["model"]:
        _verify_candidate(opts)
    with progress(f"replaying {request.golden.rows} golden rows through both models"):
        verdict = run_gate(request)
    if opts["model"]:
        verdict = _with_settings(opts, verdict)
    _write_reports(opts, verdict.to_dict())
    err = on_stdout(opts["json_path"], opts["html_path"], opts["markdown_path"])
    _summary(verdict, err)
    if opts["model"]:
        _record(opts, verdict, err)
    sys.exit(verdict.exit_code)


def _config(path: Path | None) -> Config:
    return load_checked_config(path) if path is not None else Config()


def _golden(opts: dict[str, Any]) -> GoldenSet:
    features = [f.strip() for f in opts["features"].split(",")] if opts["features"] else None
    return load_golden(
        opts["golden"],
        id_column=opts["id_column"],
        label_column=opts["label_column"],
        slice_by=opts["slice_by"],
        features=features,
    )


def _latency_sizes(opts: dict[str, Any]) -> tuple[int, ...] | None:
    """--no-latency: none; --batch-size given: those; else None (guards config decides)."""
    if opts["no_latency"]:
        return ()
    return tuple(opts["batch_size"]) or None


def _localize(opts: dict[str, Any], cfg: GuardsConfig) -> dict[str, Any]:
    flag = opts["localize"]
    mode = "always" if flag else "never" if flag is False or not cfg.localize.on_fail else "on_fail"
    budget = cfg.localize.budget
    if opts["localize_budget"] is not None:
        try:
            budget = parse_duration(opts["localize_budget"])
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--localize-budget") from None
        if budget.total_seconds() <= 0:
            raise click.BadParameter("must be a positive duration", param_hint="--localize-budget")
    return {
        "localize": mode,
        "localize_budget_s": budget.total_seconds(),
        "localize_rows": opts["localize_rows"] or cfg.localize.max_rows,
    }


def _write_reports(opts: dict[str, Any], doc: dict[str, Any]) -> None:
    for key, render in (
        ("json_path", render_json),
        ("html_path", render_html),
        ("markdown_path", render_markdown),
    ):
        path: Path | None = opts[key]
        if path is not None:
            write_text(path, render(doc))


def _summary(verdict: GuardVerdict, err: bool) -> None:
    """The headline and every criterion that did not pass (on stderr when a report is on stdout)."""
    doc = verdict.to_dict()
    click.echo(headline(doc), err=err)
    for criterion in verdict.criteria:
        if criterion.status != "pass":
            click.echo(f"  {criterion.status.upper()}: {criterion.describe()}", err=err)
    for line in localization_lines(doc):
        click.echo(f"  {line}", err=err)


def _verify_candidate(opts: dict[str, Any]) -> None:
    """A registered --version is gated only with the file it was registered with (exit 2)."""
    engine = make_engine(resolve_database_url(opts["database_url"], opts["config_path"]))
    try:
        prepare_for_writes(engine)
        verify_registered(engine, opts["model"], opts["model_version"], opts["candidate"])
    finally:
        engine.dispose()


def _with_settings(opts: dict[str, Any], verdict: Any) -> Any:
    """The verdict with the registered version's optimization settings in its `run`."""
    engine = make_engine(resolve_database_url(opts["database_url"], opts["config_path"]))
    try:
        prepare_for_writes(engine)
        settings = version_settings(engine, opts["model"], opts["model_version"])
    finally:
        engine.dispose()
    return replace(verdict, run={**verdict.run, "settings": settings})


def _record(opts: dict[str, Any], verdict: GuardVerdict, err: bool) -> None:
    engine = make_engine(resolve_database_url(opts["database_url"], opts["config_path"]))
    prepare_for_writes(engine)
    listener = CollectingListener()
    artifacts = (opts["reference"], opts["candidate"], opts["golden"])
    record = record_gate(
        engine,
        opts["model"],
        opts["model_version"],
        verdict,
        artifacts,
        listener,
        hashes=judged_hashes(verdict),
    )
    click.echo(f"recorded gate run {record.gate_run_id}; {record.action}", err=err)
    engine.dispose()
