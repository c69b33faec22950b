"""`modelwatch loadtest URL --qps 50,100 --duration 30s`: an open-loop load test of an endpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from monitor.app.cli._options import database_options, output_options


@click.command("loadtest")
@click.argument("url")
@click.option("--qps", required=True, metavar="R,...", help="Arrival rates to test, requests "
              "per second, comma-separated, each run in turn (include one well below capacity: "
              "its median latency is the service time).")  # fmt: skip
@click.option("--duration", default="30s", show_default=True, metavar="D",
              help="How long each rate runs (30s, 2m, 500ms).")  # fmt: skip
@click.option("--timeout", "timeout_", default="10s", show_default=True, metavar="D",
              help="Total deadline of one request, from its intended send time.")  # fmt: skip
@click.option("--payload", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, metavar="FILE", help="Request body (sent with POST; without it, "
              "GET).")  # fmt: skip
@click.option("--content-type", default="application/json", show_default=True, metavar="TYPE",
              help="Content-Type header of the --payload.")  # fmt: skip
@click.option("--connections", type=click.IntRange(1, 10_000), default=None, metavar="N",
              help="Connections per rate (default: rate x 0.1 s, between 4 and 256).")  # fmt: skip
@output_options("json", "html", "markdown", what="the load-test report")
@click.option("--register", nargs=2, default=None, metavar="MODEL VERSION",
              help="Store the measured capacity in this registered version's settings "
              "(`capacity`: knee, sustained rate, saturated throughput, service "
              "time).")  # fmt: skip
@database_options
def loadtest(url: str, qps: str, duration: str, timeout_: str, payload: Path | None,
             content_type: str, connections: int | None, register: tuple[str, str] | None,
             database_url: str | None, config_path: Path | None, **paths: Any) -> None:  # fmt: skip
    """Drive URL open-loop at each --qps rate; report latency percentiles, errors and the knee.

    Latency counts from each request's intended send time on the fixed schedule (corrected for
    coordinated omission), so a server that falls behind shows its queue."""
    from monitor.app.cli._loadtest_run import registry, run, store_capacity

    rates = _rates(qps)
    seconds = _seconds(duration, "--duration"), _seconds(timeout_, "--timeout")
    # an unknown model or version stops here, not after the whole run
    engine = None if register is None else registry(database_url, config_path, *register)
    report = run(url, rates, *seconds, payload, content_type, connections, paths)
    if engine is not None and register is not None:
        store_capacity(engine, report, *register)


def _rates(text: str) -> list[float]:
    """`50,100,200` as positive finite numbers, or a usage error naming the bad one."""
    rates = []
    for part in (p.strip() for p in text.split(",")):
        try:
            rate = float(part)
        except ValueError:
            raise click.BadParameter(f"{part!r} is not a number", param_hint="--qps") from None
        if not 0 < rate < 1e6:
            raise click.BadParameter(f"{part} must be above 0 and below 1e6", param_hint="--qps")
        rates.append(rate)
    return rates


def _seconds(text: str, flag: str) -> float:
    from monitor.config import parse_duration

    try:
        seconds = parse_duration(text).total_seconds()
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=flag) from None
    if seconds <= 0:
        raise click.BadParameter(f"{text} must be above 0", param_hint=flag)
    return seconds
