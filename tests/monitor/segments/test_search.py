"""The pruned lattice search finds what an exhaustive count of every slice finds."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from monitor.segments._search import Scorer, search


def _exhaustive(codes: list[np.ndarray], cards: list[int], err: np.ndarray, scorer: Scorer,
                top: int) -> list[float]:  # fmt: skip
    scores: list[float] = []
    for level in (1, 2, 3):
        for combo in combinations(range(len(cards)), level):
            shape = tuple(cards[f] for f in combo)
            key = np.ravel_multi_index(tuple(codes[f] for f in combo), shape)
            size = np.bincount(key, minlength=int(np.prod(shape))).astype(float)
            errsum = np.bincount(key, weights=err, minlength=size.size)
            sc = scorer.score(size, errsum)[(size >= scorer.sigma) & (size < scorer.n)]
            scores += sc[sc > 0].tolist()
    return sorted(scores, reverse=True)[:top]


def test_pruning_keeps_the_exhaustive_top_k() -> None:
    for seed in range(5):
        rng = np.random.default_rng(seed)
        n, cards = 20_000, [3, 4, 2, 5, 3, 4, 3, 2, 4, 3]
        codes = [rng.integers(0, k, n) for k in cards]
        weak = (codes[0] == 1) & (codes[1] == 2) & (codes[3] == 0)
        err = (rng.random(n) < np.where(weak, 0.8, 0.05)).astype(float)
        scorer = Scorer(n, float(err.mean()), float(err.max()), 0.95, 200)
        result = search(codes, cards, err, scorer, 3, 5, squares=False)
        ev = result.evaluated
        count, errsum = np.concatenate(ev.count), np.concatenate(ev.errsum)
        found = scorer.score(count, errsum)[count < n]
        ours = sorted(found[found > 0].tolist(), reverse=True)[:5]
        assert np.allclose(ours, _exhaustive(codes, cards, err, scorer, 5))
        best = search(codes, cards, err, scorer, 3, 1, squares=False)  # a high threshold early
        assert best.combos_pruned > 0 and best.combos_counted < result.combos_counted
        ev = best.evaluated
        found = scorer.score(np.concatenate(ev.count), np.concatenate(ev.errsum))
        assert np.isclose(found.max(), ours[0])


def test_the_upper_bound_bounds_every_child() -> None:
    rng = np.random.default_rng(3)
    scorer = Scorer(10_000, 0.1, 1.0, 0.95, 50)
    size_ub = rng.integers(0, 3000, 200).astype(float)
    err_ub = np.minimum(size_ub, rng.integers(0, 1000, 200)).astype(float)
    bound = scorer.upper_bound(size_ub, err_ub)
    for s_ub, e_ub, b in zip(size_ub, err_ub, bound, strict=True):
        for s in np.linspace(50, max(s_ub, 50), 25):
            if s <= s_ub:
                e = min(e_ub, s)
                assert scorer.score(np.array([s]), np.array([e]))[0] <= b + 1e-9
