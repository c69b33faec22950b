"""Estimation cost: what CBPE and multivariate drift add to ingest (µs/event) and what a window
evaluation costs, next to the floor they ride on (profiling the same batch of events, as ingest
does) and the peer (NannyML's CBPE and DataReconstructionDriftCalculator on the same chunk).

    PYTHONPATH=. python bench/estimation.py [--events 100000] [--window 5000] [--repeat 5]

(OPENBLAS_NUM_THREADS=1 for a steadier reading on a loaded machine: the reconstruction's matmul
is small and a threaded BLAS mostly waits for busy cores.)

Events have 20 features (16 numeric, 4 categorical), a score and a label.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from monitor.estimation import (
    count_scores,
    estimate_metrics,
    fit_calibration,
    fit_reconstruction,
    reconstruction_errors,
)
from monitor.profiles import profile_frame, specs_for

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
    args = ap.parse_args()
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


if __name__ == "__main__":
    main()
