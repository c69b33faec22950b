"""Power against peers at an equal false-alarm rate: modelwatch, Evidently and NannyML drift
detectors on the same simulated columns.

`PYTHONPATH=. python bench/calibration_peers.py [--quick] [--sizes 30,100,1000,10000]
[--kinds continuous,cat10u] [--methods psi,hellinger] [--refs 10] [--per-ref 10] [--far 0.05]
[--tools Evidently,NannyML] [--intervals] [--markdown]`

For each column kind and window size, ``--refs`` references are drawn, and against each
``--per-ref`` current windows of the same distribution (null) and as many of a shifted one
(`SHIFTS`). Every tool scores every pair with each method both it and modelwatch have (the
shared cases, `SHARED`): modelwatch through `monitor.detectors.compare` (its p-value and its
``drift`` status), Evidently 0.7 through its registered stat tests (``ks``, ``chisquare``,
``psi``, ``jensenshannon``, ``hellinger``, ``wasserstein``: the drift score and the stat test's
own decision at its default threshold), NannyML 0.13 through its univariate drift methods
(``kolmogorov_smirnov``, ``chi2``, ``jensen_shannon``, ``hellinger``, ``wasserstein``,
``l_infinity``: fitted on the reference chunked at the window's size, its default
mean + 3 sd threshold of the reference chunks' values; ``chi2`` alerts at p < 0.05).

Per (kind, size, method, tool) the table gives:

* **FAR at default**: the share of null pairs its default decision calls drift (Wilson 95%);
* **power at default**: the share of shifted pairs it calls drift;
* **power at matched FAR**: each tool's score (``-log10 p`` where the tool decides on a
  p-value, its distance otherwise) thresholded at the null pairs' upper ``--far`` quantile,
  randomised at ties so every tool's false-alarm rate on these null pairs is exactly
  ``--far``; the share of shifted pairs above it. This is the power of the statistic itself,
  whatever threshold a tool ships with.

Shifts are local: their size shrinks as ``1/sqrt(n)`` so that power sits between 0 and 1 at
every window size (a fixed shift is detected by everyone at 100k rows): continuous N(0, 1),
mean + 3/sqrt(n) sd; discrete binomial(9, 0.4), p + 0.5/sqrt(n); binary 30% ones,
+ 1.4/sqrt(n); categorical (2, 10, 100 and 10,000 uniform values, ``cat2u``, ``cat10u``,
``cat100u``, ``cat10000u``; 1,000 Zipf values, ``cat1000z``): every other value by rank
x (1 + c/sqrt(n)), c = 4, 6, 10, 30 and 20. The reference holds
``max(10 n, 10,000)`` rows, at most 200,000 (``--sizes 100000`` works, but NannyML's default
threshold then comes from two reference chunks, and a cell costs ~10 minutes). No nulls:
missing values are another method's job. References per cell default to 10 up to 1,000-row
windows, 5 at 10,000 (`default_refs`), ``--per-ref`` 10: 100 null and 100 shifted windows per
cell up to 1,000 rows, 50 and 50 at 10,000; sizes 30 ... 10,000 rows, ~15 minutes on 2
shared cores. Printed: the long table (`rows`), one compact table per profile kind
(`compact`: what docs/concepts/calibration.md shows), modelwatch's gap to the best peer per
method (`summary`), and per kind and size its smallest gap with a paired 95% interval
(`gaps`: what bench/README.md shows); with ``--intervals`` also each
difference to each peer with a paired bootstrap 95% interval, pooled over the cell's windows
and per reference (`intervals`: what resolves a gap the 100-window cells leave in doubt, with
``--refs 100 --per-ref 40``).

Evidently's import (~4 s) happens once, in `evidently_tool`; NannyML's import starts a Spark
JVM (through flaml), once. Runs are seeded: rerunning gives
the same table. The fast version of the matched-rate machinery:
tests/monitor/detectors/test_calibration_peers.py.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from bench.calibration import category_weights, seed_of, wilson
from monitor.detectors import Bound, compare, get_detector
from monitor.profiles import spec_from_reference

REFERENCE_MIN = 10_000
REFERENCE_MAX = 200_000
FAR = 0.05
Values = "np.ndarray | pd.Series"
# A tool's judgement of one current window, per method: (score, its default decision).
Scores = dict[str, tuple[float, bool]]


def _logp(p: float) -> float:
    """-log10 p, finite: larger means more drift (a p-value as a score)."""
    return -math.log10(max(p, 1e-300))


# ---------------------------------------------------------------------------- simulated columns


@dataclass(frozen=True)
class Kind:
    """A simulated column: profile kind, sampler at shift size `delta`, the shift's constant."""

    name: str
    kind: str  # "numeric" or "categorical"
    sample: Callable[[np.random.Generator, int, float], Any]
    scale: float  # the shift at n rows is scale / sqrt(n)
    shift: str


