"""`modelwatch demo`: the whole loop on embedded defaults."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo"),
    show_default=True,
    help="Where models, data, database and reports go.",
)
@click.option("--serve", is_flag=True, help="Keep the daemon and API running afterwards.")
def demo(workdir: Path, serve: bool) -> None:
    """Build models, stream drifting traffic, alert, gate and roll back; write summary.json."""
    from rich.console import Console

    from monitor.app.cli._logging import configure
    from monitor.app.demo.run import run_demo

    configure("error")
    console = Console()
    summary = run_demo(workdir, console, serve=serve)
    console.print(
        f"summary: {workdir / 'summary.json'} "
        f"(reports: {len(summary['reports'])}, dashboards: {len(summary['dashboards'])})"
    )
