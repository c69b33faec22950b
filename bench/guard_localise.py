"""Layer localisation time against a plain gate run on the same golden set.

A 20-layer MLP (fraud-like, 8 features, hidden width 64), its static int8 QDQ build calibrated
without the rare high-magnitude segment (the gate fails it on `segment=high`), and a golden set
of `--rows` rows. Each repeat times, on fresh sessions: the plain gate (`localize="never"`, with
the default latency measurement at batch sizes 1 and 64), and localisation alone (graph
matching, two sessions exposing every matched tensor, replay of the default 2048-row sample,
the failing slice first; also the whole golden set with `--all-rows`). Medians over repeats.

    PYTHONPATH=. python bench/guard_localise.py [--rows 20000] [--repeat 5] [--all-rows]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Literal

from guards import GateRequest, GuardVerdict, load_golden, preset, run_gate
from monitor.app.demo import _models as b

DEPTH, HIDDEN = 20, 64


def _setup(directory: Path, rows: int) -> tuple[Path, Path, Path]:
    ref = b.save(b.fraud_classifier(depth=DEPTH, hidden=HIDDEN), directory / "deep.onnx")
    cand = b.to_int8_static(ref, directory / "deep_int8.onnx", b.calibration_rows())
    golden = directory / "golden.parquet"
    b.fraud_golden(n=rows, reference=ref).to_parquet(golden)
    return ref, cand, golden


def _time(
    ref: Path, cand: Path, golden: Path, mode: Literal["never", "always"], rows: int
) -> tuple[float, GuardVerdict]:
    g = load_golden(golden, id_column="id", label_column="label", slice_by=["segment", "region"])
    request = GateRequest(ref, cand, g, preset("int8"), localize=mode, localize_rows=rows)
    start = time.perf_counter()
    verdict = run_gate(request)
    return time.perf_counter() - start, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--all-rows", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ref, cand, golden = _setup(Path(tmp), args.rows)
        sample = args.rows if args.all_rows else 2048
        plain, local = [], []
        for _ in range(args.repeat):
            seconds, _ = _time(ref, cand, golden, "never", sample)
            plain.append(seconds)
            _, verdict = _time(ref, cand, golden, "always", sample)
            assert verdict.localization is not None
            loc = verdict.localization
            local.append(loc.seconds)
        p, loc_s = statistics.median(plain), statistics.median(local)
        print(f"machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}")
        print(
            f"verdict {verdict.verdict}; {len(loc.tensors)} tensors; first divergent "
            f"{loc.first_divergent}; largest growth {loc.largest_growth}"
        )
        print(f"golden rows {args.rows}; localisation replayed {loc.rows} rows")
        print(f"plain gate run (median of {args.repeat}): {p:.3f} s")
        print(f"localisation alone (median): {loc_s:.3f} s = {loc_s / p:.2f}x the gate run")


if __name__ == "__main__":
    main()
