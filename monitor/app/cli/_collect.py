"""`modelwatch collect` and `modelwatch status`: run the sources, report what they did."""

from __future__ import annotations

import json
import os
import signal
import threading
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from monitor.config import Config
    from monitor.failures import Failure

CONFIG_OPTION = click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Config file (YAML).",
)


@click.command()
@CONFIG_OPTION
@click.option(
    "--until-caught-up",
    is_flag=True,
    help="Exit 0 once every source consumed what was available at start.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log progress to stderr.")
@click.option(
    "--metrics-port",
    type=int,
    default=None,
    help="Serve Prometheus /metrics on 127.0.0.1:PORT while collecting.",
)
def collect(
    config_path: Path, until_caught_up: bool, verbose: bool, metrics_port: int | None
) -> None:
    """Run the configured sources (Kafka, JSONL logs) into window profiles."""
    from collectors.runner import RunState, run
    from migrations import prepare_for_writes
    from monitor.app.cli._common import load_checked_config
    from monitor.app.cli._logging import config_secrets, configure
    from monitor.storage import make_engine

    config = load_checked_config(config_path)
    configure("info" if verbose else "warning", secrets=config_secrets(config, os.environ))
    engine = make_engine(config.database_url)
    prepare_for_writes(engine)
    state = RunState()

    def _stop(signum: int, frame: FrameType | None) -> None:
        state.stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    if metrics_port is not None:
        _serve_metrics(engine, config, metrics_port, state.stop)
    run(engine, config, until_caught_up=until_caught_up, state=state)


def _serve_metrics(engine: Engine, config: Config, port: int, stop: threading.Event) -> None:
    """Expose /metrics, refreshed from the database every second until `stop`."""
    from prometheus_client import CollectorRegistry

    from dashboards.exposition import serve_metrics
    from dashboards.metrics import ModelwatchMetrics
    from monitor.app.daemon.metrics import MetricsPublisher

    registry = CollectorRegistry()
    publisher = MetricsPublisher(engine, ModelwatchMetrics(registry, config.models))
    server = serve_metrics(registry, "127.0.0.1", port)
    click.echo(f"metrics on http://127.0.0.1:{server.port}/metrics", err=True)
    names = [m.name for m in config.models]

    def refresh() -> None:
        while not stop.wait(1.0):
            publisher.publish(names)

    publisher.publish(names)
    threading.Thread(target=refresh, name="metrics", daemon=True).start()


@click.command()
@CONFIG_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(config_path: Path, as_json: bool) -> None:
    """Per-source counters (events, labels, dead letters, late, lag), per-model windows, and the
    daemon's jobs: last success, failing items, component restarts."""
    from collectors.status import collect_status
    from migrations import require_head
    from monitor.app.cli._common import load_checked_config
    from monitor.failures import last_successes, list_failures
    from monitor.storage import make_engine

    config = load_checked_config(config_path)
    engine = make_engine(config.database_url)
    require_head(engine)
    result = collect_status(engine, config.sources)
    successes, failing = last_successes(engine), list_failures(engine)
    if as_json:
        doc = {**result.to_dict(), **_jobs_doc(successes, failing)}
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(
        f"{'source':20} {'type':6} {'events':>10} {'labels':>8} {'dead':>8} {'late':>8} {'lag':>10}"
    )
    for s in result.sources:
        click.echo(
            f"{s.name:20} {s.type:6} {s.events:>10} {s.labels:>8} {s.dead_letters:>8} "
            f"{s.late:>8} {s.lag:>10}"
        )
    if result.intake_backlog:
        click.echo(f"http intake backlog: {result.intake_backlog} requests not yet aggregated")
    for m in result.models:
        click.echo(f"model {m.name} version {m.version}: {m.events} events in {m.windows} windows")
    for job, at in sorted(successes.items()):
        click.echo(f"job {job}: last success {at.isoformat(timespec='seconds')}")
    for f in failing:
        since = f.first_failed_at.isoformat(timespec="seconds")
        click.echo(f"FAILING {f.job}: {f.item}: {f.failures} times since {since}: {f.error}")


def _jobs_doc(successes: dict[str, datetime], failing: list[Failure]) -> dict[str, Any]:
    return {
        "jobs": {job: {"last_success": at.isoformat()} for job, at in sorted(successes.items())},
        "failures": [
            {
                "job": f.job,
                "item": f.item,
                "model": f.model,
                "version": f.version,
                "error": f.error,
                "failures": f.failures,
                "since": f.first_failed_at.isoformat(),
                "retry_at": f.retry_at.isoformat(),
                "window_start": f.window_start.isoformat() if f.window_start else None,
            }
            for f in failing
        ],
    }
