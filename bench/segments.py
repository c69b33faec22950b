"""Weak-segment search: modelwatch's pruned lattice search against references, in one run.

`PYTHONPATH=. python bench/segments.py [--rows 1000000] [--features 20] [--top 5]
[--sliceline-rows 10000]`.
A frame of `--rows` rows and `--features` features (half categorical with 4 values, half
normal numeric cut into 10 quantile bins) with a planted weak segment of three predicates
(c1 = 3 AND c3 = 2 AND x0 in its top decile: wrong 80% of the time, every other row 5%).
Both searches get the same integer codes (ours encodes the frame itself; sliceline's
Slicefinder is fitted on our codes, which is what it expects: already binned features), the
same score (SliceLine's, alpha 0.95), the same minimum support (0.5% of the rows) and up to
three predicates. Prints each one's wall time and top segments, whether each found the planted
one, and whether the top segments agree. Ours includes its tests and the BH correction.

Two references. `sliceline` 0.3 (pure numpy/scipy without numba) builds a sparse rows × candidates
matrix per level and runs out of memory past a few ten thousand rows of 20 features (44 GiB
asked at 100,000 rows), so it runs on the first `--sliceline-rows` rows only, next to ours on
the same rows. On all `--rows` rows the reference is an exhaustive search: every cell of every
combination of one to three features counted with `np.bincount` and scored, no pruning — the
answer the pruned search must reproduce.
"""

from __future__ import annotations

import argparse
import time
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from monitor.segments import find_segments
from monitor.segments._encode import encode

SHARE = 0.005  # the minimum support: 0.5% of the rows (the planted segment is 0.625%)


def make_frame(rows: int, features: int, seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    cols: dict[str, Any] = {}
    for j in range(features):
        if j % 2:
            cols[f"c{j}"] = rng.integers(0, 4, rows)
        else:
            cols[f"x{j}"] = rng.normal(size=rows)
    frame = pd.DataFrame(cols)
    planted = (frame.c1 == 3) & (frame.c3 == 2) & (frame.x0 >= np.quantile(frame.x0, 0.9))
    y = rng.integers(0, 2, rows)
    wrong = rng.random(rows) < np.where(planted, 0.8, 0.05)
    frame["label"] = y
    frame["pred"] = np.where(wrong, 1 - y, y)
    return frame


def _is_planted(predicates: list[tuple[str, str]], top_bin: str) -> bool:
    got = dict(predicates)
    return got == {"c1": "3", "c3": "2", "x0": top_bin}


def exhaustive(enc: Any, errors: Any, sigma: int, top: int) -> list[list[tuple[str, str]]]:
    """The top slices by SliceLine's score over every combination of 1 to 3 features."""
    n, mean = len(errors), float(errors.mean())
    cards = enc.cardinalities
    found: list[tuple[float, list[tuple[str, str]]]] = []
    for level in (1, 2, 3):
        for combo in combinations(range(len(cards)), level):
            shape = tuple(cards[f] for f in combo)
            key = np.ravel_multi_index(tuple(enc.codes[:, f] for f in combo), shape)
            size = np.bincount(key, minlength=int(np.prod(shape))).astype(float)
            err = np.bincount(key, weights=errors, minlength=size.size)
            with np.errstate(divide="ignore", invalid="ignore"):
                sc = 0.95 * ((err / size) / mean - 1) - 0.05 * (n / size - 1)
            sc[(size < sigma) | (size >= n)] = -np.inf
            for cell in np.argsort(sc)[::-1][:top]:
                if sc[cell] > 0:
                    idx = np.unravel_index(cell, shape)
                    preds = [
                        (enc.features[f], enc.labels[f][int(c)])
                        for f, c in zip(combo, idx, strict=True)
                    ]
                    found.append((float(sc[cell]), sorted(preds)))
    found.sort(key=lambda x: -x[0])
    return [preds for _, preds in found[:top]]


def run_ours(frame: Any, feats: list[str], top: int) -> tuple[float, Any]:
    start = time.perf_counter()
    report = find_segments(frame, "label", "pred", feats, min_support=30, min_share=SHARE,
                           top=top, score_alpha=0.95)  # fmt: skip
    return time.perf_counter() - start, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--sliceline-rows", type=int, default=10_000)
    args = parser.parse_args()
    whole = make_frame(args.rows, args.features)
    feats = [c for c in whole.columns if c not in ("label", "pred")]
    for rows, reference in ((args.sliceline_rows, "sliceline"), (args.rows, "exhaustive")):
        frame = whole.iloc[:rows].reset_index(drop=True)
        sigma = max(30, int(np.ceil(SHARE * rows)))
        ours_s, report = run_ours(frame, feats, args.top)
        enc = encode(frame, feats)
        top_bin = enc.labels[feats.index("x0")][-1]
        errors = (frame.label != frame.pred).to_numpy(dtype=np.float64)
        ours = [sorted(s.predicates) for s in report.segments]
        start = time.perf_counter()
        ref = sliceline(enc, errors, sigma, args.top) if reference == "sliceline" else (
            exhaustive(enc, errors, sigma, args.top))  # fmt: skip
        ref_s = time.perf_counter() - start
        print(f"rows={rows} features={args.features} min_support={sigma} "
              f"tested={report.candidates_tested} combos counted={report.combinations_counted} "
              f"pruned={report.combinations_pruned}")  # fmt: skip
        print(f"  ours       {ours_s:8.2f} s  planted on top: {_is_planted(ours[0], top_bin)}")
        print(f"  {reference:10s} {ref_s:8.2f} s  planted on top: {_is_planted(ref[0], top_bin)}")
        print(f"  same top {args.top} (as sets): {set(map(tuple, ours)) == set(map(tuple, ref))}")
        for name, found in (("ours", ours), (reference, ref)):
            for k, seg in enumerate(found):
                print(f"    {name} #{k + 1}: " + " AND ".join(f"{f} = {v}" for f, v in seg))


def sliceline(enc: Any, errors: Any, sigma: int, top: int) -> list[list[tuple[str, str]]]:
    import warnings

    from sliceline.slicefinder import Slicefinder

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "numba not installed": the plain numpy path is timed
        finder = Slicefinder(alpha=0.95, k=top, max_l=3, min_sup=sigma)
        finder.fit(enc.codes, errors)
    return [
        sorted((enc.features[j], enc.labels[j][int(v)]) for j, v in enumerate(row) if v is not None)
        for row in finder.top_slices_
    ]


if __name__ == "__main__":
    main()
