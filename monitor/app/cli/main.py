"""Entry point: a lazily-loaded click group, and the one place user errors become exit 2."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from monitor._version import __version__
from monitor.errors import ModelwatchError

# name -> ("module:attribute", short help). Commands load on first use so `--help` stays fast
# and heavy libraries (pandas, onnxruntime, evidently) load only where needed.
COMMANDS: dict[str, tuple[str, str]] = {
    "db": ("monitor.app.cli._db:db", "Create or inspect the database schema."),
    "config": ("monitor.app.cli._config_cmd:config", "Validate configuration files."),
    "demo": ("monitor.app.cli._demo:demo", "Run the whole loop on embedded defaults in a minute."),
    "serve": ("monitor.app.cli._serve:serve", "Run the daemon: collectors, jobs, HTTP API."),
    "alerts": ("monitor.app.cli._alerts:alerts", "Show alert states; run the delivery worker."),
    "silences": ("monitor.app.cli._alerts:silences", "Add, list and expire alert silences."),
    "gate": ("monitor.app.cli._gate:gate", "Gate an optimized ONNX build against its reference."),
    "canary": (
        "monitor.app.cli._canary:canary",
        "Judge a canary version's live traffic vs stable.",
    ),
    "compare": (
        "monitor.app.cli._compare:compare",
        "Compare candidate builds: metric, latency, cost.",
    ),
    "models": ("monitor.app.cli._models:models", "Register model versions and list the registry."),
    "rollback": ("monitor.app.cli._models:rollback", "Move a model's active version back."),
    "collect": (
        "monitor.app.cli._collect:collect",
        "Run the configured sources into window profiles.",
    ),
    "status": ("monitor.app.cli._collect:status", "Show ingest counters per source and model."),
    "baseline": ("monitor.app.cli._baseline:baseline", "Profile reference data once and store it."),
    "drift": (
        "monitor.app.cli._drift:drift",
        "Compare two data files for drift, overall and per slice.",
    ),
    "estimate": (
        "monitor.app.cli._estimate:estimate",
        "Estimate a classifier's performance on data without labels (CBPE).",
    ),
    "loadtest": (
        "monitor.app.cli._loadtest:loadtest",
        "Load-test an HTTP model endpoint open-loop at fixed rates.",
    ),
    "skew": ("monitor.app.cli._skew:skew", "Compare serving and offline values joined by a key."),
    "segments": (
        "monitor.app.cli._segments:segments",
        "Find feature segments where the model does worse than on the rest.",
    ),
    "dashboards": (
        "monitor.app.cli._dashboards:dashboards",
        "Export or provision Grafana dashboards.",
    ),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported when invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target[0].split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="modelwatch")
def cli() -> None:
    """modelwatch: monitor deployed ML models and guard optimized builds."""


def main(argv: list[str] | None = None) -> Any:
    """Run the CLI; a ModelwatchError is one line on stderr and exit status 2."""
    try:
        return cli.main(args=argv, prog_name="modelwatch", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("modelwatch: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except ModelwatchError as exc:
        click.echo(f"modelwatch: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
