"""Gate overhead: the gate's own work vs bare onnxruntime inference of the same two models.

100k golden rows (64 features, two slice columns, binary labels), a 3x256 MLP reference and its
static int8 (QDQ) build, int8 preset (flip rate, accuracy and ROC-AUC drop, overall and on 6
slices). In the same process and on the same sessions, each repeat times
  - bare: every row through both models (`run_batched`, batch 4096), and
  - gate work: building the feeds from the golden table, comparison, statistics, criteria,
    worst rows, and the JSON, Markdown and HTML reports.
overhead = gate work / bare inference (medians over repeats). Target: <= 10%.

    PYTHONPATH=. python bench/guard_overhead.py [--rows 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from guards import GateRequest, load_golden, preset
from guards._feeds import build_feeds
from guards._runtime import open_session, run_batched, select_providers, session_options, signature
from guards.gate import judge
from guards.reports import render_html, render_json, render_markdown
from guards.results import GuardVerdict
from monitor.app.demo._models import fraud_classifier, save, to_int8_static

N_FEATURES, HIDDEN, DEPTH, BATCH = 64, 256, 3, 4096


def build(directory: Path, rows: int) -> tuple[Path, Path, Path]:
    rng = np.random.default_rng(0)
    ref = save(fraud_classifier(n_features=N_FEATURES, hidden=HIDDEN, depth=DEPTH),
               directory / "ref.onnx")  # fmt: skip
    calib = rng.normal(size=(1024, N_FEATURES)).astype(np.float32)
    cand = to_int8_static(ref, directory / "int8.onnx", calib)
    x = rng.normal(size=(rows, N_FEATURES)).astype(np.float32)
    frame = pd.DataFrame(x, columns=[f"x{i}" for i in range(N_FEATURES)])
    frame.insert(0, "id", np.arange(rows))
    frame["region"] = rng.choice(["eu", "us", "apac", "latam"], rows)
    frame["segment"] = rng.choice(["normal", "high"], rows, p=[0.97, 0.03])
    frame["label"] = rng.integers(0, 2, rows)
    golden = directory / "golden.parquet"
    frame.to_parquet(golden)
    return ref, cand, golden


def one_repeat(request: GateRequest, sessions: tuple[Any, Any]) -> tuple[float, float]:
    ref_s, cand_s = sessions
    t0 = time.perf_counter()
    feeds = build_feeds(request.golden, signature(ref_s))
    t1 = time.perf_counter()
    ref_out, cand_out = run_batched(ref_s, feeds, BATCH), run_batched(cand_s, feeds, BATCH)
    t2 = time.perf_counter()
    judged = judge(request, ref_out, cand_out)
    used = tuple(ref_s.get_providers())
    providers = {"reference": used, "candidate": used}
    verdict = GuardVerdict("pass", "int8", request.golden.rows, providers, judged.criteria,
                           judged.outputs, worst_rows=judged.worst_rows)  # fmt: skip
    doc = verdict.to_dict()
    for render in (render_json, render_markdown, render_html):
        render(doc)
    t3 = time.perf_counter()
    return t2 - t1, (t1 - t0) + (t3 - t2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    logging.getLogger().setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        ref, cand, golden_path = build(Path(tmp), args.rows)
        golden = load_golden(golden_path, id_column="id", label_column="label",
                             slice_by=["region", "segment"])  # fmt: skip
        request = GateRequest(ref, cand, golden, preset("int8"), batch_size=BATCH)
        providers, opts = select_providers(), session_options()
        sessions = (open_session(ref, providers, opts), open_session(cand, providers, opts))
        runs = [one_repeat(request, sessions) for _ in range(args.repeat)]
    bare = statistics.median(r[0] for r in runs)
    work = statistics.median(r[1] for r in runs)
    print(f"rows={args.rows} features={N_FEATURES} model=MLP {DEPTH}x{HIDDEN}, fp32 vs int8 QDQ")
    print(f"providers: {', '.join(providers)}")
    print(f"bare inference, 2 models: {bare:.3f} s = {args.rows / bare:,.0f} golden rows/s")
    print(f"gate work (feeds, compare, criteria, reports): {work:.3f} s "
          f"= {args.rows / work:,.0f} golden rows/s")  # fmt: skip
    print(f"overhead: {work / bare:.1%} of bare inference (target <= 10%)")


if __name__ == "__main__":
    main()
