"""`modelwatch serve`: the long-running daemon (composition root)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import click

from monitor.cli.common import load_checked_config
from monitor.config import parse_config
from monitor.daemon.wiring import build_service
from monitor.storage import make_engine

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@click.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML config (default: embedded defaults, SQLite in the working directory).",
)
@click.option("--host", default=None, help="Listen address (default: api.host, 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Listen port (default: api.port, 8080).")
def serve(config_path: Path | None, host: str | None, port: int | None) -> None:
    """Run the daemon: collectors, scheduled jobs and the HTTP API."""
    config = (
        load_checked_config(config_path) if config_path else parse_config({}, source="defaults")
    )
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    service = build_service(config, make_engine(config.database_url))
    host = host or config.api.host
    port = config.api.port if port is None else port
    click.echo(f"modelwatch serving on http://{host}:{port} (replica {service.holder})", err=True)
    service.serve(host, port)
    _exit_despite_blocked_jobs(service.scheduler.running())


def _exit_despite_blocked_jobs(running: list[str]) -> None:
    """Exit now even if a job is blocked: Python would otherwise join its thread at exit, and
    SIGTERM would wait on, e.g., a locked database for as long as that takes."""
    if not running:
        return
    logging.getLogger(__name__).warning(
        "exiting while job(s) %s still run; their work is not committed", ", ".join(running)
    )
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