def _categorical(k: int, zipf: bool) -> Callable[[np.random.Generator, int, float], pd.Series]:
    labels = pd.Index([f"v{i}" for i in range(k)])
    base = category_weights(k, zipf, shifted=False)

    def sample(rng: np.random.Generator, n: int, delta: float) -> pd.Series:
        w = base * np.where(np.arange(k) % 2 == 1, 1.0 + delta, 1.0)
        codes = np.repeat(np.arange(k), rng.multinomial(n, w / w.sum()))
        rng.shuffle(codes)
        return pd.Series(pd.Categorical.from_codes(codes, categories=labels))

    return sample


KINDS: dict[str, Kind] = {
    k.name: k
    for k in [
        Kind("continuous", "numeric", lambda r, n, d: r.normal(d, 1.0, n), 3.0,
             "mean + 3/sqrt(n) sd"),
        Kind("discrete", "numeric", lambda r, n, d: r.binomial(9, 0.4 + d, n).astype(float), 0.5,
             "binomial(9, 0.4 + 0.5/sqrt(n))"),
        Kind("binary", "numeric", lambda r, n, d: (r.random(n) < 0.3 + d).astype(float), 1.4,
             "ones 30% + 1.4/sqrt(n)"),
        Kind("cat2u", "categorical", _categorical(2, False), 4.0,
             "every other value x (1 + 4/sqrt(n))"),
        Kind("cat10u", "categorical", _categorical(10, False), 6.0,
             "every other value x (1 + 6/sqrt(n))"),
        Kind("cat100u", "categorical", _categorical(100, False), 10.0,
             "every other value x (1 + 10/sqrt(n))"),
        Kind("cat1000z", "categorical", _categorical(1000, True), 20.0,
             "every other value x (1 + 20/sqrt(n))"),
        Kind("cat10000u", "categorical", _categorical(10_000, False), 30.0,
             "every other value x (1 + 30/sqrt(n))"),
    ]
}  # fmt: skip
SHIFTS = {name: k.shift for name, k in KINDS.items()}

# The shared cases: method label -> {tool: that tool's name for it}, per profile kind.
SHARED: dict[str, dict[str, dict[str, str]]] = {
    "numeric": {
        "ks": {"modelwatch": "ks", "Evidently": "ks", "NannyML": "kolmogorov_smirnov"},
        "wasserstein": {"modelwatch": "wasserstein", "Evidently": "wasserstein",
                        "NannyML": "wasserstein"},
        "jensen_shannon": {"modelwatch": "jensen_shannon", "Evidently": "jensenshannon",
                           "NannyML": "jensen_shannon"},
        "hellinger": {"modelwatch": "hellinger", "Evidently": "hellinger", "NannyML": "hellinger"},
        "psi": {"modelwatch": "psi", "Evidently": "psi"},
    },
    "categorical": {
        "chi2": {"modelwatch": "chi2", "Evidently": "chisquare", "NannyML": "chi2"},
        "jensen_shannon": {"modelwatch": "jensen_shannon", "Evidently": "jensenshannon",
                           "NannyML": "jensen_shannon"},
        "hellinger": {"modelwatch": "hellinger", "Evidently": "hellinger", "NannyML": "hellinger"},
        "psi": {"modelwatch": "psi", "Evidently": "psi"},
        "l_infinity": {"modelwatch": "l_infinity", "NannyML": "l_infinity"},
    },
}  # fmt: skip


