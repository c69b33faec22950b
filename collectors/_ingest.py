"""The ingest pipeline: decode → validate → window → aggregate → commit, exactly once.

:class:`Ingestor` is the one entry point every source uses (Kafka, log files, and the daemon's
`POST /v1/events`): hand it raw payloads with their positions, it commits aggregates, counters,
dead letters, the label join and the new positions in one transaction, retrying through database
outages with bounded backoff.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session

from collectors._adapters import make_adapter
from collectors._base import Batch, BatchResult, RawRecord
from collectors._cardinality import StoredNames
from collectors._join import join_labels
from collectors._pairing import store_halves, stored_half
from collectors._pairs import pair_shadow, primary_only
from collectors._plan import KeyState, Plan, Planner
from collectors._profiling import ProfileBackend, default_backend
from collectors._rooms import WaitingRooms
from collectors._serving_store import merge_serving
from collectors._specs import SpecResolver, kind_mismatches, profile_builder
from collectors._store import (
    StalePlan,
    bump_counters,
    check_positions,
    dead_letter_rows,
    ensure_counter,
    mark_windows,
    merge_counts,
    merge_profiles,
    read_states,
    store_dead_letters,
    write_positions,
)
from monitor.common.collection import collector_paused
from monitor.config import CollectConfig, ModelConfig
from monitor.errors import ConfigError, StorageError
from monitor.storage import transaction

log = logging.getLogger(__name__)
# Work a source does inside a batch's transaction (see Ingestor.ingest).
Within = Callable[[Session], None]
# Reads a batch inside its transaction (`Ingestor.ingest_claimed`): records and the work to do
# within the transaction, or None when there is nothing to read.
Claim = Callable[[Session], tuple[Batch, Within | None] | None]
# Replans of a batch whose insert met a row another writer created at the same moment.
CONFLICT_RETRIES = 3


class Ingestor:
    """Exactly-once ingest of one source's records into the database.

    `source` names the source in counters, positions and dead letters; `format` picks the
    adapter. Positions are per key (Kafka "topic:partition", a file's fingerprint, or any name a
    caller like the HTTP endpoint chooses) and a record is applied only if it starts at or past
    the stored position of its key.
    """

    def __init__(
        self,
        engine: Engine,
        source: str,
        source_type: str,
        models: Sequence[ModelConfig],
        settings: CollectConfig | None = None,
        format: str = "modelwatch",
        format_options: Mapping[str, Any] | None = None,
        backend: ProfileBackend | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not models:
            raise ConfigError(f"source {source!r}: no models configured; add them under `models`")
        self.engine = engine
        self.source = source
        self.settings = settings or CollectConfig()
        self.models = {m.name: m for m in models}
        self.backend = backend or default_backend()
        baselines = {m.name: m.drift.baseline for m in models}
        self.specs = SpecResolver(engine, self.backend, baselines)
        self.planner = Planner(
            make_adapter(format, format_options),
            self.models,
            self.settings.window.total_seconds(),
            self.settings.allowed_lateness.total_seconds(),
            self.settings.max_payload_bytes,
            functools.partial(stored_half, engine, source),
            max_future_s=self.settings.max_future_skew.total_seconds(),
            settings=self.settings,
            stored=StoredNames(engine, self._with_retries),
        )
        self._states: dict[str, KeyState] = {}
        # Per model, the cutoff its waiting rooms were last emptied to (collectors._join).
        self._expired: dict[str, float] = {}
        # The index of the waiting rooms, kept in step with committed batches.
        self._rooms = WaitingRooms()
        # The expiry cutoffs of a batch stored in a caller's transaction, kept once it commits.
        self._staged_expired: dict[str, float] = {}
        # Windows the last stored batch touched (the intake drain lingers by it).
        self.last_windows = 0
        self._shadow = any(m.shadow is not None for m in models)  # paired shadow mode
        self.sleep = sleep
        self._with_retries(lambda: self._setup(source_type))

    def _setup(self, source_type: str) -> None:
        with transaction(self.engine) as session:
            ensure_counter(session, self.source, source_type)

    def warm_up(self) -> None:
        """Import what profiling needs before the first batch arrives (a worker's start)."""
        self.backend.warm_up()

    def positions(self, keys: Sequence[str]) -> dict[str, int]:
        """Stored next offsets of `keys` (0 when never seen), refreshed from the database."""

        def load() -> dict[str, KeyState]:
            with Session(self.engine) as session:
                return read_states(session, self.source, keys, lock=False)

        stored = self._with_retries(load)
        self._states.update(stored)
        return {k: s.offset for k, s in stored.items()}

    def position(self, key: str) -> int:
        """The next offset of `key` this ingestor applies (read once, then kept as it commits)."""
        state = self._states.get(key)
        return state.offset if state is not None else self.positions([key])[key]

    def forget(self, key: str) -> None:
        """Drop `key`'s remembered position (read again if it comes back); keeps memory flat."""
        self._states.pop(key, None)

    def ingest(
        self, records: Sequence[RawRecord] | Batch, within: Within | None = None
    ) -> BatchResult:
        """Decode, validate, aggregate and commit `records` (with positions) in one transaction.

        `within(session)` runs inside that transaction, before the positions are written: a
        source that must consume its input with the batch (the HTTP intake log) does it there,
        and an exception it raises rolls the whole batch back.
        """
        with collector_paused():
            result, plan = self._ingest(records, within, None)
            self._states.update(plan.end)
            return result

    def ingest_claimed(self, claim: Claim) -> BatchResult | None:
        """Like `ingest`, for a batch that `claim(session)` reads inside the batch's own
        transaction, before anything else: the HTTP intake drain locks its pending rows there
        (`FOR UPDATE SKIP LOCKED` on PostgreSQL), so replicas' drains take disjoint rows and
        none reads rows another is aggregating. `claim` returns the records and the work to do
        within the transaction, or None (nothing to do: the transaction ends, None is
        returned). Each attempt at storing the batch runs in a savepoint: a stale plan or an
        insert conflict is rolled back to it and replanned while the claimed rows stay locked.
        """

        def run() -> BatchResult | None:
            committed = False
            try:
                with transaction(self.engine) as session:
                    claimed = claim(session)
                    if claimed is None:
                        return None
                    records, within = claimed
                    result, plan = self._ingest(records, within, session)
                committed = True
            finally:
                # What the batch staged in the rooms' index counts only once the whole
                # transaction committed (a failed attempt already dropped its own).
                if committed:
                    self._rooms.commit()
                else:
                    self._rooms.rollback()
            self._states.update(plan.end)
            self._expired = self._staged_expired
            return result

        with collector_paused():
            return self._with_retries(run)  # type: ignore[no-any-return]

    def _ingest(
        self,
        records: Sequence[RawRecord] | Batch,
        within: Within | None,
        outer: Session | None,
    ) -> tuple[BatchResult, Plan]:
        batch = records if isinstance(records, Batch) else Batch(records)
        missing = sorted({r.key for r in batch.records} - set(self._states))
        if missing:
            self.positions(missing)
        plan = self._plan(batch)
        conflicts = 0
        while True:
            retry = conflicts < CONFLICT_RETRIES
            commit = functools.partial(self._commit, plan, batch, retry, within, outer)
            try:
                # In the caller's transaction, an outage ends it: the caller retries it whole.
                labels = commit() if outer is not None else self._with_retries(commit)
            except StalePlan as stale:
                conflicts += 1
                log.info(
                    "%s: stored positions or windows moved; planning the batch again", self.source
                )
                self._states.update(stale.stored)
                plan = self._plan(batch)
                continue
            result = BatchResult(plan.events, labels, len(plan.dead), plan.late, plan.skipped)
            self.last_windows = len(plan.windows)
            return result, plan

    def _plan(self, batch: Batch) -> Plan:
        plan = self.planner.plan_chunked(batch.records, self._states)
        rejected = kind_mismatches(plan, self.specs)
        if rejected:
            plan = self.planner.plan_chunked(batch.records, self._states, rejected)
        return plan

    def _commit(
        self,
        plan: Plan,
        batch: Batch,
        retry_conflict: bool = False,
        within: Within | None = None,
        outer: Session | None = None,
    ) -> int:
        """Store the batch in one transaction, or in a savepoint of `outer` (the caller's
        transaction, which commits it: the rooms' index and the expiry cutoffs are then kept
        staged for `ingest_claimed`)."""
        build = profile_builder(plan.windows, self.specs)
        dead = dead_letter_rows(self.source, plan.dead, self.settings.dead_letter_bytes)
        window_s = self.settings.window.total_seconds()
        horizon = self.settings.label_horizon.total_seconds()
        expired = dict(self._expired)  # kept only if the batch commits
        committed = False
        try:
            with self._attempt(outer) as session:
                bump_counters(session, self.source, plan, len(plan.labels))
                check_positions(session, self.source, plan)
                merge_profiles(
                    session, plan.windows, build, self.backend, window_s, self.specs.forget
                )
                merge_counts(session, plan, window_s, self.models)
                merge_serving(session, plan, window_s)
                mark_windows(session, plan, window_s)
                store_dead_letters(session, dead)
                if self.settings.join_labels and (plan.events or plan.labels):
                    join_labels(
                        session,
                        primary_only(plan.table),
                        plan.labels,
                        self.models,
                        horizon,
                        window_s,
                        self.settings.keep_joined_rows,
                        expired,
                        self._rooms,
                    )
                if self._shadow and (plan.events or plan.labels):
                    pair_shadow(
                        session, plan.table, plan.labels, self.models, self.planner.slices,
                        window_s, horizon, self.settings.join_labels,
                    )  # fmt: skip
                if plan.open_halves or plan.used_halves:
                    store_halves(session, self.source, plan, horizon)
                if within is not None:
                    within(session)
                write_positions(session, self.source, plan, batch.ends, batch.details)
            committed = True
        except IntegrityError as exc:
            # A concurrent consumer inserted the same rows first: replan from what it stored.
            if outer is not None:
                stored = read_states(outer, self.source, plan.end, lock=False)
            else:
                with Session(self.engine) as session:
                    stored = read_states(session, self.source, plan.end, lock=False)
            if any(stored[k].offset != plan.start.get(k, KeyState()).offset for k in stored):
                raise StalePlan(stored) from None
            if retry_conflict:
                # Another source or replica inserted the same window row first; once it has
                # committed, the replanned batch finds the row and merges into it.
                raise StalePlan(stored) from None
            # Still conflicting after retries: not a race, and replanning would repeat it.
            first = str(exc.orig or exc).splitlines()[0]
            raise StorageError(f"source {self.source!r}: cannot store batch: {first}") from None
        finally:
            # The rooms' index follows the transaction: what it staged counts only if it committed
            # (in `outer`, once that commits: `ingest_claimed`).
            if not committed:
                self._rooms.rollback()
            elif outer is None:
                self._rooms.commit()
        if outer is None:
            self._expired = expired
        else:
            self._staged_expired = expired
        return len(plan.labels)

    @contextmanager
    def _attempt(self, outer: Session | None) -> Iterator[Session]:
        """The transaction one attempt stores a batch in: its own, or a savepoint of `outer`."""
        if outer is None:
            with transaction(self.engine) as session:
                yield session
        else:
            with outer.begin_nested():
                yield outer

    def _with_retries(self, action: Callable[[], Any]) -> Any:
        """Run `action`, retrying database outages with capped exponential backoff."""
        deadline = time.monotonic() + self.settings.db_retry_timeout.total_seconds()
        cap = self.settings.db_retry_backoff_max.total_seconds()
        delay = min(0.1, cap)
        while True:
            try:
                return action()
            except (OperationalError, DBAPIError) as exc:
                if isinstance(exc, IntegrityError):
                    raise
                if time.monotonic() + delay > deadline:
                    raise StorageError(
                        f"source {self.source!r}: database unavailable for "
                        f"{self.settings.db_retry_timeout}: {str(exc.orig or exc).splitlines()[0]}"
                    ) from None
                log.warning(
                    "%s: database error, retrying in %.1fs: %s",
                    self.source,
                    delay,
                    str(exc.orig or exc).splitlines()[0],
                )
                self.sleep(delay)
                delay = min(delay * 2, cap)
