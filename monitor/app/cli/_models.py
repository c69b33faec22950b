"""`modelwatch models` (register, list) and `modelwatch rollback`: the model registry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from monitor.app.cli._options import database_options
from monitor.app.cli._table import echo_table

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


def _engine(database_url: str | None, config_path: Path | None, write: bool = False) -> Engine:
    from migrations import prepare_for_writes, require_head
    from monitor.app.cli._common import engine_from_options

    engine = engine_from_options(database_url, config_path)
    (prepare_for_writes if write else require_head)(engine)
    return engine


@click.group()
def models() -> None:
    """Register model versions and list the registry."""


@models.command("register")
@click.argument("args", nargs=-1, metavar="PATH")
@click.option("--model", metavar="M", help="Model name.")
@click.option("--version", "model_version", metavar="V", help="Version being registered.")
@click.option("--auto-rollback", is_flag=True, help="Roll back when a gate for it fails.")
@click.option("--activate", is_flag=True, help="Make this version the active one.")
@click.option("--precision", type=click.Choice(["fp32", "fp16", "int8"]), help="Numeric precision.")
@click.option("--quantization", metavar="TEXT", help='e.g. "static qdq, 512 calibration rows".')
@click.option("--batching", metavar="TEXT", help='Batch configuration, e.g. "max 64, 5 ms".')
@click.option("--runtime", metavar="TEXT", help='Runtime image, e.g. "ort 1.31 CUDA".')
@click.option("--meta", multiple=True, metavar="KEY=VALUE", help="Free setting (repeatable).")
@click.option(
    "--hourly-price",
    type=click.FloatRange(min=0, min_open=True),
    metavar="DOLLARS",
    help="Price of one of this version's replicas per hour (its serving cost).",
)
@click.option(
    "--replicas",
    type=click.IntRange(min=1),
    metavar="N",
    help="Replicas this version runs on (with --hourly-price; default 1).",
)
@database_options
def register_cmd(
    args: tuple[str, ...],
    model: str | None,
    model_version: str | None,
    auto_rollback: bool,
    activate: bool,
    precision: str | None,
    quantization: str | None,
    batching: str | None,
    runtime: str | None,
    meta: tuple[str, ...],
    hourly_price: float | None,
    replicas: int | None,
    database_url: str | None,
    config_path: Path | None,
) -> None:
    """Register --version of --model with its ONNX artifact at PATH.

    The old spelling `models register MODEL VERSION PATH` still works (with a deprecation note).
    """
    from guards.registry import optimization_settings, parse_meta, register_version

    model, version, path = _register_args(args, model, model_version)
    settings = optimization_settings(
        precision=precision,
        quantization=quantization,
        batching=batching,
        runtime=runtime,
        meta=parse_meta(meta),
        hourly_price=hourly_price,
        replicas=replicas,
    )
    engine = _engine(database_url, config_path, write=True)
    info = register_version(
        engine,
        model,
        version,
        path,
        auto_rollback=auto_rollback,
        activate=activate,
        settings=settings,
    )
    flags = [f for f, on in (("active", activate), ("auto-rollback", auto_rollback)) if on]
    suffix = f" ({', '.join(flags)})" if flags else ""
    click.echo(f"registered {model} {info.version} sha256 {info.artifact_sha256}{suffix}")


def _register_args(
    args: tuple[str, ...], model: str | None, version: str | None
) -> tuple[str, str, Path]:
    if model is not None or version is not None:
        if model is None or version is None or len(args) != 1:
            raise click.UsageError("usage: modelwatch models register --model M --version V PATH")
        return model, version, Path(args[0])
    if len(args) != 3:
        raise click.UsageError("usage: modelwatch models register --model M --version V PATH")
    deprecated("models register MODEL VERSION PATH", "models register --model M --version V PATH")
    return args[0], args[1], Path(args[2])


@models.command("activate")
@click.option("--model", required=True, metavar="M", help="Model name.")
@click.option("--version", "model_version", required=True, metavar="V", help="Version.")
@database_options
def activate_cmd(
    model: str, model_version: str, database_url: str | None, config_path: Path | None
) -> None:
    """Make --version the active version of --model (forward or back)."""
    from guards.registry import activate

    outcome = activate(_engine(database_url, config_path, write=True), model, model_version)
    _echo_move(outcome, "active", f"{model}: {outcome.active} is active")


@models.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@database_options
def list_cmd(as_json: bool, database_url: str | None, config_path: Path | None) -> None:
    """List models, their versions, and the active and last-known-good aliases."""
    from guards.registry import list_models

    infos = list_models(_engine(database_url, config_path))
    if as_json:
        doc = [
            {
                "model": m.name,
                "active": m.active,
                "last_known_good": m.last_known_good,
                "versions": [
                    {
                        "version": v.version,
                        "artifact_uri": v.artifact_uri,
                        "artifact_sha256": v.artifact_sha256,
                        "auto_rollback": v.auto_rollback,
                        "created_at": v.created_at.isoformat(),
                        "settings": dict(v.settings),
                    }
                    for v in m.versions
                ],
            }
            for m in infos
        ]
        click.echo(json.dumps(doc, indent=2))
        return
    rows = [
        [m.name, m.active, m.last_known_good,
         [v.version + ("*" if v.auto_rollback else "") for v in m.versions],
         " | ".join(f"{v.version}: {settings_text(v.settings)}" for v in m.versions
                    if v.settings)]
        for m in infos
    ]  # fmt: skip
    header = ("model", "active", "last_known_good", "versions (* auto-rollback)", "settings")
    echo_table(header, rows, "no models registered")


def settings_text(settings: Any) -> str:
    """Optimization settings on one line: `fp16; static qdq; max 64; ort 1.31; k=v`."""
    parts = [str(settings[k]) for k in ("precision", "quantization", "batching", "runtime")
             if k in settings]  # fmt: skip
    parts += [f"{k}={v}" for k, v in settings.get("meta", {}).items()]
    return "; ".join(parts)


@click.command()
@click.argument("legacy_model", required=False, metavar="")
@click.option("--model", metavar="M", help="Model name.")
@click.option("--to", "to_version", help="Version to make active (default: last-known-good).")
@database_options
def rollback(
    legacy_model: str | None,
    model: str | None,
    to_version: str | None,
    database_url: str | None,
    config_path: Path | None,
) -> None:
    """Move --model's active alias back to last-known-good (or --to an older VERSION).

    `rollback MODEL` (positional) still works, with a deprecation note.
    """
    from guards.registry import rollback as do_rollback

    if legacy_model is not None:
        if model is not None:
            raise click.UsageError("give the model once: --model M")
        deprecated("rollback MODEL", "rollback --model M")
        model = legacy_model
    if model is None:
        raise click.UsageError("--model is required")
    outcome = do_rollback(_engine(database_url, config_path, write=True), model, to_version)
    _echo_move(
        outcome, "rolled back", f"{model}: already active at {outcome.active}; nothing changed"
    )


def _echo_move(outcome: Any, verb: str, unchanged: str) -> None:
    """'MODEL: VERB FROM -> TO (event N)', or `unchanged` when the alias did not move."""
    r = outcome.rollback
    if r is None:
        click.echo(unchanged)
    else:
        click.echo(
            f"{outcome.model}: {verb} {r.from_version} -> {r.to_version} (event {r.event_id})"
        )


def deprecated(old: str, new: str) -> None:
    """One note on stderr; the old spelling keeps working."""
    click.echo(f"modelwatch: deprecated: `{old}`; use `{new}`", err=True)