def default_refs(size: int) -> int:
    """References per cell (x `--per-ref` windows each side): 10 up to 1,000 rows, 5 at
    10,000, 3 beyond (Evidently's exact KS, Wasserstein and Hellinger cost ~0.1 s a window at
    1,000 rows on a shared core, ~0.5 s at 10,000)."""
    return 10 if size <= 1000 else 5 if size <= 10_000 else 3


def reference_size(size: int) -> int:
    return min(max(10 * size, REFERENCE_MIN), max(REFERENCE_MAX, size))


# ----------------------------------------------------------------------------------------- tools


class Fitted(Protocol):
    def score(self, current: Any) -> Scores: ...


@dataclass(frozen=True)
class Tool:
    """A drift tool: its name and how it fits a reference for some methods of a column kind."""

    name: str
    fit: Callable[[Any, str, Sequence[str], int], Fitted]  # (reference, kind, methods, window)


@dataclass
class _Ours:
    spec: Any
    reference: Any
    methods: Sequence[str]

    def score(self, current: Any) -> Scores:
        cur = self.spec.profile(current)
        out: Scores = {}
        for name in self.methods:
            d = get_detector(name)
            r = compare(d, self.reference, cur, Bound(d.default_threshold, "constant"))
            out[name] = (_logp(1.0 if r.p_value is None else r.p_value), r.status == "drift")
        return out


def _fit_ours(reference: Any, kind: str, methods: Sequence[str], window: int) -> Fitted:
    spec = spec_from_reference("x", reference, kind=kind)  # type: ignore[arg-type]
    return _Ours(spec, spec.profile(reference), methods)


MODELWATCH = Tool("modelwatch", _fit_ours)


def evidently_tool() -> Tool:
    """Evidently 0.7's registered stat tests (imported here, once: ~4 s)."""
    from evidently.legacy.calculations.stattests.registry import get_stattest
    from evidently.legacy.core import ColumnType

    p_valued = {"ks", "chisquare", "z"}

    @dataclass
    class Ev:
        reference: pd.Series
        ctype: Any
        tests: dict[str, Any] = field(default_factory=dict)

        def score(self, current: Any) -> Scores:
            cur = pd.Series(current)
            out: Scores = {}
            for name, test in self.tests.items():
                r = test(self.reference, cur, self.ctype, None)
                s = _logp(r.drift_score) if name in p_valued else float(r.drift_score)
                out[name] = (s, bool(r.drifted))
            return out

    def fit(reference: Any, kind: str, methods: Sequence[str], window: int) -> Fitted:
        ctype = ColumnType.Numerical if kind == "numeric" else ColumnType.Categorical
        ref = pd.Series(reference)
        return Ev(ref, ctype, {m: get_stattest(ref, ref, ctype, m) for m in methods})

    return Tool("Evidently", fit)


def nannyml_tool() -> Tool:
    """NannyML 0.13's univariate drift methods with their default thresholds."""
    import logging

    from nannyml.chunk import SizeBasedChunker
    from nannyml.drift.univariate.calculator import DEFAULT_THRESHOLDS
    from nannyml.drift.univariate.methods import FeatureType, MethodFactory

    logging.getLogger("nannyml").setLevel(logging.ERROR)

    @dataclass
    class Nm:
        methods: dict[str, Any]

        def score(self, current: Any) -> Scores:
            cur = pd.Series(current, name="x")
            out: Scores = {}
            for name, m in self.methods.items():
                value = float(m.calculate(cur))
                alarm = bool(m.alert(value))
                out[name] = (_logp(m._p_value) if name == "chi2" else value, alarm)
            return out

    def fit(reference: Any, kind: str, methods: Sequence[str], window: int) -> Fitted:
        ft = FeatureType.CONTINUOUS if kind == "numeric" else FeatureType.CATEGORICAL
        ref = pd.Series(reference, name="x")
        fitted = {}
        for name in methods:
            m = MethodFactory.create(
                name, ft, chunker=SizeBasedChunker(window), threshold=DEFAULT_THRESHOLDS[name]
            )
            fitted[name] = m.fit(ref)
        return Nm(fitted)

    return Tool("NannyML", fit)


