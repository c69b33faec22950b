"""Scheduled golden replay: which versions a run replays, the replay itself in a worker process
with a hard deadline, and whether a verdict diverges from an earlier pass on the same content.

A replay loads two ONNX models and runs the whole golden set. In the daemon's process it would
take turns with the API's event loop on one interpreter lock, and nothing could stop it at its
time budget. So each replay runs in a spawned process at a lower CPU priority (`REPLAY_NICE`,
and SCHED_IDLE on Linux): when ingest and a replay both want the CPU, ingest goes first. A
process still running at the deadline is killed — the budget is a bound, not a hope — and the
replay is a failed item. The process's log records go through the daemon's logging
(`monitor.common.childlog`).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from guards import registry
from guards._request import gate_request
from guards.gate import run_gate
from guards.golden import sha256_file
from guards.results import GuardVerdict
from monitor.common.childlog import ChildLog, LogRelay
from monitor.common.children import watch_parent
from monitor.common.lowpriority import pack, run_niced
from monitor.config import GuardsConfig
from monitor.config.guards import GoldenSetConfig
from monitor.errors import ConflictError, InputError, ModelwatchError
from monitor.storage import GateRun, ModelVersion, transaction

# The replay process's CPU priority below the daemon's (Unix nice increment); on Linux it also
# runs under SCHED_IDLE, so a waking API or drain thread always preempts it.
REPLAY_NICE = 10
# How often a waiting parent looks at its stop flag.
POLL_S = 0.2
# What `run.trigger` says in a scheduled replay's verdict document.
SCHEDULE_TRIGGER = "schedule"


@dataclass(frozen=True)
class ReplaySpec:
    """One replay, as sent to the worker process (files by path: the worker reads them)."""

    model: str
    version: str
    reference: Path
    candidate: Path
    golden: GoldenSetConfig
    guards: GuardsConfig
    preset: Literal["fp32", "fp16", "int8"]
    overrides: tuple[Mapping[str, Any], ...] = ()
    latency: bool = False


@dataclass(frozen=True)
class Target:
    """A registered version to replay and the registered version it is compared with."""

    version: str
    active: bool
    candidate: Path
    candidate_sha256: str
    reference_version: str
    reference: Path
    reference_sha256: str


@dataclass(frozen=True)
class Divergence:
    """A non-passing replay of content that passed before (same reference, candidate and
    golden hashes, same preset): the hardware or runtime changed, not the model."""

    run_id: int
    previous_run_id: int
    providers: Mapping[str, Any] = field(default_factory=dict)
    previous_providers: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "previous_run_id": self.previous_run_id,
            "providers": dict(self.providers),
            "previous_providers": dict(self.previous_providers),
        }


def check_golden(entry: GoldenSetConfig) -> str:
    """The golden file's sha256; InputError naming the file when it is missing, unreadable or
    not the configured content (`sha256`)."""
    path = Path(entry.path)
    try:
        actual = sha256_file(path)
    except OSError as exc:
        what = "not found" if isinstance(exc, FileNotFoundError) else "cannot be read"
        raise InputError(f"{path}: golden set {what} ({exc.strerror or exc})") from None
    if entry.sha256 is not None and actual != entry.sha256:
        raise InputError(
            f"{path}: golden set sha256 {actual} does not match the configured {entry.sha256}; "
            "the file changed"
        )
    return actual


def targets(
    engine: Engine,
    model: str,
    which: Literal["active", "candidates"],
    reference_version: str | None,
    limit: int,
) -> list[Target]:
    """The versions a run replays: the active one, then (`candidates`) registered versions
    newer than it, newest first, `limit` in all. Files are not read here."""
    with transaction(engine) as session:
        row = registry.find_model(session, model)
        active = registry.alias(session, row, "active")
        if active is None:
            raise ConflictError(f"model {model!r} has no active version to replay")
        chosen = [active]
        if which == "candidates":
            newer = [v for v in row.versions if v.id > active.id]
            chosen += sorted(newer, key=lambda v: v.id, reverse=True)
        return [_target(session, row, v, v.id == active.id, reference_version)
                for v in chosen[:limit]]  # fmt: skip


def _target(
    session: Session, row: Any, mv: ModelVersion, active: bool, reference_version: str | None
) -> Target:
    ref = _reference(session, row, mv, reference_version)
    for v in (mv, ref):
        if v.artifact_uri is None or v.artifact_sha256 is None:
            raise ConflictError(
                f"model {row.name!r} version {v.version!r} has no registered artifact"
            )
    return Target(
        mv.version, active, Path(mv.artifact_uri or ""), mv.artifact_sha256 or "",
        ref.version, Path(ref.artifact_uri or ""), ref.artifact_sha256 or "",
    )  # fmt: skip


def _reference(session: Session, row: Any, mv: ModelVersion, version: str | None) -> ModelVersion:
    if version is not None:
        return registry.find_version(session, row, version)
    options = (registry.alias(session, row, a) for a in ("last_known_good", "active"))
    chosen = next((v for v in options if v is not None and v.id != mv.id), None)
    if chosen is None:
        raise ConflictError(
            f"model {row.name!r} has no last-known-good or active version other than "
            f"{mv.version!r} to compare with; set guards.schedule.{row.name}.reference_version"
        )
    return chosen


def check_artifacts(model: str, target: Target) -> None:
    """Both files hold their registered content (ArtifactMismatchError naming the file)."""
    registry.check_artifact(model, target.reference_version, target.reference,
                            target.reference_sha256)  # fmt: skip
    registry.check_artifact(model, target.version, target.candidate, target.candidate_sha256)


def replay(
    spec: ReplaySpec, budget_s: float, stop: Callable[[], bool] = lambda: False
) -> GuardVerdict:
    """Run the gate of `spec` in a spawned, lower-priority process and return its verdict.

    TimeoutError once `budget_s` seconds pass (the process is killed), also when `stop()`
    turns true; the worker's own errors come back as they were raised (InputError naming a
    file, ...), anything unexpected as a RuntimeError with its type and message.
    """
    ctx = multiprocessing.get_context("spawn")
    with LogRelay(ctx) as relay:
        return _replay(ctx, spec, budget_s, stop, relay)


def _replay(
    ctx: Any, spec: ReplaySpec, budget_s: float, stop: Callable[[], bool], relay: LogRelay
) -> GuardVerdict:
    receive, send = ctx.Pipe(duplex=False)
    args = (REPLAY_NICE, True, pack(_worker, spec, os.getpid()), send, relay.child)
    process = ctx.Process(target=run_niced, args=args, name="guard-replay", daemon=True)
    process.start()
    send.close()
    relay.child_started()
    deadline = time.monotonic() + budget_s
    try:
        while not receive.poll(POLL_S):
            if stop():
                raise TimeoutError(f"replay of {spec.model} {spec.version}: the daemon stops")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"replay of {spec.model} {spec.version} exceeded its time budget of "
                    f"{budget_s:g}s and was stopped"
                )
            if not process.is_alive() and not receive.poll(0):
                break
        return _answer(spec, receive, process)
    finally:
        receive.close()
        if process.is_alive():
            process.kill()
        process.join(5)


def _answer(spec: ReplaySpec, receive: Any, process: Any) -> GuardVerdict:
    try:
        status, value = receive.recv()
    except EOFError:
        process.join(5)
        raise RuntimeError(
            f"replay of {spec.model} {spec.version}: its process exited "
            f"(code {process.exitcode}) without a verdict"
        ) from None
    if status == "ok":
        assert isinstance(value, GuardVerdict)
        return value
    raise value


def _worker(spec: ReplaySpec, parent: int, send: Any, log: ChildLog) -> None:
    """The replay process (niced by `run_niced` before this module was imported); its records
    go through the daemon's logging."""
    with log.relayed():
        watch_parent(parent)  # the daemon gone: nobody would read the verdict
        try:
            verdict = _run(spec)
        except ModelwatchError as exc:
            send.send(("error", exc))
        except Exception as exc:  # whatever onnxruntime raises; its text goes back, not its type
            send.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}".splitlines()[0])))
        else:
            send.send(("ok", verdict))
        send.close()


