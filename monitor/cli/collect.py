"""`modelwatch collect` and `modelwatch status`: run the sources, report what they did."""

from __future__ import annotations

import json
import logging
import signal
import threading
from pathlib import Path
from types import FrameType

import click
from sqlalchemy.engine import Engine

from monitor.config import Config, load_config
from monitor.storage import make_engine, prepare_for_writes, require_head

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

    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    config = load_config(config_path)
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
    from monitor.daemon.metrics import MetricsPublisher

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
    """Per-source counters (events, dead letters, late, lag) and per-model windows."""
    from collectors.status import collect_status

    config = load_config(config_path)
    engine = make_engine(config.database_url)
    require_head(engine)
    result = collect_status(engine, config.sources)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    click.echo(f"{'source':20} {'type':6} {'events':>10} {'dead':>8} {'late':>8} {'lag':>10}")
    for s in result.sources:
        click.echo(
            f"{s.name:20} {s.type:6} {s.events:>10} {s.dead_letters:>8} {s.late:>8} {s.lag:>10}"
        )
    for m in result.models:
        click.echo(f"model {m.name} version {m.version}: {m.events} events in {m.windows} windows")