# --------------------------------------------------------------------------------- simulation


@dataclass
class Arm:
    """One (method, tool) on one cell: scores and default decisions, null and shifted."""

    null: list[float] = field(default_factory=list)
    shift: list[float] = field(default_factory=list)
    null_alarms: int = 0
    shift_alarms: int = 0


@dataclass
class Cell:
    kind: str
    size: int
    arms: dict[tuple[str, str], Arm]  # (method label, tool) -> Arm
    seconds: float = 0.0


def run_cell(
    kind: str,
    size: int,
    tools: Sequence[Tool],
    refs: int,
    per_ref: int,
    shared: Mapping[str, Mapping[str, str]] | None = None,
) -> Cell:
    """Simulate `refs` references with `per_ref` null and shifted windows each; every tool
    scores every window with its name for each shared method."""
    start = time.perf_counter()
    k = KINDS[kind]
    shared = SHARED[k.kind] if shared is None else shared
    delta = k.scale / math.sqrt(size)
    arms = {(m, t.name): Arm() for m, by in shared.items() for t in tools if t.name in by}
    rng = np.random.default_rng(seed_of("peers", kind, size))
    for _ in range(refs):
        reference = k.sample(rng, reference_size(size), 0.0)
        fitted = []
        for t in tools:
            names = {by[t.name]: m for m, by in shared.items() if t.name in by}
            fitted.append((t.name, names, t.fit(reference, k.kind, list(names), size)))
        for shifted in (False, True):
            for _ in range(per_ref):
                current = k.sample(rng, size, delta if shifted else 0.0)
                for tool, names, f in fitted:
                    for name, (score, alarm) in f.score(current).items():
                        _add(arms[names[name], tool], score, alarm, shifted)
    return Cell(kind, size, arms, time.perf_counter() - start)


def _add(arm: Arm, score: float, alarm: bool, shifted: bool) -> None:
    if shifted:
        arm.shift.append(score)
        arm.shift_alarms += alarm
    else:
        arm.null.append(score)
        arm.null_alarms += alarm


def matched_power(null: Sequence[float], shifted: Sequence[float], far: float) -> float:
    """Power at false-alarm rate exactly `far` on these null scores: reject above the null's
    upper `far` quantile, and at it with the probability that makes the null rate `far`."""
    s0, s1 = np.asarray(null, dtype=float), np.asarray(shifted, dtype=float)
    allowed = far * s0.size
    t = np.sort(s0)[::-1][min(int(allowed), s0.size - 1)]  # the threshold's value
    above, at = np.sum(s0 > t), np.sum(s0 == t)
    gamma = min(max((allowed - above) / at, 0.0), 1.0)
    return float(np.mean(s1 > t) + gamma * np.mean(s1 == t))


# ---------------------------------------------------------------------------------------- table

HEADER = [
    "column",
    "window / reference",
    "method",
    "tool",
    "FAR at default [95%]",
    "power at default",
    "power at matched FAR",
]


def rows(cells: Sequence[Cell], far: float) -> list[list[str]]:
    """One row per (cell, method, tool), in kind, size, method, tool order."""
    out = []
    for c in cells:
        for (method, tool), a in c.arms.items():
            n0, n1 = len(a.null), len(a.shift)
            lo, hi = wilson(a.null_alarms, n0)
            out.append([
                c.kind, f"{c.size:,} / {reference_size(c.size):,}", method, tool,
                f"{a.null_alarms / n0:.3f} [{lo:.3f}, {hi:.3f}]",
                f"{a.shift_alarms / n1:.2f}", f"{matched_power(a.null, a.shift, far):.2f}",
            ])  # fmt: skip
    return out


