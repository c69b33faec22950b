"""Estimation cost: what CBPE and multivariate drift add to ingest (µs/event) and what a window
evaluation costs, next to the floor they ride on (profiling the same batch of events, as ingest
does) and the peer (NannyML's CBPE and DataReconstructionDriftCalculator on the same chunk).

    PYTHONPATH=. python bench/estimation.py [--events 100000] [--window 5000] [--repeat 5]
    PYTHONPATH=. python bench/estimation.py --ingest [--events 20000] [--repeat 3] [--classes K]
    PYTHONPATH=. python bench/estimation.py --join [--events 20000] [--repeat 5] [--classes 3]
    PYTHONPATH=. python bench/estimation.py --regression [--events 20000] [--window 5000]

`--ingest` runs the collectors' real ingest (decode, validate, window, profile per slice, commit
to SQLite) of the same events twice per round, against a baseline with and without a calibration
and a PCA model stored, so the difference is what deriving and profiling `__cbpe_score` and
`__pca_error` adds per event; then the evaluate job's estimation step per window.

(OPENBLAS_NUM_THREADS=1 for a steadier reading on a loaded machine: the reconstruction's matmul
is small and a threaded BLAS mostly waits for busy cores.)

Events have 20 features (16 numeric, 4 categorical), a score and a label; with `--classes K`
(K ≥ 2) a multiclass model instead: the prediction is `{"output": [p_0, ..., p_{K-1}]}` and the
baseline stores a per-class calibration (`__cbpe_score.<k>` and `__cbpe_predicted` derived).

`--join` times the label join's summary step (`summarize_pairs`, overall and 3 regions) of
K-class joined pairs whose predictions are class-probability lists (class score histograms kept)
against the same pairs with label predictions (the matrix only), the stored payload sizes, the
merge of a stored payload with a batch's summary, and the realized macro ROC-AUC of a window.

`--regression` times direct loss estimation next to NannyML's DLE on the same data (20
features, a numeric prediction): fitting the loss models on the reference, estimating one
`--window`-row chunk, and what deriving each event's expected losses costs per event at ingest
(the same LightGBM models; the profile of the two loss columns is the ingest's own).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from monitor.config import parse_config
from monitor.estimation import (
    count_scores,
    estimate_metrics,
    fit_calibration,
    fit_reconstruction,
    reconstruction_errors,
)
from monitor.estimation._realized import summary_macro_auc
from monitor.outcomes.summary import summary_from_bytes, summary_to_bytes
from monitor.profiles import profile_frame, specs_for
from monitor.summaries import JoinedPairs, summarize_pairs

os.environ.setdefault("NML_DISABLE_USAGE_LOGGING", "1")
warnings.filterwarnings("ignore", module="nannyml")


def make_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cols: dict[str, Any] = {f"num{j}": rng.normal(j, 1 + j, n) for j in range(16)}
    cols.update({f"cat{j}": rng.choice(list("abcde"), n) for j in range(4)})
    p = rng.beta(0.7, 0.7, n)
    cols.update(y_pred_proba=p, y_pred=(p >= 0.5).astype(int), y=(rng.random(n) < p) * 1)
    return pd.DataFrame(cols)


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--window", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--ingest", action="store_true", help="ingest with derivation on vs off")
    ap.add_argument("--classes", type=int, default=0, help="--ingest: a K-class model (K >= 2)")
    ap.add_argument("--join", action="store_true", help="multiclass summaries with class scores")
    ap.add_argument("--regression", action="store_true", help="DLE next to NannyML's DLE")
    args = ap.parse_args()
    if args.regression:
        regression_main(args.events, args.window, args.repeat)
        return
    if args.join:
        join_main(args.events, args.repeat, args.classes or 3)
        return
    if args.ingest:
        global CLASSES
        CLASSES = args.classes
        ingest_main(args.events, args.repeat)
        return
    ref, cur = make_frame(args.events, 1), make_frame(args.events, 2)
    features = [c for c in ref.columns if c.startswith(("num", "cat"))]
    specs = specs_for([*features, "y_pred_proba"], ref)
    calibration = fit_calibration(ref["y_pred_proba"].to_numpy(float), ref["y"].to_numpy(float))
    model = fit_reconstruction(ref, features)
    scores, pred = cur["y_pred_proba"].to_numpy(float), cur["y_pred"].to_numpy(float)
    n = args.events

    profile = best(lambda: profile_frame(cur, specs), args.repeat)
    counts = best(lambda: count_scores(calibration, scores, pred), args.repeat)
    errors = best(lambda: reconstruction_errors(model, cur), args.repeat)
    arrays = {c: cur[c].to_numpy() for c in features}  # the column arrays ingest holds
    numpy_path = best(lambda: model.scorer.errors(arrays, n), args.repeat)
    window = count_scores(calibration, scores[: args.window], pred[: args.window])
    evaluate = best(lambda: estimate_metrics(calibration, window), args.repeat * 20)
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, python {platform.python_version()}"
    )
    print(f"floor: profiling {n} events x {len(specs)} columns: {profile / n * 1e6:.2f} µs/event")
    print(f"CBPE score counts at ingest: {counts / n * 1e6:.3f} µs/event "
          f"({counts / profile:.1%} of profiling)")  # fmt: skip
    print(f"reconstruction error at ingest: {errors / n * 1e6:.3f} µs/event "
          f"({errors / profile:.1%} of profiling)")  # fmt: skip
    print(f"  of which the numpy path from column arrays: {numpy_path / n * 1e6:.3f} µs/event "
          f"({numpy_path / profile:.1%} of profiling)")  # fmt: skip
    print(f"window evaluation (6 metrics from counts): {evaluate * 1e6:.0f} µs per window")
    _peer(ref, cur.iloc[: args.window], features, args.repeat, evaluate)


def _peer(ref: pd.DataFrame, chunk: pd.DataFrame, features: list[str], repeat: int,
          ours: float) -> None:  # fmt: skip
    import nannyml as nml

    cbpe = nml.CBPE(y_pred_proba="y_pred_proba", y_pred="y_pred", y_true="y",
                    metrics=["roc_auc", "accuracy", "precision", "recall", "f1", "specificity"],
                    chunk_number=1, problem_type="classification_binary").fit(ref)  # fmt: skip
    peer = best(lambda: cbpe.estimate(chunk), max(1, repeat // 2))
    print(f"NannyML CBPE estimate of one {len(chunk)}-row chunk: {peer * 1e3:.1f} ms "
          f"(ours from counts {peer / ours:,.0f}x faster)")  # fmt: skip
    drc = nml.DataReconstructionDriftCalculator(column_names=features, chunk_number=1).fit(ref)
    peer_mv = best(lambda: drc.calculate(chunk), max(1, repeat // 2))
    print(f"NannyML reconstruction drift of the chunk: {peer_mv * 1e3:.1f} ms")


def regression_main(n: int, window: int, repeat: int) -> None:
    """Fit, one chunk's estimate and the per-event derivation: ours and NannyML's DLE."""
    import nannyml as nml

    from monitor.estimation import (
        REGRESSION_METRICS,
        EstimateOptions,
        RegressionData,
        estimate_regression,
        fit_regression,
        loss_values,
    )

    ref, cur = make_frame(n, 1), make_frame(window, 2)
    features = [c for c in ref.columns if c.startswith(("num", "cat"))]
    categorical = [c for c in features if c.startswith("cat")]
    for frame in (ref, cur):  # a regression target and a prediction that misses it
        frame["target"] = frame["num1"] * 2 + frame["num2"] + (frame["cat0"] == "a") * 3
        frame["pred"] = frame["num1"] * 2 + frame["num2"] + np.random.default_rng(3).normal(
            0, 1 + (frame["cat1"] == "b") * 2, len(frame))  # fmt: skip

    def data(frame: pd.DataFrame) -> RegressionData:
        columns = {c: frame[c].to_numpy() for c in features}
        return RegressionData(
            columns, frame["pred"].to_numpy(float), frame["target"].to_numpy(float)
        )

    r, c = data(ref), data(cur)
    assert r.labels is not None
    fit = best(lambda: fit_regression(r.columns, categorical, r.prediction, r.labels), 1)
    model = fit_regression(r.columns, categorical, r.prediction, r.labels)
    how = EstimateOptions(None, REGRESSION_METRICS, thresholds={})
    none = data(cur.head(0))  # thresholds given: no reference rows to score
    estimate = best(lambda: estimate_regression(model, none, c, how), repeat)
    derive = best(lambda: loss_values(model, c.columns, c.prediction), repeat)
    dle = nml.DLE(feature_column_names=features, y_pred="pred", y_true="target",
                  metrics=["mae", "mse", "rmse"], chunk_number=1)  # fmt: skip
    peer_fit = best(lambda: dle.fit(ref), 1)
    peer = best(lambda: dle.estimate(cur), max(1, repeat // 2))
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, python {platform.python_version()}"
    )
    print(f"fit on {n} reference rows: ours {fit:.2f} s, NannyML DLE {peer_fit:.2f} s "
          "(NannyML also estimates the reference)")  # fmt: skip
    print(f"estimate of one {window}-row chunk (MAE, MSE, RMSE): ours {estimate * 1e3:.1f} ms, "
          f"NannyML {peer * 1e3:.1f} ms")  # fmt: skip
    print(f"expected losses at ingest: {derive / window * 1e6:.2f} µs/event")


BATCH = 5000
MODELS = [{"name": "fraud", "slices": ["region"]}]
CLASSES = 0  # --classes: 0 binary, K >= 2 a K-class model
CPU_SECONDS: list[tuple[bool, float]] = []  # (derive, process CPU seconds) per whole ingest


def _class_scores(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """CLASSES calibrated probabilities per row and a label drawn from them."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 1.5, (n, CLASSES))
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    label = (rng.random((n, 1)) > np.cumsum(p, axis=1)).sum(axis=1)
    return p, np.minimum(label, CLASSES - 1)


