"""Evaluate a window: every column, overall and per slice, against a reference ProfileSet."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from monitor.detectors._base import (
    DEFAULT_ALPHA,
    MIN_N,
    SCHEMA_METHOD,
    ConstantThresholds,
    Detector,
    DriftResult,
    Status,
    ThresholdStrategy,
    get_detector,
)
from monitor.detectors._evidence import DEFAULT_EVIDENCE_ALPHA, exact_counts
from monitor.detectors._respec import rebin
from monitor.detectors._slice_columns import with_slice_columns
from monitor.detectors.compare import benjamini_hochberg, compare, drift_result
from monitor.errors import InputError
from monitor.profiles import OVERALL, ProfileSet, parse_slice_key, spec_of
from monitor.profiles.kinds import Profile

DEFAULT_METHODS: Mapping[str, tuple[str, ...]] = {
    "numeric": ("wasserstein",),
    "categorical": ("jensen_shannon",),
}
# Numeric columns with one bucket per distinct value (flags, hard labels, ratings): their
# values are classes more often than magnitudes, and a mass shift between two values must not
# be scaled down by how far apart they sit (wasserstein/sd), so they default like categories.
DISCRETE_METHODS: tuple[str, ...] = ("jensen_shannon",)
DEFAULT_DRIFT_SHARE = 0.5


def evaluate(
    reference: ProfileSet,
    current: ProfileSet,
    columns: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
    thresholds: ThresholdStrategy | None = None,
    alpha: float = DEFAULT_ALPHA,
    min_n: int = MIN_N,
    evidence_alpha: float = DEFAULT_EVIDENCE_ALPHA,
) -> list[DriftResult]:
    """Drift results for each column (overall, then each slice) and method.

    Methods: `methods` that accept the column's kind, else the kind's default, plus
    ``missing_rate`` for columns with nulls on either side. Verdicts need value > threshold
    and a Benjamini–Hochberg-adjusted p-value < `alpha` across all results of this call; on
    exact-count columns an adjusted p-value < `evidence_alpha` is drift whatever the value.

    Schema changes are results, not errors (method ``schema``): a reference column the current
    data lacks, or holds as another kind, is ``missing``; with `columns` unset, a current column
    the reference lacks is ``new``. A current profile built on other edges or categories than
    the reference (a replaced baseline) is moved onto the reference's spec first.
    Slice columns are compared too (overall only), from their slices' row counts where a
    side did not profile them.
    """
    reference, current = with_slice_columns(reference, current)
    strategy = thresholds or ConstantThresholds()
    chosen = [get_detector(m) for m in methods or ()]
    keys = [OVERALL, *_slice_keys(reference, current)]
    wanted = _columns(reference, current, columns)
    comparable = [c for c in wanted if _comparable(reference, current, c)]
    current = _on_reference_specs(reference, current, comparable)
    results = _schema_results(reference, current, wanted, comparable, new=not columns)
    slices = [(key, parse_slice_key(key)) for key in keys]  # once, not per column and method
    for column in comparable:
        ref_all = reference.get(column)
        for detector in _detectors_for(ref_all, current.get(column), chosen):
            bound = strategy.bound(detector, column)
            evidence = evidence_alpha if detector.evidence and exact_counts(ref_all) else None
            for key, slice_ in slices:
                if slice_ is not None and column in slice_:
                    continue  # a slice column within its own slice holds one value: trivial
                ref, cur = _pair(reference, current, key, column, ref_all)
                sizes = (detector.size(ref), detector.size(cur))
                if min(sizes) < min_n:  # what `compare` returns, without its pair and checks
                    results.append(
                        drift_result(detector, ref, bound, slice_, sizes, evidence, min_n)
                    )
                    continue
                results.append(
                    compare(detector, ref, cur, bound, slice_, min_n, evidence_alpha=evidence_alpha)
                )
    return benjamini_hochberg(results, alpha)


def dataset_drift(results: Sequence[DriftResult], share: float = DEFAULT_DRIFT_SHARE) -> bool:
    """True when at least `share` of the columns drift overall (Evidently's convention)."""
    overall = [r for r in results if r.slice is None]
    columns = {r.column for r in overall}
    drifted = {r.column for r in overall if r.status == "drift"}
    return bool(columns) and len(drifted) >= share * len(columns)


def _columns(
    reference: ProfileSet, current: ProfileSet, columns: Sequence[str] | None
) -> list[str]:
    wanted = list(columns) if columns else reference.columns
    if columns:  # the slice columns are compared whatever columns were asked for
        both = [c for c in reference.slice_by if c in reference.specs and c in current.specs]
        wanted += [c for c in both if c not in wanted]
    for col in wanted:
        if col not in reference.specs:
            raise InputError(f"column '{col}' not in the reference")
    return wanted


def _comparable(reference: ProfileSet, current: ProfileSet, column: str) -> bool:
    spec = current.specs.get(column)
    return spec is not None and spec.kind == reference.specs[column].kind


def _on_reference_specs(
    reference: ProfileSet, current: ProfileSet, columns: Sequence[str]
) -> ProfileSet:
    """`current` with every profile of `columns` on the reference's spec of that column."""
    moved = [c for c in columns if current.specs[c].fingerprint != reference.specs[c].fingerprint]
    if not moved:
        return current
    profiles = dict(current.profiles)
    for (key, column), profile in current.profiles.items():
        if column in moved:
            on_ref = rebin(profile, reference.specs[column])
            assert on_ref is not None  # same kind, checked by _comparable
            profiles[(key, column)] = on_ref
    specs = {**current.specs, **{c: reference.specs[c] for c in moved}}
    return ProfileSet(profiles, dict(current.rows), current.slice_by, specs)


def _schema_results(
    reference: ProfileSet,
    current: ProfileSet,
    wanted: Sequence[str],
    comparable: Sequence[str],
    new: bool,
) -> list[DriftResult]:
    out = [
        _schema_result(reference.get(c), "missing", reference.get(c).n, 0)
        for c in wanted
        if c not in comparable
    ]
    if new:
        added = [c for c in current.columns if c not in reference.specs]
        out += [_schema_result(current.get(c), "new", 0, current.get(c).n) for c in added]
    return out


def _schema_result(profile: Profile, status: Status, n_ref: int, n_cur: int) -> DriftResult:
    return DriftResult(
        column=profile.spec.column,
        slice=None,
        kind=profile.kind,
        method=SCHEMA_METHOD,
        value=None,
        threshold=0.0,
        p_value=None,
        n_reference=n_ref,
        n_current=n_cur,
        status=status,
    )


def _slice_keys(reference: ProfileSet, current: ProfileSet) -> list[str]:
    return sorted(set(reference.slice_keys) | set(current.slice_keys))


def _detectors_for(ref: Profile, cur: Profile, chosen: Sequence[Detector]) -> list[Detector]:
    picked = [d for d in chosen if ref.kind in d.kinds and d.name != "missing_rate"]
    if not picked:
        picked = [get_detector(m) for m in default_methods(ref)]
    wants_missing = any(d.name == "missing_rate" for d in chosen)
    if wants_missing or ref.null_count or cur.null_count:
        picked.append(get_detector("missing_rate"))
    return picked


def default_methods(profile: Profile) -> tuple[str, ...]:
    """The methods a column gets when none of the chosen ones accepts it."""
    if profile.spec.discrete:
        return DISCRETE_METHODS
    return DEFAULT_METHODS[profile.kind]


def _pair(
    reference: ProfileSet, current: ProfileSet, key: str, column: str, ref_all: Profile
) -> tuple[Profile, Profile]:
    # A slice absent on one side compares an empty profile: insufficient_data, not an error.
    ref = reference.profiles.get((key, column)) or spec_of(ref_all).empty()
    cur = current.profiles.get((key, column)) or spec_of(ref_all).empty()
    return ref, cur