def summary(cells: Sequence[Cell], far: float) -> list[list[str]]:
    """Per (kind, size): each tool's best matched-FAR power over the shared methods, and
    modelwatch's minus the best peer's per method (negative: a peer is more powerful)."""
    out = []
    for c in cells:
        methods = sorted({m for m, _ in c.arms})
        gaps = []
        for m in methods:
            ours = c.arms.get((m, "modelwatch"))
            peers = [a for (mm, t), a in c.arms.items() if mm == m and t != "modelwatch"]
            if ours and peers:
                best = max(matched_power(a.null, a.shift, far) for a in peers)
                gaps.append(f"{m} {matched_power(ours.null, ours.shift, far) - best:+.2f}")
        out.append([c.kind, f"{c.size:,}", ", ".join(gaps)])
    return out


def per_reference_power(
    null: Sequence[float], shifted: Sequence[float], per_ref: int, far: float
) -> float:
    """Power at `far` with each reference's windows (``per_ref`` consecutive null and shifted
    scores, as `run_cell` adds them) thresholded at their own null quantile, averaged: the
    power a user with one reference sees. Pooling references, as `matched_power` on the whole
    cell does, also penalises a raw distance whose null moves with the reference."""
    s0, s1 = np.asarray(null, dtype=float), np.asarray(shifted, dtype=float)
    refs = s0.size // per_ref
    return float(np.mean([matched_power(s0[r * per_ref:(r + 1) * per_ref],
                                        s1[r * per_ref:(r + 1) * per_ref], far)
                          for r in range(refs)]))  # fmt: skip


def intervals(cells: Sequence[Cell], far: float, per_ref: int, draws: int = 400) -> list[list[str]]:
    """Per (cell, method, peer): modelwatch's power minus the peer's at matched FAR, pooled with
    a paired bootstrap 95% interval over windows, and per reference with one over references
    (seeded: rerunning gives the same intervals)."""
    out = []
    for c in cells:
        rng = np.random.default_rng(seed_of("intervals", c.kind, c.size))
        for (m, tool), a in c.arms.items():
            ours = c.arms.get((m, "modelwatch"))
            if tool == "modelwatch" or ours is None:
                continue
            o0, o1, p0, p1 = (
                np.asarray(x, dtype=float) for x in (ours.null, ours.shift, a.null, a.shift)
            )
            n0, n1, refs = o0.size, o1.size, o0.size // per_ref
            pooled, by_ref = [], []
            for _ in range(draws):
                i0, i1 = rng.integers(0, n0, n0), rng.integers(0, n1, n1)
                pooled.append(
                    matched_power(o0[i0], o1[i1], far) - matched_power(p0[i0], p1[i1], far)
                )
                idx = np.concatenate([np.arange(r * per_ref, (r + 1) * per_ref)
                                      for r in rng.integers(0, refs, refs)])  # fmt: skip
                by_ref.append(per_reference_power(o0[idx], o1[idx], per_ref, far)
                              - per_reference_power(p0[idx], p1[idx], per_ref, far))  # fmt: skip
            lo, hi = np.quantile(pooled, [0.025, 0.975])
            rlo, rhi = np.quantile(by_ref, [0.025, 0.975])
            d = matched_power(o0, o1, far) - matched_power(p0, p1, far)
            r_o, r_p = (
                per_reference_power(o0, o1, per_ref, far),
                per_reference_power(p0, p1, per_ref, far),
            )
            per_ref_cell = f"{r_o:.3f} / {r_p:.3f}, {r_o - r_p:+.3f} [{rlo:+.3f}, {rhi:+.3f}]"
            pooled_cell = f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
            out.append(
                [c.kind, f"{c.size:,}", m, tool, f"{n0:,} + {n1:,}", pooled_cell, per_ref_cell]
            )
    return out