def _run(spec: ReplaySpec) -> GuardVerdict:
    import onnxruntime

    request = gate_request(
        spec.reference,
        spec.candidate,
        spec.golden,
        spec.guards,
        spec.preset,
        spec.overrides,
        latency_batch_sizes=None if spec.latency else (),
        output=spec.golden.output,
        model=spec.model,
        version=spec.version,
    )
    verdict = run_gate(request)
    run = {**verdict.run, "trigger": SCHEDULE_TRIGGER, "onnxruntime": onnxruntime.__version__}
    return replace(verdict, run=run)


def divergence(engine: Engine, run_id: int) -> Divergence | None:
    """For a stored run that did not pass: the newest earlier run on the same content
    (reference, candidate, golden sha256 and preset) that passed, if any."""
    with transaction(engine) as session:
        run = session.get(GateRun, run_id)
        if run is None or run.verdict == "pass":
            return None
        before = session.scalars(
            select(GateRun)
            .where(
                GateRun.model == run.model,
                GateRun.version == run.version,
                GateRun.id < run.id,
                GateRun.reference_sha256 == run.reference_sha256,
                GateRun.candidate_sha256 == run.candidate_sha256,
                GateRun.golden_sha256 == run.golden_sha256,
                GateRun.preset == run.preset,
                GateRun.verdict == "pass",
            )
            .order_by(GateRun.id.desc())
            .limit(1)
        ).first()
        if before is None:
            return None
        return Divergence(run.id, before.id, dict(run.providers), dict(before.providers))
