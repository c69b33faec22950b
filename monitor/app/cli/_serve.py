"""`modelwatch serve`: the long-running daemon (composition root).

The listening socket is bound before anything starts, so a port in use is one line and exit 2,
and "serving on" is printed only once the API can answer.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import sys
from pathlib import Path

import click

from monitor.app.cli._logging import FORMATS, LEVELS, announcement, config_secrets, configure
from monitor.errors import ConfigError


@click.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML config (default: embedded defaults, SQLite in the working directory).",
)
@click.option("--host", default=None, help="Listen address (default: api.host, 127.0.0.1).")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Listen port (default: api.port, 8080).",
)
@click.option(
    "--log-level", type=click.Choice(LEVELS), default="info", show_default=True, help="Log level."
)
@click.option(
    "--log-format",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="Plain lines or one JSON object per line.",
)
def serve(
    config_path: Path | None, host: str | None, port: int | None, log_level: str, log_format: str
) -> None:
    """Run the daemon: collectors, scheduled jobs and the HTTP API."""
    from monitor.app.cli._common import load_checked_config
    from monitor.config import parse_config

    config = (
        load_checked_config(config_path) if config_path else parse_config({}, source="defaults")
    )
    # The only command that answers HTTP is the only one that needs the API tokens' secrets.
    config.api.check_token_env(os.environ, str(config_path or "defaults"))
    from monitor.app.daemon.wiring import build_service  # the daemon's libraries, once it can start
    from monitor.storage import make_engine

    configure(log_level, log_format, config_secrets(config, os.environ))
    host = host or config.api.host
    port = config.api.port if port is None else port
    sock = bind(host, port)
    service = build_service(config, make_engine(config.database_url))

    def announce() -> None:
        bound = sock.getsockname()[1]
        text = f"modelwatch serving on http://{host}:{bound} (replica {service.holder})"
        click.echo(announcement(text, log_format), err=True)

    service.serve(host, port, sock=sock, on_ready=announce)
    _exit_despite_blocked_jobs(service.scheduler.running())


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket; ConfigError (exit 2) naming the address when it cannot bind."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        why = "the port is already in use" if exc.errno == errno.EADDRINUSE else exc.strerror
        raise ConfigError(
            f"cannot listen on {host}:{port}: {why} (choose another with --port or api.port)"
        ) from None
    sock.set_inheritable(True)
    return sock


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