INTERVALS_HEADER = ["column", "window", "method", "peer", "windows (clean + shifted)",
                    "modelwatch - peer, pooled [95%]",
                    "per reference: modelwatch / peer, difference [95%]"]  # fmt: skip

TOOLS = ("modelwatch", "Evidently", "NannyML")


def compact(cells: Sequence[Cell], far: float, kind: str) -> tuple[list[str], list[list[str]]]:
    """The README's table for one profile kind: per (column, window) and shared method, the
    power at matched FAR of modelwatch / Evidently / NannyML ("—": the tool lacks the method),
    and each tool's worst false-alarm rate at its default decision over those methods."""
    methods = list(SHARED[kind])
    header = ["column", "window", *methods, "worst FAR at default"]
    out = []
    for c in (c for c in cells if KINDS[c.kind].kind == kind):
        row = [c.kind, f"{c.size:,}"]
        for m in methods:
            arms = [c.arms.get((m, t)) for t in TOOLS]
            row.append(" / ".join("—" if a is None else f"{matched_power(a.null, a.shift, far):.2f}"
                                  for a in arms))  # fmt: skip
        worst = [max((a.null_alarms / len(a.null) for (_, t), a in c.arms.items() if t == tool),
                     default=float("nan")) for tool in TOOLS]  # fmt: skip
        row.append(" / ".join(f"{w:.2f}" for w in worst))
        out.append(row)
    return header, out


def _pooled_interval(
    ours: Arm, theirs: Arm, far: float, rng: np.random.Generator, draws: int = 400
) -> tuple[float, float]:
    """A paired bootstrap 95% interval (over windows) of modelwatch's matched-FAR power minus
    a peer's on the same windows."""
    o0, o1, p0, p1 = (np.asarray(x, dtype=float) for x in (ours.null, ours.shift, theirs.null,
                                                            theirs.shift))  # fmt: skip
    diffs = []
    for _ in range(draws):
        i0, i1 = rng.integers(0, o0.size, o0.size), rng.integers(0, o1.size, o1.size)
        diffs.append(matched_power(o0[i0], o1[i1], far) - matched_power(p0[i0], p1[i1], far))
    lo, hi = np.quantile(diffs, [0.025, 0.975])
    return float(lo), float(hi)


def gaps(cells: Sequence[Cell], far: float) -> tuple[list[str], list[list[str]]]:
    """The README's table: per column kind (rows) and window size (columns), modelwatch's
    smallest difference to the best peer at matched FAR over the shared methods, with its
    paired 95% interval and the method, and its largest; last, each tool's worst false-alarm
    rate at its default decision over the kind's cells."""
    sizes = sorted({c.size for c in cells})
    kinds = [k for k in KINDS if any(c.kind == k for c in cells)]
    header = ["column", *(f"{n:,} rows" for n in sizes), "worst FAR at default"]
    out = []
    for kind in kinds:
        row = [kind]
        for size in sizes:
            cell = next((c for c in cells if c.kind == kind and c.size == size), None)
            row.append("" if cell is None else _gap_cell(cell, far))
        worst = [max((a.null_alarms / len(a.null) for c in cells if c.kind == kind
                      for (_, t), a in c.arms.items() if t == tool), default=float("nan"))
                 for tool in TOOLS]  # fmt: skip
        row.append(" / ".join(f"{w:.2f}" for w in worst))
        out.append(row)
    return header, out


