"""Column specs: the reference-derived binning every profile of a column shares."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from monitor.errors import InputError
from monitor.profiles._binning import Kind
from monitor.profiles._parallel import map_columns
from monitor.profiles.categorical import profile_categorical, value_counts
from monitor.profiles.kinds import Profile
from monitor.profiles.numeric import as_float_array, profile_numeric

if TYPE_CHECKING:
    from numpy.typing import NDArray

KINDS: tuple[Kind, ...] = ("numeric", "categorical")
DEFAULT_BINS = 64
# Categories kept by default: every value of a reference with at most EXACT_CATEGORIES of them
# (exact per-value counts, the peers' tables), else the top DEFAULT_TOP_K (`kept_categories`).
DEFAULT_TOP_K = 50
EXACT_CATEGORIES = 256
# Reference categories beyond the top K are remembered (up to this many) so that a value the
# reference never had can be told apart from a rare one.
MAX_TAIL = 10_000
QUANTILE_SAMPLE = 200_000
# Share of a categorical reference's rows (a seeded binomial split of each category's count)
# that chooses the top K when there are more than K categories; the other rows test them.
SELECTION_SHARE = 0.25
_SELECTION_SEED = 20261205  # with the counts, seeds the split (`_selection_seed`)


@dataclass(frozen=True)
class ColumnSpec:
    """How one column is binned: quantile edges (numeric) or top-K categories (categorical).

    Numeric buckets are ``[underflow, [e0,e1), ..., [e_{B-1}, e_B], overflow]``: ``B`` interior
    bins on the reference's quantile edges plus one bucket each for values below the reference
    minimum and above its maximum. A reference with at most ``bins`` distinct values gets one
    bucket per value (exact counts); in other columns a heavily repeated value gets a bucket
    of its own. Edges may repeat (``[e, e]`` is the bucket of exactly ``e``).
    Categorical buckets are ``[*categories, other, unseen]``: ``other`` holds values the
    reference had beyond its top K (the ``tail``), ``unseen`` values the reference never had.
    When the reference had more than ``MAX_TAIL`` tail values (``tail_complete`` false), a
    value outside the top K cannot be classified and counts as ``other``.

    Categorical specs of references with more than K values choose the top K on a selection
    share of the reference (``selection_counts``: its rows per bucket; ``reference_counts``:
    all reference rows per bucket), so that the tests can compare the current window with the
    held-out rest, whose counts the choice did not see, or, for a value every split would
    have chosen, with its whole count (see `monitor.detectors._holdout`).
    Specs stored before these existed have neither; their tests use the whole reference.
    """

    column: str
    kind: Kind
    edges: tuple[float, ...] = ()
    categories: tuple[str, ...] = ()
    tail: frozenset[str] = field(default_factory=frozenset)
    tail_complete: bool = True
    # Numeric with one bucket per distinct reference value: compared like categories by default.
    discrete: bool = False
    selection_counts: tuple[int, ...] = ()
    reference_counts: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"column '{self.column}': unknown kind {self.kind!r}")
        if self.kind == "numeric":
            pairs = zip(self.edges, self.edges[1:], strict=False)
            if not self.edges or any(b < a for a, b in pairs):
                raise InputError(f"column '{self.column}': numeric spec needs sorted edges")
            if self.discrete and (len(self.edges) < 2 or self.edges[-1] != self.edges[-2]):
                raise InputError(f"column '{self.column}': discrete spec needs a closing edge")
        elif self.discrete:
            raise InputError(f"column '{self.column}': only numeric specs can be discrete")
        elif len(set(self.categories)) != len(self.categories):
            raise InputError(f"column '{self.column}': categories must be unique")
        if self.selection_counts or self.reference_counts:
            self._check_selection()

    def _check_selection(self) -> None:
        a, r = np.asarray(self.selection_counts), np.asarray(self.reference_counts)
        if self.kind != "categorical" or a.shape != r.shape or a.size != self.n_buckets:
            raise InputError(f"column '{self.column}': selection counts do not match its buckets")
        if (a < 0).any() or (a > r).any():
            raise InputError(f"column '{self.column}': selection counts exceed the reference's")

    @cached_property
    def n_buckets(self) -> int:
        """Number of buckets a profile of this spec counts (nulls not included)."""
        if self.kind == "numeric":
            return len(self.edges) + 1
        return len(self.categories) + 2

    @cached_property
    def edges_array(self) -> NDArray[np.float64]:
        """The edges as a float64 array."""
        return np.asarray(self.edges, dtype=np.float64)

    @cached_property
    def fingerprint(self) -> str:
        """A stable hash of the spec: profiles merge only when fingerprints match."""
        return hashlib.sha256(orjson.dumps(self.to_dict())).hexdigest()[:32]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description; `spec_from_dict` restores it exactly."""
        out: dict[str, Any] = {
            "column": self.column,
            "kind": self.kind,
            "edges": list(self.edges),
            "categories": list(self.categories),
            "tail": sorted(self.tail),
            "tail_complete": self.tail_complete,
        }
        # Only when set, so specs stored before the flag existed keep their fingerprints.
        if self.discrete:
            out["discrete"] = True
        if self.selection_counts:
            out["selection_counts"] = list(self.selection_counts)
            out["reference_counts"] = list(self.reference_counts)
        return out

    def empty(self) -> Profile:
        """A profile of no rows (built once per spec: profiles are immutable, and a slice
        absent from a window compares one for each of its columns)."""
        return self._empty

    @cached_property
    def _empty(self) -> Profile:
        return self.profile(np.empty(0, dtype=np.float64 if self.kind == "numeric" else object))

    def profile(self, values: Any) -> Profile:
        """Profile a 1-d array, sequence or pandas Series; None/NaN count as nulls."""
        if self.kind == "numeric":
            return profile_numeric(self, values)
        return profile_categorical(self, values)