def _prediction(frame: pd.DataFrame) -> list[Any]:
    if not CLASSES:
        return list(frame["y_pred_proba"].tolist())
    return [{"output": row} for row in _class_scores(len(frame), 5)[0].tolist()]


def _events(frame: pd.DataFrame) -> list[Any]:
    """One prediction event per row (20 features, the score, a region), as raw records."""
    import orjson

    from collectors import RawRecord

    features = [c for c in frame.columns if c.startswith(("num", "cat"))]
    rows = frame[features].to_dict("records")
    scores = _prediction(frame)
    regions = np.random.default_rng(3).choice(["eu", "us", "apac"], len(frame)).tolist()
    t0 = 1_767_225_600
    docs = [
        {
            "request_id": f"r{i}",
            "model": "fraud",
            "model_version": "3",
            "timestamp": t0 + i * 0.05,
            "features": row,
            "prediction": score,
            "metadata": {"region": region},
        }
        for i, (row, score, region) in enumerate(zip(rows, scores, regions, strict=True))
    ]
    return [RawRecord("b", i, i + 1, orjson.dumps(d)) for i, d in enumerate(docs)]


def _database(ref: pd.DataFrame, derive: bool, path: str) -> Any:
    """A fresh SQLite database with a baseline of `ref` (with estimation models if `derive`)."""
    from migrations import upgrade
    from monitor.baselines.store import save_baseline
    from monitor.estimation import (
        MULTIVARIATE_KEY,
        SETTINGS_KEY,
        fit_stored,
        fit_stored_multiclass,
        fit_stored_multivariate,
    )
    from monitor.storage import make_engine

    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    features = [c for c in ref.columns if c.startswith(("num", "cat"))]
    frame = ref.rename(columns={"y_pred_proba": "prediction"})
    frame["region"] = np.random.default_rng(4).choice(["eu", "us", "apac"], len(frame))
    outputs = ["prediction"]
    if CLASSES:
        p, label = _class_scores(len(frame), 6)
        outputs = [f"prediction[{k}]" for k in range(CLASSES)]
        frame = frame.assign(**{c: p[:, k] for k, c in enumerate(outputs)}, y=label)
    profiles = profile_frame(frame, specs_for([*features, *outputs], frame), ["region"])
    settings: dict[str, Any] = {}
    if derive:
        classes = [str(k) for k in range(CLASSES)]
        stored = (
            fit_stored_multiclass([frame], classes, outputs, "y") if CLASSES
            else fit_stored([ref[["y_pred_proba", "y"]]], "y_pred_proba", "y")
        )  # fmt: skip
        settings[SETTINGS_KEY] = stored.to_dict()
        settings[MULTIVARIATE_KEY] = fit_stored_multivariate(ref, features).to_dict()
    save_baseline(engine, "fraud", "3", profiles, settings=settings)
    return engine


