"""Evidently as an oracle: our Wasserstein and Jensen–Shannon values match its values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from monitor.detectors import evaluate
from monitor.profiles import profile_frame, specs_for
from monitor.reports.evidently import evidently_scores, run_data_drift

pytestmark = pytest.mark.evidently


def _frames(seed: int, n: int = 20_000) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    cats = [f"k{i}" for i in range(30)]
    weights = rng.dirichlet(np.ones(30))
    ref = pd.DataFrame(
        {
            "normal": rng.normal(0, 1, n),
            "shifted": rng.normal(5, 2, n),
            "skewed": rng.lognormal(0, 1, n),
            "wider": rng.normal(0, 1, n),
            "cat_same": rng.choice(cats, n, p=weights),
            "cat_moved": rng.choice(cats, n, p=weights),
            "cat_new": rng.choice(["a", "b", "c"], n),
        }
    )
    cur = pd.DataFrame(
        {
            "normal": rng.normal(0, 1, n),
            "shifted": rng.normal(5.3, 2, n),
            "skewed": rng.lognormal(0.15, 1, n),
            "wider": rng.normal(0, 1.5, n),
            "cat_same": rng.choice(cats, n, p=weights),
            "cat_moved": rng.choice(cats, n, p=rng.dirichlet(np.ones(30))),
            "cat_new": rng.choice(["a", "b", "c", "d"], n, p=[0.3, 0.3, 0.3, 0.1]),
        }
    )
    return ref, cur


@pytest.mark.parametrize("seed", [7, 8])
def test_values_agree_with_evidently_within_001(seed: int) -> None:
    ref, cur = _frames(seed)
    specs = specs_for(list(ref.columns), ref)
    ours = {
        r.column: r
        for r in evaluate(profile_frame(ref, specs), profile_frame(cur, specs))
        if r.slice is None
    }
    theirs = evidently_scores(run_data_drift(ref, cur, specs, list(ref.columns)))
    assert set(theirs) == set(ours)
    for column, result in ours.items():
        assert result.value is not None
        assert result.value == pytest.approx(theirs[column], abs=0.01), column
        # Same drifted set as Evidently's (value >= threshold) on these clear-cut columns.
        assert (result.status == "drift") == (theirs[column] >= 0.1), column
    assert ours["normal"].status == "ok" and ours["shifted"].status == "drift"