def spec_of(profile: Profile) -> ColumnSpec:
    """A profile's spec as the `ColumnSpec` it is (the profile modules see it as a `Binning`)."""
    spec = profile.spec
    assert isinstance(spec, ColumnSpec), f"column '{spec.column}': spec is not a ColumnSpec"
    return spec


def spec_from_dict(data: dict[str, Any]) -> ColumnSpec:
    """Inverse of `ColumnSpec.to_dict`."""
    return ColumnSpec(
        column=str(data["column"]),
        kind=data["kind"],
        edges=tuple(float(e) for e in data["edges"]),
        categories=tuple(str(c) for c in data["categories"]),
        tail=frozenset(str(t) for t in data["tail"]),
        tail_complete=bool(data["tail_complete"]),
        discrete=bool(data.get("discrete", False)),
        selection_counts=tuple(int(c) for c in data.get("selection_counts", ())),
        reference_counts=tuple(int(c) for c in data.get("reference_counts", ())),
    )


def infer_kind(column: str, values: Any) -> Kind:
    """Numbers are numeric; strings, bools and objects are categorical."""
    dtype = getattr(values, "dtype", None)
    if dtype is None:
        values = np.asarray(values, dtype=object)
        sample = [v for v in values[:1000] if v is not None and v == v]
        numeric = bool(sample) and all(
            isinstance(v, int | float | np.number) and not isinstance(v, bool | np.bool_)
            for v in sample
        )
        return "numeric" if numeric else "categorical"
    kind_char = getattr(dtype, "kind", "O")
    return "numeric" if kind_char in "iuf" else "categorical"


def spec_from_reference(
    column: str,
    values: Any,
    kind: Kind | None = None,
    bins: int = DEFAULT_BINS,
    top_k: int | None = None,
) -> ColumnSpec:
    """Derive a column's spec from reference values (quantile edges or top-K categories;
    `top_k` None: `kept_categories`' default)."""
    if bins < 1 or (top_k is not None and top_k < 1):
        raise InputError(f"column '{column}': bins and top_k must be >= 1")
    kind = kind or infer_kind(column, values)
    if kind == "numeric":
        edges, discrete = _quantile_edges(column, values, bins)
        return ColumnSpec(column, "numeric", edges=edges, discrete=discrete)
    return _categorical_spec(column, values, top_k)