class ProfilingTimer:
    """Wraps the ingest's `profile_builder` (where derivation happens) and the builder it
    returns (where profiling happens) to time that stage."""

    def __init__(self) -> None:
        import collectors._ingest

        self.module = collectors._ingest
        self.build = collectors._ingest.profile_builder
        self.seconds = 0.0
        collectors._ingest.profile_builder = self  # type: ignore[assignment]

    def __call__(self, *args: Any) -> Any:
        return self._timed(self._timed(self.build)(*args))

    def _timed(self, fn: Any) -> Any:
        def timed(*args: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args)
            finally:
                self.seconds += time.perf_counter() - start

        return timed


def _ingest_once(
    ref: pd.DataFrame, records: list[Any], derive: bool, tmp: str, timer: ProfilingTimer
) -> tuple[float, float]:
    """Seconds to ingest `records` in batches of BATCH into a fresh database, and of those the
    seconds of the profiling stage."""
    from collectors import Ingestor
    from monitor.config import parse_config

    path = f"{tmp}/{'on' if derive else 'off'}-{time.monotonic_ns()}.db"
    engine = _database(ref, derive, path)
    config = parse_config({"database_url": f"sqlite:///{path}", "models": MODELS}, env={})
    ingestor = Ingestor(engine, "b", "http", config.models, config.collect)
    ingestor.warm_up()
    timer.seconds = 0.0
    start, start_cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(records), BATCH):
        ingestor.ingest(records[i : i + BATCH])
    took = time.perf_counter() - start
    CPU_SECONDS.append((derive, time.process_time() - start_cpu))
    engine.dispose()
    return took, timer.seconds


