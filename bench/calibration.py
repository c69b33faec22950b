"""Calibration of the drift verdicts: false-alarm rates under no drift, power under shifts.

`PYTHONPATH=. python bench/calibration.py [--quick] [--sizes 1000,100000] [--reps 200]
[--kinds continuous,cat1000u] [--methods jensen_shannon,chi2] [--workers 2] [--markdown]`

Every registered drift method is run through its public surface (`ColumnSpec` from the
reference with `spec_from_reference`, profiles with `ColumnSpec.profile`, the verdict with
`monitor.detectors.compare`: the threshold rule, the p-value and the overwhelming-evidence rule
exactly as `modelwatch drift` applies them to one column) on simulated column pairs:

* **null**: reference and current are independent samples of one distribution. The
  false-alarm rate is the share of ``drift`` statuses; it is promised to be at most
  ``DEFAULT_ALPHA`` (0.01): a drift needs ``p < alpha`` (and the value above its threshold) or,
  on exact-count columns, ``p < evidence alpha`` (1e-6). The p-values themselves are checked
  too: ``P(p < 0.05)`` must not exceed 0.05, the check that sees a miscalibrated p-value long
  before it reaches 1e-6. Each rate comes with its Wilson 95% interval; a rate "exceeds" when
  the interval lies wholly above the nominal rate.
* **shift**: the current sample comes from the documented shifted distribution of its kind
  (`SHIFTS`); the share of ``drift`` statuses is the power.

Column kinds (`KINDS`): continuous (normal), discrete numeric (binomial 0..9: one bucket per
value), binary (0/1, 30% ones), categorical with 2, 10, 100, 1,000 and 10,000 values with
uniform ("u") and Zipf ("z", weight 1/rank) frequencies. Every column has 1% nulls (so
``missing_rate`` is calibrated too). Sizes are window sizes (30 ... 1M); the reference holds
``max(window, 10,000)`` rows. ``--slices`` also compares a 50% slice of both sides on the
overall spec, as `evaluate` does per slice; ``--reference-bounds`` also runs every case with
bounds from the reference's own variability (`ReferenceThresholds`: the chunk-vs-whole spread
of 10 chunks, k = 3), the other place where a reference-chosen quantity is tested against it.

Reps default to 400 below 10k rows, 200 below 100k, 100 at 100k and 30 at 1M (``--reps``
overrides), which keeps the default run under ~10 minutes on 2 cores. ``--quick`` runs a
subset (sizes 100 and 10,000, 100 reps). Runs are seeded (`seed_of`): rerunning gives the same
table.

The fast version runs in the test suite: tests/monitor/detectors/test_calibration.py.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from monitor.detectors import (
    DEFAULT_ALPHA,
    Bound,
    ReferenceThresholds,
    ThresholdStrategy,
    chunk_profiles,
    compare,
    detectors,
    reference_variability,
)
from monitor.profiles import ColumnSpec, Profile, profile_frame, spec_from_reference

NULL_SHARE = 0.01
P_CHECK = 0.05  # the p-value level whose rate is checked against itself
REFERENCE_MIN = 10_000
Z95 = 1.959963984540054
# A rate "exceeds" its nominal one when its one-sided 99.9% Clopper-Pearson bound lies above
# it: exact, so a calibrated method is flagged at most 0.1% of the time per check, whatever the
# reps (the table has hundreds of rows; a 95% interval would flag a few by chance alone).
FLAG_LEVEL = 0.001

Sampler = Callable[[np.random.Generator, int, bool], "pd.Series | np.ndarray"]


@dataclass(frozen=True)
class Kind:
    """A simulated column: its profile kind, how to sample it, and what its shift is."""

    name: str
    kind: str  # "numeric" or "categorical"
    sample: Sampler
    shift: str  # the documented shift, in words


def _with_nulls(rng: np.random.Generator, x: np.ndarray, shifted: bool) -> np.ndarray:
    return np.where(rng.random(x.size) < NULL_SHARE, np.nan, x)


def _continuous(rng: np.random.Generator, n: int, shifted: bool) -> np.ndarray:
    return _with_nulls(rng, rng.normal(0.25 if shifted else 0.0, 1.0, n), shifted)


def _discrete(rng: np.random.Generator, n: int, shifted: bool) -> np.ndarray:
    return _with_nulls(rng, rng.binomial(9, 0.45 if shifted else 0.4, n).astype(float), shifted)


def _binary(rng: np.random.Generator, n: int, shifted: bool) -> np.ndarray:
    return _with_nulls(rng, (rng.random(n) < (0.33 if shifted else 0.3)).astype(float), shifted)


def category_weights(k: int, zipf: bool, shifted: bool) -> np.ndarray:
    """Category probabilities: uniform or 1/rank; shifted: the first half's weights x1.2."""
    w = 1.0 / np.arange(1, k + 1) if zipf else np.ones(k)
    if shifted:
        w = w * np.where(np.arange(k) < (k + 1) // 2, 1.2, 1.0)
    return w / w.sum()


def _categorical(k: int, zipf: bool) -> Sampler:
    labels = pd.Index([f"v{i}" for i in range(k)])

    def sample(rng: np.random.Generator, n: int, shifted: bool) -> pd.Series:
        counts = rng.multinomial(n, category_weights(k, zipf, shifted))
        codes = np.repeat(np.arange(k), counts)
        codes[rng.random(n) < NULL_SHARE] = -1  # pandas' code for a null
        return pd.Series(pd.Categorical.from_codes(codes, categories=labels))

    return sample


KINDS: dict[str, Kind] = {
    k.name: k
    for k in [
        Kind("continuous", "numeric", _continuous, "mean +0.25 sd"),
        Kind("discrete", "numeric", _discrete, "binomial(9, 0.4) -> (9, 0.45)"),
        Kind("binary", "numeric", _binary, "ones 30% -> 33%"),
        *(
            Kind(
                f"cat{k}{'z' if zipf else 'u'}",
                "categorical",
                _categorical(k, zipf),
                "first half of the values x1.2 weight",
            )
            for k in (2, 10, 100, 1000, 10000)
            for zipf in (False, True)
            if not (k == 2 and zipf)
        ),
    ]
}
SHIFTS = {name: k.shift for name, k in KINDS.items()}
NULL_SHIFT = "and nulls 1% -> 1% (values only)"


@dataclass(frozen=True)
class Case:
    """One cell of the table: a column kind at one window size, whole or within a slice."""

    kind: str
    size: int
    sliced: bool = False
    # "constant": each method's default bound; "reference": bounds from the reference's own
    # chunk-to-whole variability (`ReferenceThresholds`, 10 chunks, k = 3), set per pair.
    thresholds: str = "constant"

    @property
    def reference_size(self) -> int:
        return max(self.size, REFERENCE_MIN)

    @property
    def label(self) -> str:
        bounds = " (reference bounds)" if self.thresholds == "reference" else ""
        return f"{self.kind}{' (slice)' if self.sliced else ''}{bounds}"


@dataclass
class Tally:
    """Counts for one (case, method): drift statuses under the null and the shift."""

    reps: int = 0
    null_drift: int = 0
    null_evidence: int = 0
    null_p_small: int = 0
    null_p_reps: int = 0
    null_insufficient: int = 0
    shift_reps: int = 0
    shift_drift: int = 0

    def add(self, other: Tally) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Outcome:
    """Tallies of every method on one case."""

    case: Case
    tallies: dict[str, Tally] = field(default_factory=dict)
    seconds: float = 0.0


def seed_of(*parts: object) -> int:
    """A stable seed from the parts' text (the same table on every rerun)."""
    return zlib.crc32("/".join(map(str, parts)).encode())


def methods_for(kind: str, wanted: Iterable[str] | None = None) -> list[str]:
    """Registered methods accepting the profile kind (all of them, or those in `wanted`)."""
    names = sorted(n for n, d in detectors().items() if kind in d.kinds)
    return [n for n in names if wanted is None or n in set(wanted)]


def _sliced(spec: ColumnSpec, values: pd.Series | np.ndarray, rng: np.random.Generator) -> Profile:
    # A slice is a random half of the rows, profiled on the overall spec (what `evaluate` does).
    half = np.asarray(rng.random(len(values)) < 0.5)
    return spec.profile(values[half] if isinstance(values, np.ndarray) else values[half])


def pair(
    case: Case, rng: np.random.Generator, shifted: bool
) -> tuple[Profile, Profile, ThresholdStrategy | None]:
    """The (reference, current) profiles of one simulated pair, and the threshold strategy
    the case's reference gives (None: each method's default bound)."""
    kind = KINDS[case.kind]
    ref_values = kind.sample(rng, case.reference_size, False)
    cur_values = kind.sample(rng, case.size, shifted)
    spec = spec_from_reference("x", ref_values, kind=kind.kind)  # type: ignore[arg-type]
    strategy = _reference_bounds(spec, ref_values) if case.thresholds == "reference" else None
    if case.sliced:
        return _sliced(spec, ref_values, rng), _sliced(spec, cur_values, rng), strategy
    return spec.profile(ref_values), spec.profile(cur_values), strategy


def _reference_bounds(spec: ColumnSpec, values: pd.Series | np.ndarray) -> ThresholdStrategy:
    frame = pd.DataFrame({"x": values})
    whole = profile_frame(frame, {"x": spec})
    return ReferenceThresholds(reference_variability(whole, chunk_profiles(frame, {"x": spec}, 10)))


def run_case(
    case: Case, reps: int, methods: Sequence[str] | None = None, power: bool = True
) -> Outcome:
    """Simulate `reps` null pairs (and, with `power`, `reps` shifted pairs) of `case`, every
    method on each."""
    start = time.perf_counter()
    names = methods_for(KINDS[case.kind].kind, methods)
    out = Outcome(case, {n: Tally() for n in names})
    found = detectors()
    for shifted in (False, True) if power else (False,):
        rng = np.random.default_rng(seed_of(case.kind, case.size, case.sliced, shifted))
        for _ in range(reps):
            ref, cur, strategy = pair(case, rng, shifted)
            for name in names:
                detector = found[name]
                bound = Bound(detector.default_threshold, "constant")
                if strategy is not None:
                    bound = strategy.bound(detector, "x")
                result = compare(detector, ref, cur, bound)
                _count(out.tallies[name], result.status, result.p_value, result.decided_by, shifted)
    out.seconds = time.perf_counter() - start
    return out


def _count(t: Tally, status: str, p: float | None, by: str | None, shifted: bool) -> None:
    if shifted:
        t.shift_reps += 1
        t.shift_drift += status == "drift"
        return
    t.reps += 1
    t.null_drift += status == "drift"
    t.null_evidence += by == "evidence"
    t.null_insufficient += status == "insufficient_data"
    if p is not None:
        t.null_p_reps += 1
        t.null_p_small += p < P_CHECK


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (0..1 for no trials)."""
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    centre = p + z * z / (2 * trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    denom = 1 + z * z / trials
    return max(0.0, (centre - half) / denom), min(1.0, (centre + half) / denom)


def exceeds(successes: int, trials: int, nominal: float) -> bool:
    """True when the rate's one-sided 99.9% Clopper-Pearson lower bound is above `nominal`:
    a calibrated method (true rate <= nominal) is flagged at most 0.1% of the time."""
    from scipy.stats import beta

    if trials == 0 or successes == 0:
        return False
    return bool(beta.ppf(FLAG_LEVEL, successes, trials - successes + 1) > nominal)


def default_reps(size: int) -> int:
    if size < 10_000:
        return 400
    if size < 100_000:
        return 200
    return 100 if size < 1_000_000 else 30


def cases(
    kinds: Sequence[str], sizes: Sequence[int], slices: bool, reference_bounds: bool
) -> list[Case]:
    out = [Case(k, s) for k in kinds for s in sizes]
    if slices:
        out += [Case(k, s, sliced=True) for k in kinds for s in sizes if s >= 1000]
    if reference_bounds:
        out += [Case(k, s, thresholds="reference") for k in kinds for s in sizes]
    return out


def _job(args: tuple[Case, int, Sequence[str] | None, bool]) -> Outcome:
    return run_case(*args)


def run_all(
    todo: Sequence[Case],
    reps: int | None,
    methods: Sequence[str] | None,
    workers: int,
    power: bool = True,
) -> list[Outcome]:
    jobs = [(c, reps or default_reps(c.size), methods, power) for c in todo]
    # Longest first, so the pool is not left waiting on one 1M-row case at the end.
    jobs.sort(key=lambda j: -j[0].reference_size * j[1])
    if workers <= 1:
        return [_job(j) for j in jobs]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_job, jobs))


def _rate(successes: int, trials: int) -> str:
    if trials == 0:
        return "—"
    lo, hi = wilson(successes, trials)
    return f"{successes / trials:.3f} [{lo:.3f}, {hi:.3f}]"


def rows(outcomes: Sequence[Outcome]) -> list[list[str]]:
    """The table's rows: one per (case, method), in kind, size, method order."""
    order = list(KINDS)
    out = []

    def key(o: Outcome) -> tuple[int, bool, str, int]:
        return order.index(o.case.kind), o.case.sliced, o.case.thresholds, o.case.size

    for o in sorted(outcomes, key=key):
        for name, t in o.tallies.items():
            alarm = exceeds(t.null_drift, t.reps, DEFAULT_ALPHA)
            p_bad = exceeds(t.null_p_small, t.null_p_reps, P_CHECK)
            flag = "EXCEEDS" if alarm or p_bad else "ok"
            out.append([
                o.case.label, name, f"{o.case.reference_size:,}/{o.case.size:,}", str(t.reps),
                _rate(t.null_drift, t.reps), str(t.null_evidence),
                _rate(t.null_p_small, t.null_p_reps), _rate(t.shift_drift, t.shift_reps), flag,
            ])  # fmt: skip
    return out


HEADER = [
    "column",
    "method",
    "n ref/cur",
    "reps",
    f"false alarms (nominal ≤ {DEFAULT_ALPHA})",
    "of them by evidence",
    f"P(p < {P_CHECK}) (nominal ≤ {P_CHECK})",
    "power at the shift",
    "verdict",
]


def markdown(table: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    lines += ["| " + " | ".join(r) + " |" for r in table]
    return "\n".join(lines)


def plain(table: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in table)) for i, h in enumerate(HEADER)]
    fmt = "  ".join(f"{{:{w}s}}" for w in widths)
    return "\n".join([fmt.format(*HEADER), *(fmt.format(*r) for r in table)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 100,10000 and 100 reps")
    parser.add_argument("--sizes", help="window sizes, comma-separated (default 30..1M)")
    parser.add_argument("--reps", type=int, help="pairs per case and side (default by size)")
    parser.add_argument("--kinds", help=f"column kinds (default all: {','.join(KINDS)})")
    parser.add_argument("--methods", help="drift methods (default: every registered one)")
    parser.add_argument("--slices", action="store_true", help="also compare a 50%% slice")
    parser.add_argument(
        "--reference-bounds",
        action="store_true",
        help="also run with bounds from the reference's variability (ReferenceThresholds)",
    )
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--no-power", action="store_true", help="null simulations only")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    default_sizes = "100,10000" if args.quick else "30,100,1000,10000,100000,1000000"
    sizes = [int(s) for s in (args.sizes or default_sizes).split(",")]
    kinds = args.kinds.split(",") if args.kinds else list(KINDS)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        print(f"unknown column kind {unknown[0]!r}; valid: {', '.join(KINDS)}", file=sys.stderr)
        return 2
    reps = args.reps or (100 if args.quick else None)
    methods = args.methods.split(",") if args.methods else None
    start = time.perf_counter()
    todo = cases(kinds, sizes, args.slices, args.reference_bounds)
    outcomes = run_all(todo, reps, methods, args.workers, not args.no_power)
    table = rows(outcomes)
    print(markdown(table) if args.markdown else plain(table))
    bad = sum(r[-1] == "EXCEEDS" for r in table)
    print(f"\n{len(table)} rows, {bad} exceeding nominal; {time.perf_counter() - start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
