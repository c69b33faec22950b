"""The work of `modelwatch loadtest` (flags: `_loadtest`): run, summarise, write the reports."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from monitor.app.cli._output import on_stdout
from monitor.errors import InputError
from monitor.loadtest import LoadtestReport, RateRun, Target, percentiles, run_loadtest
from monitor.reports import render_loadtest_html, render_loadtest_markdown, write_json, write_text


def run(
    url: str,
    rates: list[float],
    duration: float,
    timeout: float,
    payload: Path | None,
    content_type: str,
    connections: int | None,
    paths: dict[str, Any],
) -> LoadtestReport:
    """Run every rate, print one line each as it ends, then write the asked-for reports."""
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
        raise click.BadParameter(f"{url!r} is not an http(s) URL", param_hint="URL")
    target = Target(url)
    if payload is not None:
        try:
            body = payload.read_bytes()
        except OSError as exc:
            raise InputError(f"{payload}: cannot read: {exc.strerror}") from None
        target = Target(url, "POST", body, (("content-type", content_type),))
    err = on_stdout(*paths.values())
    report = run_loadtest(target, rates, duration, timeout, connections, _progress(err))
    _write(report, paths)
    click.echo(_knee(report), err=err)
    return report


def registry(database_url: str | None, config_path: Path | None, model: str, version: str) -> Any:
    """The registry's engine, once `model` `version` is known to be registered."""
    from guards.registry import update_settings
    from migrations import prepare_for_writes
    from monitor.app.cli._common import engine_from_options

    engine = engine_from_options(database_url, config_path)
    prepare_for_writes(engine)
    update_settings(engine, model, version, {})  # NotFoundError naming what is not registered
    return engine


def store_capacity(engine: Any, report: LoadtestReport, model: str, version: str) -> None:
    """Store the capacity estimate under `capacity` in the version's registry settings."""
    from guards.registry import update_settings

    capacity = {
        "knee_qps": report.knee_rate,
        "sustained_qps": report.sustained_rate,
        "saturated_qps": report.saturated_throughput,
        "service_time_ms": report.service_time_ms,
        "url": report.url,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    update_settings(engine, model, version, {"capacity": capacity})
    click.echo(f"registered capacity of {model} {version}", err=True)


def _progress(err: bool) -> Any:
    def heard(run: RateRun) -> None:
        failed = sum(run.errors.values())
        p99 = percentiles(run.corrected).p99
        click.echo(f"rate={run.rate:g}/s sent={run.sent} errors={failed} p99_ms={p99}", err=err)

    return heard


def _knee(report: LoadtestReport) -> str:
    if report.knee_rate is None:
        return f"knee=none (every rate held) service_time={report.service_time_ms}ms"
    return (
        f"knee={report.knee_rate:g}/s sustained={report.sustained_rate}/s "
        f"saturated_throughput={report.saturated_throughput or 0:.1f}/s "
        f"service_time={report.service_time_ms}ms"
    )


def _write(report: LoadtestReport, paths: dict[str, Any]) -> None:
    if paths["json_path"] is not None:
        write_json(paths["json_path"], report.to_dict())
    if paths["html_path"] is not None:
        title = f"load test: {report.url}"
        write_text(paths["html_path"], render_loadtest_html(report, title))
    if paths["markdown_path"] is not None:
        write_text(paths["markdown_path"], render_loadtest_markdown(report))
