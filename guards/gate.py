"""The gate: replay a golden set through reference and candidate, compare, and decide."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from guards import _latency as latency
from guards._artifact import Artifact, read_artifact
from guards._compare import Elementwise, compare_output
from guards._criteria import Evidence, Slice, evaluate
from guards._feeds import build_feeds, check_comparable
from guards._outputs import check_supported, comparable, is_class_output
from guards._runtime import open_session, run_batched, select_providers, session_options, signature
from guards._tasks import Task, detect_task
from guards.golden import GoldenSet, sha256_file
from guards.localize import Localization, LocalizeJob, localize
from guards.policy import GatePolicy
from guards.results import (
    Criterion,
    GuardVerdict,
    LatencyStats,
    OutputStats,
    Status,
    WorstRow,
    overall_status,
)
from monitor.errors import InputError, ModelwatchError, SchemaMismatchError

MAX_SLICE_VALUES = 100


@dataclass(frozen=True)
class GateRequest:
    """What to compare, on which rows, under which policy and runtime settings."""

    reference: Path
    candidate: Path
    golden: GoldenSet
    policy: GatePolicy
    output: str | None = None
    providers: tuple[str, ...] | None = None
    batch_size: int = 4096
    latency_batch_sizes: tuple[int, ...] = (1, 64)
    intra_op_threads: int = 0
    worst_rows: int = 10
    # Only named in the report: which registered model and version the candidate is.
    model: str | None = None
    version: str | None = None
    # Layer localisation (guards.localize): never, when the verdict is fail, or always.
    localize: Literal["never", "on_fail", "always"] = "never"
    localize_budget_s: float = 30.0
    localize_rows: int = 2048

    def __post_init__(self) -> None:
        if self.batch_size < 1 or any(b < 1 for b in self.latency_batch_sizes):
            raise InputError("batch sizes must be >= 1")
        if self.localize_budget_s <= 0 or self.localize_rows < 1:
            raise InputError("localisation budget must be > 0 and its rows >= 1")


# The reference's and the candidate's files, each read once (`guards._artifact`).
Loaded = tuple[Artifact, Artifact]


@dataclass(frozen=True)
class _Sessions:
    reference: Any
    candidate: Any
    feeds: dict[str, np.ndarray]
    loaded: Loaded


def run_gate(request: GateRequest, loaded: Loaded | None = None) -> GuardVerdict:
    """Run the gate and return its verdict (nothing is written anywhere).

    Each model file is read once, here or by the caller (`loaded`, e.g. after checking the bytes
    against a registered hash); sessions, localisation and the report's sha256 use those bytes.
    """
    clock: dict[str, float] = {}
    with _timed(clock, "load_s"):
        sessions = _open(request, loaded)
    with _timed(clock, "inference_s"):
        ref_out = run_batched(sessions.reference, sessions.feeds, request.batch_size)
        cand_out = run_batched(sessions.candidate, sessions.feeds, request.batch_size)
    with _timed(clock, "compare_s"):
        judged = judge(request, ref_out, cand_out)
    with _timed(clock, "latency_s"):
        lat = _latency(request, sessions)
    criteria = (*judged.criteria, *_latency_criteria(request.policy, lat))
    verdict = overall_status(criteria)
    with _timed(clock, "localize_s"):
        where = _localize(request, sessions, criteria, verdict)
    return GuardVerdict(
        verdict=verdict,
        preset=request.policy.name,
        rows=request.golden.rows,
        providers={
            "reference": tuple(sessions.reference.get_providers()),
            "candidate": tuple(sessions.candidate.get_providers()),
        },
        criteria=criteria,
        outputs=judged.outputs,
        latency=lat,
        worst_rows=judged.worst_rows,
        timing=clock,
        localization=where,
        run=run_info(request, sessions.loaded),
    )


def run_info(request: GateRequest, loaded: Loaded | None = None) -> dict[str, Any]:
    """Model, version, UTC time and each artifact's file name and sha256, for the report
    (the models' from `loaded`, the bytes the run used, when given)."""
    golden = request.golden
    ref_sha, cand_sha = (
        (loaded[0].sha256, loaded[1].sha256)
        if loaded is not None
        else (sha256_file(request.reference), sha256_file(request.candidate))
    )
    return {
        "model": request.model,
        "version": request.version,
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "artifacts": {
            "reference": {"name": request.reference.name, "sha256": ref_sha},
            "candidate": {"name": request.candidate.name, "sha256": cand_sha},
            "golden": {
                "name": golden.path.name,
                "sha256": sha256_file(golden.path),
                "rows": golden.rows,
            },
        },
    }


@dataclass(frozen=True)
class Judgement:
    """Criteria, output statistics and worst rows from the two models' outputs."""

    criteria: tuple[Criterion, ...]
    outputs: Mapping[str, OutputStats]
    worst_rows: tuple[WorstRow, ...]


def judge(
    request: GateRequest, ref: Mapping[str, np.ndarray], cand: Mapping[str, np.ndarray]
) -> Judgement:
    """The gate's own work after inference: comparison, task criteria, worst rows."""
    evidence = _evidence(request, ref, cand)
    return Judgement(
        criteria=evaluate(request.policy, evidence),
        outputs={name: cmp.stats for name, cmp in evidence.elementwise.items()},
        worst_rows=_worst_rows(request, evidence),
    )


class _timed:
    def __init__(self, clock: dict[str, float], key: str) -> None:
        self.clock, self.key = clock, key

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.clock[self.key] = time.perf_counter() - self.start


def _open(request: GateRequest, loaded: Loaded | None) -> _Sessions:
    loaded = loaded or (read_artifact(request.reference), read_artifact(request.candidate))
    providers = select_providers(request.providers)
    opts = session_options(request.intra_op_threads)
    ref, cand = (open_session(a.path, providers, opts, a.data) for a in loaded)
    ref_sig = signature(ref)
    check_comparable(ref_sig, signature(cand))
    check_supported(ref_sig.outputs)
    return _Sessions(ref, cand, build_feeds(request.golden, ref_sig), loaded)


def _evidence(
    request: GateRequest, ref: Mapping[str, np.ndarray], cand: Mapping[str, np.ndarray]
) -> Evidence:
    policy = request.policy
    ref, cand = comparable(ref, cand)
    elementwise: dict[str, Elementwise] = {}
    for name in ref:
        if ref[name].shape != cand[name].shape:
            raise SchemaMismatchError(
                f"output {name!r}: reference shape {ref[name].shape} "
                f"but candidate shape {cand[name].shape}"
            )
        if not is_class_output(ref[name]):  # class ids agree or flip; they have no distance
            elementwise[name] = compare_output(
                ref[name], cand[name], policy.atol or 0.0, policy.rtol
            )
    out = _task_output(request, ref)
    task = detect_task(out, ref[out], cand[out], policy.decision_threshold)
    labels = _labels(request.golden, task)
    # Other class outputs (the label beside a ZipMap, heads of a multi-output model) are
    # judged by their flips too.
    extra = tuple(
        detect_task(name, ref[name], cand[name], policy.decision_threshold)
        for name in ref
        if name != out and is_class_output(ref[name])
    )
    return Evidence(elementwise, task, labels, tuple(_slices(request.golden)), extra)


def _task_output(request: GateRequest, outputs: Mapping[str, np.ndarray]) -> str:
    """`--output`, else the first class-score output, else the first class output or any."""
    names = list(outputs)
    if request.output is None:
        kinds = {n: detect_task(n, outputs[n], outputs[n], 0.5).kind for n in names}
        for wanted in (("scores", "binary"), ("labels",)):
            found = [n for n in names if kinds[n] in wanted]
            if found:
                return found[0]
        return names[0]
    if request.output not in names:
        raise InputError(
            f"--output {request.output!r} is not a model output; outputs: {', '.join(names)}"
        )
    return request.output


def _labels(golden: GoldenSet, task: Task) -> np.ndarray | None:
    from pandas.api.types import is_numeric_dtype

    if golden.label_column is None or not task.metrics:
        return None
    column = golden.frame[golden.label_column]
    if not is_numeric_dtype(column):
        raise InputError(f"{golden.path}: label column {golden.label_column!r} is not numeric")
    values = column.to_numpy()
    if task.kind == "regression":
        return np.asarray(values, dtype=np.float64)
    classes = 2 if task.kind == "binary" else _classes(task)
    if not np.all(np.mod(values, 1) == 0) or values.min() < 0 or values.max() >= classes:
        raise InputError(
            f"{golden.path}: label column {golden.label_column!r} must hold class indices "
            f"0..{classes - 1} for output {task.output!r}"
        )
    return np.asarray(values, dtype=np.int64)


def _classes(task: Task) -> int:
    if task.kind == "scores":
        return int(task.reference.shape[1])
    return int(max(task.reference.max(), task.candidate.max())) + 1  # labels output


def _slices(golden: GoldenSet) -> Iterator[Slice]:
    import pandas as pd

    yield Slice(None, np.arange(golden.rows))
    for col in golden.slice_columns:
        codes, values = pd.factorize(golden.frame[col], sort=True)
        if (codes < 0).any():  # missing values form their own slice, after the others
            codes = np.where(codes < 0, len(values), codes)
            values = [*values, "null"]
        if len(values) > MAX_SLICE_VALUES:
            raise InputError(
                f"{golden.path}: slice column {col!r} has {len(values)} values; "
                f"at most {MAX_SLICE_VALUES} (slice by a bounded category)"
            )
        order = np.argsort(codes, kind="stable")
        bounds = np.cumsum(np.bincount(codes, minlength=len(values)))[:-1]
        for value, rows in zip(values, np.split(order, bounds), strict=True):
            yield Slice({col: str(value)}, rows)


def _worst_rows(request: GateRequest, evidence: Evidence) -> tuple[WorstRow, ...]:
    golden = request.golden
    rows = [e.row_max_abs for e in evidence.elementwise.values()]
    score = np.max(np.vstack(rows), axis=0) if rows else np.zeros(golden.rows)
    flips = _any_flips(evidence)
    # Rows where the models agree exactly are not "worst"; a flip always is.
    differing = int(np.count_nonzero((score > 0) | (flips if flips is not None else False)))
    k = min(request.worst_rows, differing)
    if k == 0:
        return ()
    rank = score if flips is None else np.where(flips, np.inf, score)  # a flip ranks first
    top = np.argpartition(-rank, k - 1)[:k]
    top = top[np.argsort(-rank[top], kind="stable")]
    ids = golden.ids()
    return tuple(
        WorstRow(
            id=_plain_id(ids[i]),
            slice={c: str(golden.frame[c].iat[i]) for c in golden.slice_columns},
            max_abs=float(score[i]),
            flip=bool(flips[i]) if flips is not None else False,
        )
        for i in top
    )


def _localize(
    request: GateRequest, sessions: _Sessions, criteria: Sequence[Criterion], verdict: Status
) -> Localization | None:
    """Where the candidate diverges, on the first failing slice's rows first; never raises."""
    if request.localize == "never" or (request.localize == "on_fail" and verdict != "fail"):
        return None
    key = next((c.slice for c in criteria if c.status == "fail" and c.slice), None)
    rows = next((s.rows for s in _slices(request.golden) if key and s.key == key), None)
    job = LocalizeJob(
        reference=request.reference,
        candidate=request.candidate,
        feeds=sessions.feeds,
        providers=sessions.reference.get_providers(),
        options=session_options(request.intra_op_threads),
        tolerance=request.policy.localize_tolerance,
        budget_s=request.localize_budget_s,
        max_rows=request.localize_rows,
        slice_key=key,
        slice_rows=rows,
        reference_data=sessions.loaded[0].data,
        candidate_data=sessions.loaded[1].data,
    )
    start = time.perf_counter()
    try:
        return localize(job)
    except ModelwatchError as exc:  # the verdict stands; the report says why no localisation
        seconds = time.perf_counter() - start
        return Localization.failed(str(exc), seconds, job.tolerance)


def _any_flips(evidence: Evidence) -> np.ndarray | None:
    """Per row: did any judged class output flip."""
    tasks = [t for t in (evidence.task, *evidence.extra) if t is not None]
    found = [f for f in (t.flips() for t in tasks) if f is not None]
    return np.logical_or.reduce(found) if found else None


def _plain_id(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _latency(request: GateRequest, sessions: _Sessions) -> dict[str, tuple[LatencyStats, ...]]:
    sizes = request.latency_batch_sizes
    if not sizes:
        return {}
    return {
        "reference": latency.measure(sessions.reference, sessions.feeds, sizes),
        "candidate": latency.measure(sessions.candidate, sessions.feeds, sizes),
    }


def _latency_criteria(
    policy: GatePolicy, lat: Mapping[str, tuple[LatencyStats, ...]]
) -> tuple[Criterion, ...]:
    if not lat:
        return ()
    ref, cand = lat["reference"][-1], lat["candidate"][-1]
    out: list[Criterion] = []
    if policy.latency_budget_ms is not None:
        limit = policy.latency_budget_ms
        status: Status = "pass" if cand.p95_ms <= limit else "fail"
        name = f"latency_p95_ms[batch={cand.batch_size}]"
        out.append(Criterion(name, cand.p95_ms, limit, status, unit="ms", candidate=cand.p95_ms))
    if policy.max_latency_ratio is not None:
        ratio, limit = cand.p95_ms / ref.p95_ms, policy.max_latency_ratio
        status = "pass" if ratio <= limit else "fail"
        name = f"latency_ratio_p95[batch={cand.batch_size}]"
        out.append(
            Criterion(
                name, ratio, limit, status, unit="x", reference=ref.p95_ms, candidate=cand.p95_ms
            )
        )
    return tuple(out)
