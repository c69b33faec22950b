"""The lattice search run on one per-row loss: every evaluated cell's sums, score and predicates.

Shared by every mode: with labels the loss is the row's error, estimated it is the row's
expected error under the calibration, for drift it is "the row is from the current window".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from monitor.segments._encode import Encoded
from monitor.segments._report import Segment
from monitor.segments._search import Evaluated, Scorer, search

Arr = NDArray[np.float64]


@dataclass(frozen=True)
class Cells:
    """Each evaluated cell (support at least the minimum): size, loss sums, SliceLine score."""

    count: Arr
    errsum: Arr
    sqsum: Arr
    scores: Arr
    counted: int
    pruned: int
    evaluated: Evaluated
    encoded: Encoded

    def predicates(self, positions: Iterable[int]) -> dict[int, list[tuple[str, str]]]:
        """The (feature, value) predicates of the cells at `positions`."""
        wanted = set(positions)
        enc = self.encoded
        out = {}
        for combo, cell, pos in self.evaluated.rows():
            if pos in wanted:
                idx = np.unravel_index(cell, tuple(enc.cardinalities[f] for f in combo))
                pairs = zip(combo, idx, strict=True)
                out[pos] = [(enc.features[f], enc.labels[f][int(c)]) for f, c in pairs]
        return out


def lattice(
    enc: Encoded, err: Arr, sigma: int, score_alpha: float, max_predicates: int, top: int,
    squares: bool,
) -> Cells:  # fmt: skip
    """Search the lattice of `enc` on the per-row loss `err` (SliceLine score, pruned)."""
    n = len(err)
    codes = [np.ascontiguousarray(enc.codes[:, j]) for j in range(len(enc.features))]
    scorer = Scorer(n, float(err.mean()), float(err.max()), score_alpha, sigma)
    result = search(codes, enc.cardinalities, err, scorer, max_predicates, top, squares)
    ev = result.evaluated
    count = np.concatenate(ev.count) if ev.count else np.empty(0)
    errsum = np.concatenate(ev.errsum) if ev.errsum else np.empty(0)
    sqsum = np.concatenate(ev.sqsum) if ev.sqsum else np.empty(0)
    scores = scorer.score(count, errsum)
    return Cells(count, errsum, sqsum, scores, result.combos_counted, result.combos_pruned, ev,
                 enc)  # fmt: skip


def pick(q: Arr, scores: Arr, effect: Arr, alpha: float, top: int) -> NDArray[np.intp]:
    """Positions reported: q below alpha, positive score and effect; best score first."""
    keep = np.flatnonzero((q < alpha) & (scores > 0) & (effect > 0))
    return keep[np.lexsort((q[keep], -scores[keep]))][:top]


@dataclass(frozen=True)
class Tested:
    """Per evaluated cell: the values inside and outside, the effect, its CI half-width, p, q."""

    value: Arr
    rest: Arr
    effect: Arr
    half: Arr
    p: Arr
    q: Arr


def build(cells: Cells, keep: NDArray[np.intp], n: int, t: Tested) -> list[Segment]:
    """The reported segments at positions `keep`, in that order."""
    names = cells.predicates(keep.tolist())
    return [
        Segment(
            names[i], int(cells.count[i]), float(cells.count[i] / n), float(t.value[i]),
            float(t.rest[i]), float(t.effect[i]), float(t.effect[i] - t.half[i]),
            float(t.effect[i] + t.half[i]), float(t.p[i]), float(t.q[i]),
            float(cells.scores[i]),
        )
        for i in keep.tolist()
    ]  # fmt: skip
