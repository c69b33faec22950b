"""`modelwatch canary MODEL CANARY --baseline STABLE`: live canary analysis from stored windows.

A read, like `GET /v1/canary/...`: `--apply` carries out `canary.action` (like the admin
`POST /v1/canary/.../apply`). Exit status: 0 pass, 1 fail, 3 inconclusive (like `modelwatch
gate`), 2 for bad input or a rollback that cannot be made (the target is not known good).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from monitor.app.cli._models import settings_text
from monitor.app.cli._options import database_options, output_options
from monitor.app.cli._table import echo_table

if TYPE_CHECKING:
    from monitor.canary import CanaryReport
    from monitor.config import Config, ModelConfig

EXIT = {"pass": 0, "fail": 1, "inconclusive": 3}


@click.command()
@click.argument("model")
@click.argument("canary_version", metavar="CANARY")
@click.option("--baseline", required=True, metavar="STABLE", help="The stable version.")
@click.option("--since", default="1h", show_default=True, help="Duration back or RFC 3339 time.")
@click.option(
    "--apply", "apply", is_flag=True, help="Carry out canary.action (rollback) on a failure."
)
@output_options("json")
@database_options
def canary(
    model: str,
    canary_version: str,
    baseline: str,
    since: str,
    apply: bool,
    json_path: Path | None,
    database_url: str | None,
    config_path: Path | None,
) -> None:
    """Compare CANARY's live windows of MODEL with --baseline's over the same range."""
    from migrations import require_head
    from monitor.app.cli._common import engine_from_options, load_checked_config
    from monitor.app.cli._output import on_stdout
    from monitor.app.daemon.canary_api import apply_action
    from monitor.canary import analyze_canary, since_of
    from monitor.config import Config
    from monitor.reports import write_text

    config = load_checked_config(config_path) if config_path is not None else Config()
    cfg = _model(config, model)
    engine = engine_from_options(database_url, config_path)
    require_head(engine)
    now = datetime.now(UTC)
    window_s = config.collect.window.total_seconds()
    report = analyze_canary(
        engine, cfg, canary_version, baseline, since_of(since, now), now, window_s
    )
    done = apply_action(engine, cfg, report, None) if apply else None
    if json_path is not None:
        write_text(json_path, json.dumps(report.to_dict(), indent=2))
    if not on_stdout(json_path):
        _print(report)
        _print_settings(engine, report)
    if done is not None:
        click.echo(f"action: {done.action}", err=on_stdout(json_path))
    sys.exit(EXIT[report.verdict])


def _model(config: Config, model: str) -> ModelConfig:
    """The configured model, or its defaults when there is no config."""
    from monitor.app.daemon.canary_api import model_config
    from monitor.config import ModelConfig

    if not config.models:
        return ModelConfig(name=model)
    return model_config(config, model)


def _print_settings(engine: Any, report: CanaryReport) -> None:
    """How each version was optimized, where the registry knows."""
    from guards.registry import version_settings

    for role, version in (("canary", report.canary), ("baseline", report.baseline)):
        settings = version_settings(engine, report.model, version)
        if settings:
            click.echo(f"  {role} {version} settings: {settings_text(settings)}")


def _print(report: CanaryReport) -> None:
    click.echo(
        f"canary {report.model} {report.canary} vs {report.baseline} since "
        f"{report.since.isoformat()}: {report.verdict.upper()}"
    )
    rows = [
        [c.name, c.status, c.canary, c.baseline, c.threshold, c.n_canary, c.n_baseline, c.detail]
        for c in report.criteria
    ]
    header = ("criterion", "status", "canary", "baseline", "threshold", "n_canary", "n_baseline",
              "detail")  # fmt: skip
    echo_table(header, rows, "no criteria")