def _evaluate_once(ref: pd.DataFrame, records: list[Any], tmp: str) -> tuple[float, int]:
    """Seconds of the evaluate job's estimation step over the ingested windows, and windows."""
    from collectors import Ingestor
    from monitor.config import parse_config
    from monitor.estimation import estimate_changed
    from monitor.failures import Isolation
    from monitor.storage import pending_changes

    path = f"{tmp}/eval-{time.monotonic_ns()}.db"
    engine = _database(ref, True, path)
    config = parse_config({"database_url": f"sqlite:///{path}", "models": MODELS}, env={})
    ingestor = Ingestor(engine, "b", "http", config.models, config.collect)
    for i in range(0, len(records), BATCH):
        ingestor.ingest(records[i : i + BATCH])
    windows = len(pending_changes(engine, "fraud", "estimate"))
    start = time.perf_counter()
    estimate_changed(engine, config.models[0], Isolation(engine, "evaluate"))
    took = time.perf_counter() - start
    from sqlalchemy import select

    from monitor.storage import EstimatedResultRow, session_factory

    with session_factory(engine)() as session:
        metrics = sorted(set(session.scalars(select(EstimatedResultRow.metric))))
    print(f"estimated metrics stored: {', '.join(metrics)}")
    engine.dispose()
    return took, windows


def _stages(
    ref: pd.DataFrame, records: list[Any], tmp: str, rounds: int
) -> tuple[dict[bool, list[float]], dict[bool, list[float]]]:
    """Seconds of the profiling stage alone (`build_profiles` of a planned batch, derivation
    included) per round, off and on interleaved, each ingestor warmed by one ingest first (so
    specs and stored models are cached, as in a running collector)."""
    from collectors import Ingestor
    from collectors._specs import build_profiles
    from monitor.config import parse_config

    ingestors = {}
    for derive in (False, True):
        path = f"{tmp}/stage-{derive}-{time.monotonic_ns()}.db"
        engine = _database(ref, derive, path)
        config = parse_config({"database_url": f"sqlite:///{path}", "models": MODELS}, env={})
        ingestors[derive] = Ingestor(engine, "b", "http", config.models, config.collect)
        ingestors[derive].ingest(records[:BATCH])
    batch = records[BATCH : 2 * BATCH]
    out: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(rounds):
        for derive, ingestor in ingestors.items():
            plan = ingestor.planner.plan_chunked(batch, {})
            start, start_cpu = time.perf_counter(), time.process_time()
            build_profiles(plan.windows, ingestor.specs)
            out[derive].append((time.perf_counter() - start) / len(batch))
            cpu[derive].append((time.process_time() - start_cpu) / len(batch))
    return out, cpu


