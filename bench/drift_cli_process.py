"""Benchmark: the whole `modelwatch drift REF CUR --json OUT` process vs a whole Evidently one.

What a user waits for, end to end: interpreter start, imports, reading both Parquet files,
comparing, writing the JSON report. Evidently's process does the same with pandas and its
DataDriftPreset (`Report.run`, then `save_json`). Data: `drift_vs_evidently.make`'s seeded
columns, by default 8 numeric + 4 categorical (one with 1000 categories) at 200,000 rows.
The commands alternate, `--repeat` times each; wall and CPU (user + system, children
included) are reported per run and as the median, so a loaded machine shows as wall > CPU.
`--before DIR` adds a third, alternating arm: the same command run from another checkout (e.g.
`git worktree add /tmp/before HEAD~3`), for before/after medians on one machine in one run.
Run: `python bench/drift_cli_process.py [--rows 200000] [--repeat 5] [--before DIR]`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.drift_vs_evidently import make  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
COLUMNS = [f"num_{i:02d}" for i in range(8)] + ["cat_small_0", "cat_small_1", "cat_small_2",
                                                 "cat_big"]  # fmt: skip

EVIDENTLY = """
import sys
import pandas as pd
from monitor.profiles import ColumnSpec
from monitor.reports.evidently import run_data_drift
ref_path, cur_path, out = sys.argv[1:4]
ref, cur = pd.read_parquet(ref_path), pd.read_parquet(cur_path)
specs = {c: ColumnSpec(c, "numeric", edges=(0.0,)) if c.startswith("num") else
         ColumnSpec(c, "categorical") for c in cur.columns}
run_data_drift(ref, cur, specs, list(cur.columns)).save_json(out)
"""


def timed(argv: list[str], tree: Path = REPO) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the child and its children) of one process run
    with `tree`'s code."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{argv[:4]} failed:\n{out.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", type=Path, default=None, help="another checkout to compare")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ref, cur = tmp / "ref.parquet", tmp / "cur.parquet"
        make(args.rows, 1, drift=False)[COLUMNS].to_parquet(ref)
        make(args.rows, 2, drift=True)[COLUMNS].to_parquet(cur)
        ours_cmd = [sys.executable, "-m", "monitor", "drift", str(ref), str(cur),
                    "--json", str(tmp / "ours.json")]  # fmt: skip
        theirs_cmd = [sys.executable, "-c", EVIDENTLY, str(ref), str(cur), str(tmp / "ev.json")]
        runs: dict[str, list[tuple[float, float]]] = {"modelwatch": [], "evidently": []}
        if args.before is not None:
            runs["before"] = []
        for _ in range(args.repeat):
            runs["modelwatch"].append(timed(ours_cmd))
            runs["evidently"].append(timed(theirs_cmd))
            if args.before is not None:
                runs["before"].append(timed(ours_cmd, args.before.resolve()))
    row: dict[str, object] = {"rows": args.rows, "columns": len(COLUMNS)}
    for name, measured in runs.items():
        row[name] = {
            "wall_s": [round(w, 2) for w, _ in measured],
            "cpu_s": [round(c, 2) for _, c in measured],
            "median_wall_s": round(statistics.median(w for w, _ in measured), 2),
            "median_cpu_s": round(statistics.median(c for _, c in measured), 2),
        }
    theirs = runs["evidently"]
    for name in (n for n in runs if n != "evidently"):
        suffix = "" if name == "modelwatch" else f"_{name}"
        for i, unit in enumerate(("wall", "cpu")):
            peer = statistics.median(m[i] for m in theirs)
            mine = statistics.median(m[i] for m in runs[name])
            row[f"speedup_{unit}{suffix}"] = round(peer / mine, 1)
    print(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
