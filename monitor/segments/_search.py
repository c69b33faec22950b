"""The lattice search: SliceLine's score, evaluated level by level and pruned on upper bounds.

A slice is a conjunction of predicates `feature == code` on distinct features. Level L holds the
slices of L predicates. All slices over one set of features (a "combination") are evaluated at
once: the features' codes are combined into one integer per row and `np.bincount` gives every
cell's size, error sum and squared-error sum in one pass over the rows.

Before a combination of level L is counted, each of its cells gets an upper bound on its score
from its L parents (the slices that drop one predicate): its size and error sum are at most the
smallest of its parents'. A combination is counted only when some cell could still beat the
K-th best score found so far (and reach the minimum support), and a parent that fell short of
the support or had no error never has children — SliceLine's pruning, done with broadcasting
over each combination's grid of cells instead of over a list of candidate slices.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from numpy.typing import NDArray

Combo = tuple[int, ...]
Grid = NDArray[np.float64]


@dataclass
class Evaluated:
    """Every cell whose statistics were computed (support at least the minimum), flattened."""

    combos: list[Combo] = field(default_factory=list)
    cells: list[NDArray[np.int64]] = field(default_factory=list)  # flat cell index per combo
    count: list[Grid] = field(default_factory=list)
    errsum: list[Grid] = field(default_factory=list)
    sqsum: list[Grid] = field(default_factory=list)

    def add(self, combo: Combo, count: Grid, errsum: Grid, sqsum: Grid, sigma: int) -> None:
        flat = np.flatnonzero(count.reshape(-1) >= sigma)
        self.combos.append(combo)
        self.cells.append(flat)
        self.count.append(count.reshape(-1)[flat])
        self.errsum.append(errsum.reshape(-1)[flat])
        self.sqsum.append(sqsum.reshape(-1)[flat])

    def rows(self) -> Iterator[tuple[Combo, int, int]]:
        """(combination, flat cell, position in the concatenated arrays) of every cell."""
        position = 0
        for combo, cells in zip(self.combos, self.cells, strict=True):
            for cell in cells.tolist():
                yield combo, cell, position
                position += 1


@dataclass(frozen=True)
class Scorer:
    """SliceLine's score of a slice of size s and error sum e, and its upper bound."""

    n: int
    mean_error: float
    max_error: float
    alpha: float
    sigma: int

    def score(self, size: Grid, errsum: Grid) -> Grid:
        with np.errstate(divide="ignore", invalid="ignore"):
            sc = self.alpha * ((errsum / size) / self.mean_error - 1) - (1 - self.alpha) * (
                self.n / size - 1
            )
        return np.where(size > 0, sc, -np.inf)

    def upper_bound(self, size_ub: Grid, err_ub: Grid) -> Grid:
        """The best score any slice of size in [sigma, size_ub] and error sum <= err_ub can have.

        The score is monotone on each side of size = err_ub / max_error, so the maximum is at
        sigma, size_ub or that point (clipped into the range).
        """
        best = np.full(size_ub.shape, -np.inf)
        ok = size_ub >= self.sigma
        turn = np.clip(err_ub / self.max_error, self.sigma, np.maximum(size_ub, self.sigma))
        for s in (np.full(size_ub.shape, float(self.sigma)), size_ub, turn):
            with np.errstate(divide="ignore", invalid="ignore"):
                err = np.minimum(err_ub, s * self.max_error)
                sc = self.alpha * ((err / s) / self.mean_error - 1) - (1 - self.alpha) * (
                    self.n / s - 1
                )
            best = np.maximum(best, np.where(ok & (s > 0), sc, -np.inf))
        return best


@dataclass
class SearchResult:
    evaluated: Evaluated
    levels: int
    combos_counted: int
    combos_pruned: int


def _count(
    codes: list[NDArray[np.int64]], cards: list[int], combo: Combo, err: Grid, squares: bool
) -> tuple[Grid, Grid, Grid]:
    shape = tuple(cards[f] for f in combo)
    key = codes[combo[0]].copy()
    for f in combo[1:]:
        key *= cards[f]
        key += codes[f]
    size = int(np.prod(shape))
    count = np.bincount(key, minlength=size).astype(np.float64).reshape(shape)
    errsum: Grid = np.bincount(key, weights=err, minlength=size).astype(np.float64).reshape(shape)
    sqsum = errsum
    if squares:
        sqsum = np.bincount(key, weights=err * err, minlength=size).astype(np.float64)
        sqsum = sqsum.reshape(shape)
    return count, errsum, sqsum


def search(
    codes: list[NDArray[np.int64]],
    cards: list[int],
    err: Grid,
    scorer: Scorer,
    max_level: int,
    top: int,
    squares: bool,
) -> SearchResult:
    """Evaluate the lattice up to `max_level` predicates, pruning what cannot reach the top K."""
    evaluated = Evaluated()
    parents: dict[Combo, tuple[Grid, Grid]] = {}
    best: list[float] = []  # scores of the evaluated cells, the top K kept
    counted = pruned = 0

    def threshold() -> float:
        return max(0.0, best[top - 1]) if len(best) >= top else 0.0

    def record(combo: Combo, count: Grid, errsum: Grid, sqsum: Grid) -> None:
        nonlocal best
        evaluated.add(combo, count, errsum, sqsum, scorer.sigma)
        scores = scorer.score(count, errsum)[count >= scorer.sigma]
        best = sorted([*best, *np.sort(scores)[::-1][:top].tolist()], reverse=True)[:top]
        # a predicate true on every row (a constant feature) splits nothing: no children
        alive = (count >= scorer.sigma) & (errsum > 0) & (count < scorer.n)
        parents[combo] = (np.where(alive, count, 0.0), np.where(alive, errsum, 0.0))

    for f in range(len(cards)):
        record((f,), *_count(codes, cards, (f,), err, squares))
        counted += 1
    level = 1
    while level < max_level:
        level += 1
        singles = sorted(c[0] for c in parents if len(c) == 1 and parents[c][1].any())
        bounds: list[tuple[float, Combo, Grid, Grid]] = []
        for combo in combinations(singles, level):
            ub = _bound(combo, parents)
            if ub is None:
                pruned += 1
                continue
            size_ub, err_ub = ub
            scores = scorer.upper_bound(size_ub, err_ub)
            bounds.append((float(scores.max()), combo, size_ub, err_ub))
        bounds.sort(key=lambda b: -b[0])
        for top_ub, combo, _size_ub, _err_ub in bounds:
            if top_ub <= threshold():
                pruned += 1
                continue
            record(combo, *_count(codes, cards, combo, err, squares))
            counted += 1
        if not any(len(c) == level for c in parents):
            break
    return SearchResult(evaluated, level, counted, pruned)


def _bound(combo: Combo, parents: dict[Combo, tuple[Grid, Grid]]) -> tuple[Grid, Grid] | None:
    """Size and error-sum bounds of every cell of `combo` from its parents; None if one is gone."""
    size_ub: Grid | None = None
    err_ub: Grid | None = None
    for drop in range(len(combo)):
        parent = combo[:drop] + combo[drop + 1 :]
        if parent not in parents:
            return None
        count, errsum = (np.expand_dims(g, drop) for g in parents[parent])
        size_ub = count if size_ub is None else np.minimum(size_ub, count)
        err_ub = errsum if err_ub is None else np.minimum(err_ub, errsum)
    assert size_ub is not None and err_ub is not None
    if not err_ub.any():
        return None
    return size_ub, err_ub