def _quantile_edges(column: str, values: Any, bins: int) -> tuple[tuple[float, ...], bool]:

    x = as_float_array(column, values)
    x = x[np.isfinite(x)]
    if x.size == 0:
        raise InputError(f"column '{column}': no finite reference values to derive bins from")
    # Edges are a binning choice, not a statistic: past QUANTILE_SAMPLE values they are
    # estimated on a seeded subsample (10x faster at 1M rows); min and max stay exact so the
    # reference never falls into the under/overflow buckets.
    sample = x
    if x.size > QUANTILE_SAMPLE:
        sample = x[np.random.default_rng(0).integers(0, x.size, QUANTILE_SAMPLE)]
    discrete = _discrete_edges(x, sample, bins)
    if discrete is not None:
        return discrete, True
    raw = np.quantile(sample, np.linspace(0.0, 1.0, bins + 1)[1:-1])
    edges = np.unique(np.concatenate([[x.min()], raw, [x.max()]]))
    edges = edges[(edges >= x.min()) & (edges <= x.max())]
    return _isolate_atoms(edges, raw, x), False


def _discrete_edges(
    x: NDArray[np.float64], sample: NDArray[np.float64], bins: int
) -> tuple[float, ...] | None:
    """One bucket per distinct value when the reference has at most `bins` of them.

    Edges ``(v0, v1, ..., vk, vk)``: each ``[v_i, v_{i+1})`` holds exactly ``v_i`` and the
    closed ``[vk, vk]`` exactly the largest value, so every detector sees exact per-value
    counts (a 0/1 column has two buckets, not one closed ``[0, 1]``).
    """
    if np.unique(sample[: 4 * bins]).size > bins or np.unique(sample).size > bins:
        return None
    distinct = np.unique(x)  # the subsample may have missed a rare value
    if distinct.size > bins:
        return None
    return (*(float(v) for v in distinct), float(distinct[-1]))


def _isolate_atoms(
    edges: NDArray[np.float64], raw: NDArray[np.float64], x: NDArray[np.float64]
) -> tuple[float, ...]:
    """Give each heavy repeated value (a point mass) a bucket of its own.

    A value that fills more than one quantile step is an atom: without this, ``[a, e_next)``
    mixes it with the continuum above it and the closed top bin merges a repeated maximum
    with the values below it, hiding mass moving between them.
    """
    heavy = set(raw[1:][raw[1:] == raw[:-1]].tolist())
    top = float(x.max())
    out: list[float] = []
    for i, e in enumerate(edges.tolist()):
        out.append(e)
        nxt = edges[i + 1] if i + 1 < edges.size else None
        if e in heavy and nxt is not None:
            step = float(np.nextafter(e, np.inf))
            if step < nxt:
                out.append(step)
    if len(out) == 1 or int(np.count_nonzero(x == top)) > 1:
        out.append(top)
    return tuple(out)


def _categorical_spec(column: str, values: Any, top_k: int | None) -> ColumnSpec:

    return categorical_spec_from_counts(column, value_counts(values), top_k)


def kept_categories(n_values: int, top_k: int | None) -> int:
    """How many of a reference's `n_values` categories get buckets: `top_k` when given; by
    default every one up to ``EXACT_CATEGORIES``, else the top ``DEFAULT_TOP_K``.

    Why every value up to 256: with exact per-value counts the tests see what the peers'
    tables see. With a top 50 and `other`, a change spread evenly over 100 equally likely
    values cancels inside `other` (its risen and fallen values), and the tests were behind
    Evidently and NannyML by up to 0.16 of power at an equal false-alarm rate; with a bucket
    per value they are level, and on 256 such values 0.34 ahead of a top 50 at 10,000 rows.
    Why the top 50 beyond: on 1,000 Zipf values its 50 buckets plus `other` concentrate the
    evidence the peers spread over hundreds of near-empty cells (ahead of both by up to
    0.76; a bucket per value there loses 0.3-0.6), and exact counts of a large vocabulary
    would make each window profile as wide as it. The price inside the cap: on skewed
    columns, where a shift sits in the frequent values, `hellinger` and `psi` lose up to 0.46
    against a top 50 (256 Zipf values, 10,000 rows); `top_k=50` keeps it. A bucket costs 8
    bytes of a profile (the spec names every value, `tail` included, either way). Measured:
    docs/concepts/calibration.md, "A bucket for every value up to 256".
    """
    if top_k is not None:
        return top_k
    return n_values if n_values <= EXACT_CATEGORIES else DEFAULT_TOP_K


