"""Baselines larger than memory: wall time and peak RSS of streamed profiling by dataset size.

    PYTHONPATH=. python -m bench.baseline_scale [--sizes 1M,10M,50M] [--dir /tmp]

For each size a Parquet file of N rows x 20 columns (16 numeric, 4 string; row groups of
500,000 rows) is stream-written under --dir, profiled the way `baseline create` does (sketch
pass, one profiling pass, 10 reference chunks, sliced by one column) in a fresh child process,
and deleted. At the smallest size the in-memory path (read the whole file into pandas, then
`specs_for`, `profile_frame`, `profile_variability`) runs too, as the peer. Each child reports
its own wall time and peak RSS (ru_maxrss), so sizes do not see each other's memory.
Targets: streamed peak RSS flat within 1.3x from the smallest to the largest size; streamed
rows/s within 2x of in-memory at the smallest size.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROW_GROUP = 500_000
NUMERIC = [f"f{i:02d}" for i in range(16)]
STRINGS = {"c_country": 30, "c_merchant": 2_000, "c_device": 6, "c_region": 5}
SLICE = "c_region"


def generate(path: Path, rows: int, seed: int = 0) -> None:
    """Stream-write `rows` rows in row groups; memory is one row group."""
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    writer = None
    try:
        for start in range(0, rows, ROW_GROUP):
            table = _row_group(rng, min(ROW_GROUP, rows - start))
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table, row_group_size=ROW_GROUP)
    finally:
        if writer is not None:
            writer.close()


def _row_group(rng: np.random.Generator, n: int) -> Any:
    import pyarrow as pa

    cols: dict[str, Any] = {}
    for i, name in enumerate(NUMERIC):
        x = rng.lognormal(i % 4, 1.0, n) if i % 2 else rng.normal(i, 1 + i % 3, n)
        if i % 5 == 0:
            x[rng.random(n) < 0.02] = np.nan
        cols[name] = x
    for name, k in STRINGS.items():
        labels = pa.array([f"{name[2:]}{j}" for j in range(k)])
        idx = pa.array(np.minimum(rng.zipf(1.3, n) - 1, k - 1).astype(np.int32))
        cols[name] = pa.DictionaryArray.from_arrays(idx, labels).dictionary_decode()
    return pa.table(cols)


def child(mode: str, path: str) -> dict[str, Any]:
    """Profile `path` like `baseline create` (streamed or in memory); report time and RSS."""
    from monitor.baselines.stream import profile_source
    from monitor.data.datafile import read_frame
    from monitor.data.datasets import open_source
    from monitor.detectors import profile_variability
    from monitor.profiles import profile_frame, specs_for

    columns = [*NUMERIC, *(c for c in STRINGS if c != SLICE)]
    t0 = time.perf_counter()  # imports (scipy, pandas) are not part of the measurement
    if mode == "streamed":
        result = profile_source(open_source(path), columns, [SLICE], chunks=10)
        rows = result.profiles.n_rows
    else:
        frame = read_frame(path)
        specs = specs_for(columns, frame)
        profiles = profile_frame(frame, specs, [SLICE])
        profile_variability(frame, specs, profiles, 10)
        rows = profiles.n_rows
    wall = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"mode": mode, "rows": rows, "wall_s": wall, "rows_per_s": rows / wall, "rss_mb": rss_mb}


def measure(mode: str, path: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    cmd = [sys.executable, "-m", "bench.baseline_scale", "--child", mode, str(path)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=3600)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1], 1)
    return int(float(text.rstrip("KM")) * scale)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1M,10M,50M")
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    results = []
    for i, size in enumerate(_size(s) for s in args.sizes.split(",")):
        path = Path(args.dir) / f"modelwatch-bench-{size}.parquet"
        t0 = time.perf_counter()
        generate(path, size)
        mb = path.stat().st_size / 1e6
        print(f"generated {size:,} rows ({mb:,.0f} MB) in {time.perf_counter() - t0:.0f} s")
        try:
            modes = ["streamed", "memory"] if i == 0 else ["streamed"]
            for mode in modes:
                r = measure(mode, path)
                results.append(r)
                print(
                    f"{mode:8s} {r['rows']:>12,} rows  {r['wall_s']:8.1f} s  "
                    f"{r['rows_per_s']:>11,.0f} rows/s  peak RSS {r['rss_mb']:7,.0f} MB",
                    flush=True,
                )
        finally:
            path.unlink(missing_ok=True)
    _verdict(results)


def _verdict(results: list[dict[str, Any]]) -> None:
    streamed = [r for r in results if r["mode"] == "streamed"]
    memory = [r for r in results if r["mode"] == "memory"]
    rss = [r["rss_mb"] for r in streamed]
    print(f"streamed peak RSS largest/smallest size: {max(rss) / rss[0]:.2f}x (target <= 1.3x)")
    if memory:
        ratio = memory[0]["rows_per_s"] / streamed[0]["rows_per_s"]
        print(f"in-memory / streamed rows/s at the smallest size: {ratio:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