def _gap_cell(cell: Cell, far: float) -> str:
    found = []  # (modelwatch - best peer, method, best peer's arm)
    for m in sorted({m for m, _ in cell.arms}):
        ours = cell.arms.get((m, "modelwatch"))
        peers = [a for (mm, t), a in cell.arms.items() if mm == m and t != "modelwatch"]
        if ours and peers:
            best = max(peers, key=lambda a: matched_power(a.null, a.shift, far))
            gap = matched_power(ours.null, ours.shift, far) - matched_power(
                best.null, best.shift, far
            )
            found.append((gap, m, ours, best))
    if not found:
        return "—"
    gap, m, ours, best = min(found, key=lambda f: f[0])
    lo, hi = _pooled_interval(
        ours, best, far, np.random.default_rng(seed_of("gaps", cell.kind, cell.size, m))
    )
    top = max(found, key=lambda f: f[0])
    return f"{gap:+.2f} [{lo:+.2f}, {hi:+.2f}] {m}; max {top[0]:+.2f} {top[1]}"


def markdown(header: Sequence[str], table: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in table])


def plain(header: Sequence[str], table: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in table)) for i, h in enumerate(header)]
    fmt = "  ".join(f"{{:{w}s}}" for w in widths)
    return "\n".join([fmt.format(*header), *(fmt.format(*r) for r in table)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 100,1000; 5 x 10 windows")
    parser.add_argument("--sizes", help="window sizes (default 30,100,1000,10000)")
    parser.add_argument("--kinds", help=f"column kinds (default all: {','.join(KINDS)})")
    parser.add_argument("--refs", type=int, help="references per cell (default by size)")
    parser.add_argument("--per-ref", type=int, default=10, help="null and shifted windows each")
    parser.add_argument("--far", type=float, default=FAR, help="the matched false-alarm rate")
    parser.add_argument("--tools", default="Evidently,NannyML", help="peers to run")
    parser.add_argument("--methods", help="shared methods to run (default all)")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument(
        "--intervals",
        action="store_true",
        help="also modelwatch - each peer with 95%% intervals, pooled and per reference",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or ("100,1000" if args.quick else
                                              "30,100,1000,10000")).split(",")]  # fmt: skip
    kinds = args.kinds.split(",") if args.kinds else list(KINDS)
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        print(f"unknown column kind {bad[0]!r}; valid: {', '.join(KINDS)}", file=sys.stderr)
        return 2
    if not 0 < args.far < 1:
        print(f"--far {args.far} must lie in (0, 1)", file=sys.stderr)
        return 2
    peers = {"Evidently": evidently_tool, "NannyML": nannyml_tool}
    unknown = [p for p in args.tools.split(",") if p and p not in peers]
    if unknown:
        print(f"unknown tool {unknown[0]!r}; valid: {', '.join(peers)}", file=sys.stderr)
        return 2
    methods = args.methods.split(",") if args.methods else None
    known = {m for by_kind in SHARED.values() for m in by_kind}
    if methods and (stray := [m for m in methods if m not in known]):
        print(f"unknown method {stray[0]!r}; valid: {', '.join(sorted(known))}", file=sys.stderr)
        return 2
    tools = [MODELWATCH, *(peers[p]() for p in args.tools.split(",") if p)]
    start = time.perf_counter()
    cells = []
    for kind in kinds:
        for size in sizes:
            refs = args.refs or (5 if args.quick else default_refs(size))
            shared = {m: by for m, by in SHARED[KINDS[kind].kind].items()
                      if methods is None or m in methods}  # fmt: skip
            cells.append(run_cell(kind, size, tools, refs, args.per_ref, shared))
            print(f"# {kind} {size}: {cells[-1].seconds:.1f} s", file=sys.stderr, flush=True)
    show = markdown if args.markdown else plain
    print(show(HEADER, rows(cells, args.far)))
    for kind in SHARED:
        header, table = compact(cells, args.far, kind)
        if table:  # --kinds may leave a profile kind without cells
            print()
            print(show(header, table))
    print()
    print(show(["column", "window", "modelwatch - best peer, power at matched FAR"],
               summary(cells, args.far)))  # fmt: skip
    print()
    print(show(*gaps(cells, args.far)))
    if args.intervals:
        print()
        print(show(INTERVALS_HEADER, intervals(cells, args.far, args.per_ref)))
    print(f"\n{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