def ingest_main(n: int, repeat: int) -> None:
    """Ingest µs/event with derivation on vs off (interleaved rounds, order alternating, best of
    `repeat`), the profiling stage alone, and the evaluate job's estimation step."""
    import tempfile

    timer = ProfilingTimer()
    ref = make_frame(20_000, 1)
    records = _events(make_frame(n, 2))
    on: list[tuple[float, float]] = []
    off: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):  # alternate which goes first: no order effect
            for derive in (False, True) if i % 2 == 0 else (True, False):
                (on if derive else off).append(_ingest_once(ref, records, derive, tmp, timer))
        evaluate, windows = _evaluate_once(ref, records, tmp)
        stages, cpu = _stages(ref, records, tmp, 10 * repeat)
    load = os.getloadavg()
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, python "
        f"{platform.python_version()}, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )
    model = f"{CLASSES}-class" if CLASSES else "binary"
    print(f"ingest {n} events ({model}), batches of {BATCH}, SQLite, best of {repeat} (µs/event):")
    whole = min(r[0] for r in off) / n * 1e6
    for stage, k in (("whole ingest", 0), ("profiling stage", 1)):
        best_off = min(r[k] for r in off) / n * 1e6
        best_on = min(r[k] for r in on) / n * 1e6
        runs_off = ", ".join(f"{r[k] / n * 1e6:.1f}" for r in off)
        runs_on = ", ".join(f"{r[k] / n * 1e6:.1f}" for r in on)
        print(
            f"  {stage}: off {best_off:.2f} ({runs_off}); on {best_on:.2f} ({runs_on}); "
            f"added {best_on - best_off:.2f} ({(best_on - best_off) / whole:.1%} of ingest)"
        )
    off_s, on_s = (np.asarray(stages[k]) * 1e6 for k in (False, True))
    added = float(np.median(on_s) - np.median(off_s))
    print(f"profiling stage alone ({BATCH}-event batch, {len(off_s)} interleaved rounds, "
          f"µs/event): off median {np.median(off_s):.2f} (best {off_s.min():.2f}), on median "
          f"{np.median(on_s):.2f} (best {on_s.min():.2f}); added {added:.2f} = "
          f"{added / whole:.1%} of the whole ingest (best, off)")  # fmt: skip
    whole_cpu = {k: min(c for d, c in CPU_SECONDS if d == k) / n * 1e6 for k in (False, True)}
    print(f"  whole ingest, process CPU time (best): off {whole_cpu[False]:.2f}, on "
          f"{whole_cpu[True]:.2f} µs/event")  # fmt: skip
    off_c, on_c = (np.asarray(cpu[k]) * 1e6 for k in (False, True))
    added_c = float(np.median(on_c) - np.median(off_c))
    print(f"  same, process CPU time: off median {np.median(off_c):.2f}, on median "
          f"{np.median(on_c):.2f}; added {added_c:.2f} µs/event "
          f"({added_c / np.median(off_c):.0%} of the stage, "
          f"{added_c / whole_cpu[False]:.1%} of the whole ingest's CPU time)")  # fmt: skip
    print(
        f"evaluate job, estimation step: {evaluate * 1e3:.1f} ms for {windows} windows "
        f"({evaluate / max(windows, 1) * 1e3:.2f} ms per window, 4 slices each)"
    )


def join_main(n: int, repeat: int, k: int) -> None:
    """Multiclass label-join summaries with and without class scores: CPU µs per pair (best of
    `repeat`, interleaved), payload bytes, stored-merge and realized ROC-AUC cost."""
    doc = {"name": "m", "slices": ["region"], "outcomes": {"task": "multiclass"}}
    cfg = parse_config({"models": [doc]}, env={}).models[0]
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(k), n)
    common = {"request_id": [f"r{i}" for i in range(n)], "version": ["1"] * n,
              "ts": np.full(n, 1.7e9), "label": rng.integers(0, k, n).tolist(),
              "slice_values": {"region": rng.choice(["eu", "us", "apac"], n).tolist()}}  # fmt: skip
    shapes = {"scores": p.tolist(), "labels": p.argmax(axis=1).tolist()}
    cpu: dict[str, list[float]] = {name: [] for name in shapes}
    built: dict[str, Any] = {}
    for _ in range(repeat):
        for name, predictions in shapes.items():
            pairs = JoinedPairs(prediction=predictions, **common)
            start = time.process_time()
            built[name] = summarize_pairs(pairs, cfg, 3600.0)
            cpu[name].append((time.process_time() - start) / n * 1e6)
    load = os.getloadavg()
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, load average {load[0]:.1f}")
    for name in shapes:
        overall = next(s for (_, _, key), s in built[name].items() if key == "")
        payload = summary_to_bytes(overall)
        merge = best(partial(_read_merge, payload, overall), repeat)
        print(
            f"  {name}: summarize {min(cpu[name]):.2f} µs/pair CPU (best of {repeat}), "
            f"overall payload {len(payload)} bytes, read + merge {merge * 1e3:.2f} ms"
        )
    overall = next(s for (_, _, key), s in built["scores"].items() if key == "")
    classes = [str(c) for c in range(k)]
    auc = best(lambda: summary_macro_auc(classes, overall), repeat)
    print(f"  realized macro ROC-AUC of the overall summary ({k} classes): {auc * 1e3:.2f} ms")


def _read_merge(payload: bytes, summary: Any) -> Any:
    return summary_from_bytes(payload).merge(summary)


if __name__ == "__main__":
    main()
