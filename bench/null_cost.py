"""What one drift comparison costs when window sizes vary, as in production (issue 14).

`PYTHONPATH=. python bench/null_cost.py [--reference 20000] [--sizes 300,3000] [--repeat 20]`.
A comparison's p-value comes from an analytic null where the detector has one, else from 300
bootstrap draws (`monitor/detectors/_null.py`). For each detector this times `compare` (value,
p-value, status: what a tick pays per result), CPU time, mean ms per comparison, on:

- "varying": `--repeat` windows whose sizes are drawn uniformly within ±25% of the size, in a
  fresh process state (hourly windows of a real stream);
- "seen": the same windows again (every null already drawn: the floor);
- "growing": a day accumulating hour by hour, sizes size×1, size×2, ..., size×24 (the current
  day and week, compared again on every tick).

Run it against another checkout with `PYTHONPATH=<checkout> python bench/null_cost.py` to
compare versions on the same machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from monitor.detectors import compare, detector_names, get_detector
from monitor.profiles import ColumnSpec, Profile, spec_from_reference


def _columns(rows: int) -> dict[str, tuple[ColumnSpec, np.ndarray]]:
    rng = np.random.default_rng(0)
    numeric = rng.normal(size=rows)
    categories = tuple(f"v{i}" for i in range(50))
    weights = rng.dirichlet(np.ones(len(categories)))
    categorical = rng.choice(np.array(categories, dtype=object), size=rows, p=weights)
    return {
        "numeric": (spec_from_reference("x", numeric, bins=20), numeric),
        "categorical": (ColumnSpec("c", "categorical", categories=categories), categorical),
    }


def _timed(name: str, ref: Profile, windows: list[Profile]) -> list[float]:
    detector = get_detector(name)
    out = []
    for cur in windows:
        start = time.process_time()
        compare(detector, ref, cur, detector.default_threshold)
        out.append((time.process_time() - start) * 1e3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reference", type=int, default=20_000)
    parser.add_argument("--sizes", default="300,3000")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    print("kind         detector        n      varying ms   seen ms   growing ms   varying/seen")
    for kind, (spec, data) in _columns(args.reference).items():
        ref = spec.profile(list(data))
        for size in (int(s) for s in args.sizes.split(",")):
            varying_sizes = rng.integers(int(size * 0.75), int(size * 1.25) + 1, args.repeat)
            windows = [spec.profile(list(rng.choice(data, int(n)))) for n in varying_sizes]
            day = [spec.profile(list(rng.choice(data, size * hour))) for hour in range(1, 25)]
            for name in detector_names():
                if kind not in get_detector(name).kinds:
                    continue
                _timed(name, ref, [spec.profile(list(rng.choice(data, 37)))])  # imports
                varying = statistics.fmean(_timed(name, ref, windows))
                seen = statistics.fmean(_timed(name, ref, windows))
                growing = statistics.fmean(_timed(name, ref, day))
                print(
                    f"{kind:12s} {name:15s} {size:6d} {varying:12.3f} {seen:9.3f} "
                    f"{growing:12.3f} {varying / seen:14.1f}"
                )


if __name__ == "__main__":
    main()