def categorical_spec_from_counts(
    column: str, counts: Mapping[str, int], top_k: int | None, complete: bool = True
) -> ColumnSpec:
    """A categorical spec from per-category counts (`complete` false: counts were pruned;
    `top_k` None: `kept_categories`' default).

    With at most K categories every one gets a bucket. With more, the top K is chosen on
    a seeded ``SELECTION_SHARE`` binomial split of each count (what a random split of the rows
    would give), not on the counts the tests compare: categories chosen for their high counts
    are over-represented in those counts by construction (the winner's curse), and a test of
    the current window against them alarms on clean data.
    """
    if not counts:
        raise InputError(f"column '{column}': no non-null reference values to derive categories")
    k = kept_categories(len(counts), top_k)
    if len(counts) <= k:
        return _categorical(column, counts, complete, k)
    names = sorted(counts)
    whole = np.array([counts[n] for n in names], dtype=np.int64)
    chosen = np.random.default_rng(_selection_seed(names, whole)).binomial(whole, SELECTION_SHARE)
    spec = _categorical(column, dict(zip(names, chosen.tolist(), strict=True)), complete, k)
    index = {n: i for i, n in enumerate(names)}
    top = [index[c] for c in spec.categories]
    rest = np.ones(len(names), dtype=bool)
    rest[top] = False

    def buckets(v: NDArray[np.int64]) -> tuple[int, ...]:
        return (*v[top].tolist(), int(v[rest].sum()), 0)

    return replace(spec, selection_counts=buckets(chosen), reference_counts=buckets(whole))


def _selection_seed(names: Sequence[str], whole: NDArray[np.int64]) -> int:
    """The split's seed, from the reference's names and counts (reproducible, row order aside).

    Why not one fixed seed: it gives the same uniforms to the same value positions in every
    reference, and among 10,000 values the top 50 are picked largely by the few positions
    with the most extreme uniforms, where a large selection share leaves a small held-out one.
    That is one draw of a random bias repeated in every reference instead of averaging out:
    the held-out counts of the chosen values ran 2.3% low (300 references of 10,000 uniform
    values, 99k rows; 0.2% seeded from the counts), and the tests of 100k-row windows against
    them alarmed on clean data (psi's P(p < 0.05) 0.13).
    """
    h = hashlib.blake2b(digest_size=8, key=_SELECTION_SEED.to_bytes(8, "little"))
    h.update("\0".join(names).encode())
    h.update(np.ascontiguousarray(whole, dtype=np.int64).tobytes())
    return int.from_bytes(h.digest(), "little")


def _categorical(column: str, counts: Mapping[str, int], complete: bool, top_k: int) -> ColumnSpec:
    # Ties broken by name so the spec does not depend on row order.
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    top = tuple(k for k, _ in ranked[:top_k])
    rest = [k for k, _ in ranked[top_k:]]
    return ColumnSpec(
        column,
        "categorical",
        categories=top,
        tail=frozenset(rest[:MAX_TAIL]),
        tail_complete=complete and len(rest) <= MAX_TAIL,
    )


def specs_for(
    columns: Sequence[str],
    frame: Any,
    bins: int = DEFAULT_BINS,
    top_k: int | None = None,
    categorical: Sequence[str] = (),
) -> dict[str, ColumnSpec]:
    """Specs for several columns of a pandas DataFrame, kinds inferred from dtypes.

    Columns named in `categorical` are profiled as categories whatever their dtype (a numeric
    code whose values are names, not magnitudes).
    """

    for col in [*columns, *categorical]:
        if col not in frame.columns:
            raise InputError(f"column '{col}' not found")
    forced = set(categorical)

    def job(c: str) -> ColumnSpec:
        kind: Kind | None = "categorical" if c in forced else None
        return spec_from_reference(c, frame[c], kind=kind, bins=bins, top_k=top_k)

    specs = map_columns(job, columns)
    return dict(zip(columns, specs, strict=True))


def compared_columns(columns: Sequence[str], slice_by: Sequence[str]) -> list[str]:
    """The columns profiled and compared: `columns` plus every slice column not among them.

    A slice column is a column too: its own drift (overall) is reported, not only used to
    split the others.
    """
    return [*columns, *(s for s in slice_by if s not in columns)]
