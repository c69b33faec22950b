"""What one drift comparison costs when its window size is new vs already seen (issue 14).

`PYTHONPATH=. python bench/null_cost.py [--reference 20000] [--sizes 300,3000] [--repeat 20]`.
A comparison's p-value comes from an analytic null where the detector has one, else from 300
bootstrap draws cached per (detector, reference counts, current n). The soak benchmark's windows
all have the same n, so its ticks hit that cache; production windows rarely do. For each
detector this times `compare` (value, p-value, status: what a tick pays per result) on windows
whose n was never seen ("new n") and on the same windows again ("seen n"), CPU time, medians.
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
    print("kind         detector        n      new n ms   seen n ms   ratio")
    for kind, (spec, data) in _columns(args.reference).items():
        ref = spec.profile(list(data))
        for size in (int(s) for s in args.sizes.split(",")):
            windows = [spec.profile(list(rng.choice(data, size + i))) for i in range(args.repeat)]
            for name in detector_names():
                if kind not in get_detector(name).kinds:
                    continue
                new = statistics.median(_timed(name, ref, windows))
                seen = statistics.median(_timed(name, ref, windows))
                print(f"{kind:12s} {name:15s} {size:6d} {new:10.3f} {seen:11.3f} {new / seen:7.1f}")


if __name__ == "__main__":
    main()
