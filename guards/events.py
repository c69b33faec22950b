"""Rollback notifications through a small injectable protocol.

`guards` does not know how people are told. Whoever composes the application passes a
`RollbackListener`; it is called inside the transaction that moved the alias, with that
session, so an outbox row written by the listener commits (or rolls back) with the change.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from sqlalchemy.orm import Session


@dataclass(frozen=True)
class Rollback:
    """The `active` alias of `model` moved from one version to another."""

    event_id: int
    model: str
    from_version: str
    to_version: str
    reason: str
    gate_run_id: int | None
    created_at: datetime


class RollbackListener(Protocol):
    """Told about each rollback, inside the transaction that made it."""

    def __call__(self, session: Session, rollback: Rollback) -> None: ...


class CollectingListener:
    """A listener that keeps what it was told (the CLI prints these; tests read them)."""

    def __init__(self) -> None:
        self.rollbacks: list[Rollback] = []

    def __call__(self, session: Session, rollback: Rollback) -> None:
        self.rollbacks.append(rollback)
