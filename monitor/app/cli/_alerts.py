"""`modelwatch alerts` (states, delivery worker) and `modelwatch silences` (add, list, expire)."""

from __future__ import annotations

import json
import signal
import threading
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from monitor.app.cli._options import database_options
from monitor.app.cli._table import echo_table
from monitor.errors import InputError

if TYPE_CHECKING:
    from monitor.storage import AlertNotification, AlertState


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


@click.group()
def alerts() -> None:
    """Show alert states and run the notification delivery worker."""


@alerts.command("list")
@database_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--outbox", is_flag=True, help="List notifications (pending, sent, dead) instead.")
def list_cmd(
    database_url: str | None, config_path: Path | None, as_json: bool, outbox: bool
) -> None:
    """Current alert states (or the notification outbox), newest change first."""
    from sqlalchemy import select

    from migrations import require_head
    from monitor.app.cli._common import engine_from_options
    from monitor.storage import AlertNotification, AlertState, transaction

    engine = engine_from_options(database_url, config_path)
    require_head(engine)
    with transaction(engine) as session:
        if outbox:
            data = [
                _outbox_row(r)
                for r in session.scalars(
                    select(AlertNotification).order_by(AlertNotification.id.desc()).limit(500)
                )
            ]
        else:
            data = [
                _state_row(r)
                for r in session.scalars(select(AlertState).order_by(AlertState.updated_at.desc()))
            ]
    if as_json:
        _echo_json(data)
        return
    shown = OUTBOX_COLUMNS if outbox else STATE_COLUMNS
    rows = [[_summary(row) if k == "summary" else row[k] for k in shown] for row in data]
    echo_table(shown, rows, "no notifications" if outbox else "no alerts")


def _summary(row: dict[str, Any]) -> str | None:
    annotations = row.get("annotations") or {}
    return annotations.get("summary") or annotations.get("description")


# Table columns (JSON has every field): labels are the alert's identity, the summary its text.
STATE_COLUMNS = ("rule", "state", "value", "active_since", "muted_by", "labels", "summary")
OUTBOX_COLUMNS = ("id", "kind", "receiver", "status", "attempts", "created_at", "last_error")


def _state_row(r: AlertState) -> dict[str, Any]:
    return {
        "fingerprint": r.fingerprint,
        "rule": r.rule,
        "state": r.state,
        "muted_by": r.muted_by,
        "value": r.value,
        "active_since": r.active_since.isoformat(),
        "labels": r.labels,
        "annotations": r.annotations,
    }


def _outbox_row(r: AlertNotification) -> dict[str, Any]:
    return {
        "id": r.id,
        "kind": r.kind,
        "receiver": r.receiver,
        "status": r.status,
        "attempts": r.attempts,
        "created_at": r.created_at.isoformat(),
        "last_error": r.last_error,
        "idempotency_key": r.idempotency_key,
    }


@alerts.command("deliver")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Config file (receivers, policy).",
)
@click.option("--database-url", default=None, metavar="URL", help="Overrides the config's.")
@click.option("--once", is_flag=True, help="Deliver what is due now, then exit.")
def deliver_cmd(config_path: Path, database_url: str | None, once: bool) -> None:
    """Run the outbox delivery worker until interrupted (SIGTERM/SIGINT stop it cleanly)."""
    import httpx

    from alerts.delivery import DeliveryWorker
    from migrations import require_head
    from monitor.app.cli._common import load_checked_config, resolve_database_url
    from monitor.storage import make_engine

    cfg = load_checked_config(config_path)
    engine = make_engine(resolve_database_url(database_url, config_path))
    require_head(engine)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with httpx.Client(verify=True) as client:
        worker = DeliveryWorker(engine, cfg.alerts, client)
        total = worker.run(stop, once=once)
    click.echo(f"sent {total.sent}, retried {total.retried}, dead {total.dead}")


@click.group()
def silences() -> None:
    """Mute notifications of matching alerts for a while."""


@silences.command("add")
@click.argument("matchers", nargs=-1, required=True)
@click.option("--author", required=True, help="Who is silencing.")
@click.option("--comment", required=True, help="Why (a ticket, an incident).")
@click.option("--duration", default="2h", show_default=True, help="e.g. 30m, 2h, 1d.")
@database_options
def add_cmd(
    matchers: tuple[str, ...],
    author: str,
    comment: str,
    duration: str,
    database_url: str | None,
    config_path: Path | None,
) -> None:
    """Silence alerts matching all MATCHERS (name=value, name!=value, name=~regex, name!~regex)."""
    from alerts.silences import add_silence
    from migrations import prepare_for_writes
    from monitor.app.cli._common import engine_from_options
    from monitor.config import parse_duration
    from monitor.storage import transaction, utcnow

    try:
        length: timedelta = parse_duration(duration)
    except ValueError as exc:
        raise InputError(f"--duration: {exc}") from None
    engine = engine_from_options(database_url, config_path)
    prepare_for_writes(engine)
    with transaction(engine) as session:
        s = add_silence(
            session, list(matchers), author=author, comment=comment, duration=length, now=utcnow()
        )
    click.echo(f"silence {s.id} until {s.ends_at.isoformat()}: {', '.join(map(str, s.matchers))}")


@silences.command("list")
@database_options
@click.option("--all", "include_expired", is_flag=True, help="Include expired silences.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def silences_list_cmd(
    database_url: str | None, config_path: Path | None, include_expired: bool, as_json: bool
) -> None:
    """Silences that are active (or all with --all)."""
    from alerts.silences import list_silences
    from migrations import require_head
    from monitor.app.cli._common import engine_from_options
    from monitor.storage import transaction, utcnow

    engine = engine_from_options(database_url, config_path)
    require_head(engine)
    with transaction(engine) as session:
        found = list_silences(session, utcnow(), include_expired=include_expired)
    data: list[dict[str, Any]] = [
        {
            "id": s.id,
            "matchers": [str(m) for m in s.matchers],
            "author": s.author,
            "comment": s.comment,
            "starts_at": s.starts_at.isoformat(),
            "ends_at": s.ends_at.isoformat(),
        }
        for s in found
    ]
    if as_json:
        _echo_json(data)
        return
    header = ("id", "matchers", "starts_at", "ends_at", "author", "comment")
    echo_table(header, [[d[k] for k in header] for d in data], "no silences")


@silences.command("expire")
@click.argument("silence_id", type=int)
@database_options
def expire_cmd(silence_id: int, database_url: str | None, config_path: Path | None) -> None:
    """End silence SILENCE_ID now."""
    from alerts.silences import expire_silence
    from migrations import require_head
    from monitor.app.cli._common import engine_from_options
    from monitor.storage import transaction, utcnow

    engine = engine_from_options(database_url, config_path)
    require_head(engine)
    with transaction(engine) as session:
        s = expire_silence(session, silence_id, utcnow())
    click.echo(f"silence {s.id} expired at {s.ends_at.isoformat()}")
