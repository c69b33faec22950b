"""Benchmark: modelwatch drift vs Evidently's DataDriftPreset, and window vs stored baseline.

Seeded data: 20 numeric + 5 categorical columns (one with 1000 categories), drift injected
in a few columns of the current set. For each size, every measurement runs in its own
subprocess (peak RSS is that process's ru_maxrss); data are written to Parquet once and the
read time is excluded. Run: `python bench/drift_vs_evidently.py [--sizes 100000,1000000]`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
DRIFTED = {"num_00": ("shift", 0.3), "num_01": ("scale", 1.6), "num_02": ("shift", 0.5),
           "cat_small_0": ("new", 0.1)}  # fmt: skip


def make(n: int, seed: int, drift: bool) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cols: dict[str, np.ndarray] = {}
    for i in range(20):
        name = f"num_{i:02d}"
        x = rng.lognormal(0, 0.6, n) if i % 4 == 3 else rng.normal(10 + i, 1 + i % 3, n)
        kind, amount = DRIFTED.get(name, ("", 0.0)) if drift else ("", 0.0)
        sd = float(x.std())
        if kind == "shift":
            x = x + amount * sd
        elif kind == "scale":
            x = x.mean() + (x - x.mean()) * amount
        cols[name] = x
    for i in range(4):
        c = rng.choice([f"v{j}" for j in range(8)], n).astype(object)
        if drift and i == 0:
            c[rng.random(n) < 0.1] = "brand_new"
        cols[f"cat_small_{i}"] = c
    cols["cat_big"] = rng.choice(np.array([f"k{j:04d}" for j in range(1000)]), n)
    return pd.DataFrame(cols)


CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {repo!r})
import pandas as pd
mode, ref_path, cur_path, db = sys.argv[1:5]
t0 = time.perf_counter()
if mode == "evidently":
    import evidently, evidently.presets
    from monitor.reports.evidently import evidently_scores, run_data_drift
    from monitor.profiles import ColumnSpec
else:
    import scipy.special, scipy.stats  # lazily imported by detectors; count it as import
    from monitor.detectors import evaluate
    from monitor.profiles import profile_frame, specs_for
    from monitor.baselines.store import load_baseline, save_baseline
    from migrations import upgrade
    from monitor.storage import make_engine
imported = time.perf_counter() - t0
cur = pd.read_parquet(cur_path)
ref = pd.read_parquet(ref_path) if mode != "window" else None
t0 = time.perf_counter()
if mode == "evidently":
    specs = {{c: ColumnSpec(c, "numeric", edges=(0.0,)) if c.startswith("num") else
             ColumnSpec(c, "categorical") for c in cur.columns}}
    scores = evidently_scores(run_data_drift(ref, cur, specs, list(cur.columns)))
    drifted = sorted(c for c, v in scores.items() if v >= 0.1)
elif mode == "ours":
    specs = specs_for(list(ref.columns), ref)
    results = evaluate(profile_frame(ref, specs), profile_frame(cur, specs))
    drifted = sorted(r.column for r in results if r.status == "drift")
elif mode == "store":
    engine = make_engine("sqlite:///" + db); upgrade(engine)
    specs = specs_for(list(ref.columns), ref)
    save_baseline(engine, "bench", "1", profile_frame(ref, specs), replace=True)
    drifted = []
else:
    engine = make_engine("sqlite:///" + db)
    baseline = load_baseline(engine, "bench", "1")
    results = evaluate(baseline, profile_frame(cur, baseline.specs))
    drifted = sorted(r.column for r in results if r.status == "drift")
wall = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"wall_s": wall, "import_s": imported, "peak_rss_mb": rss, "drifted": drifted}}))
"""


def child(mode: str, ref: Path, cur: Path, db: Path) -> dict[str, object]:
    code = CHILD.format(repo=str(REPO))
    out = subprocess.run([sys.executable, "-c", code, mode, str(ref), str(cur), str(db)],
                         capture_output=True, text=True, check=False)  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{out.stderr[-3000:]}")
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run_size(n: int, tmp: Path) -> dict[str, object]:
    ref_path, cur_path, db = tmp / f"ref{n}.parquet", tmp / f"cur{n}.parquet", tmp / f"b{n}.db"
    make(n, 1, drift=False).to_parquet(ref_path)
    make(n, 2, drift=True).to_parquet(cur_path)
    ours = child("ours", ref_path, cur_path, db)
    child("store", ref_path, cur_path, db)
    window = child("window", ref_path, cur_path, db)
    evid = child("evidently", ref_path, cur_path, db)
    row = {"rows": n, "ours": ours, "window": window, "evidently": evid}
    row["speedup"] = float(evid["wall_s"]) / float(ours["wall_s"])  # type: ignore[arg-type]
    row["window_speedup"] = float(evid["wall_s"]) / float(window["wall_s"])  # type: ignore[arg-type]
    row["memory_ratio"] = float(evid["peak_rss_mb"]) / float(ours["peak_rss_mb"])  # type: ignore[arg-type]
    row["same_drifted_set"] = ours["drifted"] == evid["drifted"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100000,1000000")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for n in (int(s) for s in args.sizes.split(",")):
            started = time.perf_counter()
            row = run_size(n, Path(d))
            row["bench_total_s"] = time.perf_counter() - started
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
