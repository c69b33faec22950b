"""`modelwatch models` (register, list) and `modelwatch rollback`: the model registry."""

from __future__ import annotations

import json
from pathlib import Path

import click
from sqlalchemy.engine import Engine

from monitor.cli.common import database_options, engine_from_options


def _engine(database_url: str | None, config_path: Path | None, write: bool = False) -> Engine:
    from monitor.storage import prepare_for_writes, require_head

    engine = engine_from_options(database_url, config_path)
    (prepare_for_writes if write else require_head)(engine)
    return engine


@click.group()
def models() -> None:
    """Register model versions and list the registry."""


@models.command("register")
@click.argument("model")
@click.argument("version")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--auto-rollback", is_flag=True, help="Roll back when a gate for it fails.")
@click.option("--activate", is_flag=True, help="Make this version the active one.")
@database_options
def register_cmd(
    model: str,
    version: str,
    path: Path,
    auto_rollback: bool,
    activate: bool,
    database_url: str | None,
    config_path: Path | None,
) -> None:
    """Register VERSION of MODEL with its ONNX artifact at PATH."""
    from guards.registry import register_version

    engine = _engine(database_url, config_path, write=True)
    info = register_version(
        engine, model, version, path, auto_rollback=auto_rollback, activate=activate
    )
    flags = [f for f, on in (("active", activate), ("auto-rollback", auto_rollback)) if on]
    suffix = f" ({', '.join(flags)})" if flags else ""
    click.echo(f"registered {model} {info.version} sha256 {info.artifact_sha256}{suffix}")


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
                    }
                    for v in m.versions
                ],
            }
            for m in infos
        ]
        click.echo(json.dumps(doc, indent=2))
        return
    for m in infos:
        versions = ", ".join(v.version + ("*" if v.auto_rollback else "") for v in m.versions)
        click.echo(
            f"{m.name}: active={m.active or '-'} last_known_good={m.last_known_good or '-'} "
            f"versions=[{versions}]"
        )


@click.command()
@click.argument("model")
@click.option("--to", "to_version", help="Version to make active (default: last-known-good).")
@database_options
def rollback(
    model: str, to_version: str | None, database_url: str | None, config_path: Path | None
) -> None:
    """Move MODEL's active alias back to last-known-good (or --to VERSION)."""
    from guards.registry import rollback as do_rollback

    outcome = do_rollback(_engine(database_url, config_path, write=True), model, to_version)
    if outcome.rollback is None:
        click.echo(f"{model}: already active at {outcome.active}; nothing changed")
    else:
        r = outcome.rollback
        click.echo(f"{model}: rolled back {r.from_version} -> {r.to_version} (event {r.event_id})")
