"""The evidence rule's test keeps its tail: the fast version of bench/calibration_decisions.py's
`evidence` rows.

The rule fires at p < 1e-6 (`DEFAULT_EVIDENCE_ALPHA`), a tail no test run can count; what can
be counted is the same test's tail at 1e-2 and 1e-3 on clean 2 x k tables (sparse Zipf cells
pooled as the rule pools them), and that it never fires there. A test fails when a rate's
one-sided 99.9% Clopper-Pearson bound lies above its level.
"""

from __future__ import annotations

import pytest

from bench.calibration_decisions import evidence_rows, failures

# Null simulations (seconds of CPU each): the full lane's; the fast lane stays under 90 s.
pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("k", "n_ref", "n_cur"), [(2, 10_000, 1_000), (10, 10_000, 100), (100, 10_000, 1_000)]
)
def test_the_homogeneity_test_fires_at_most_at_its_level_on_clean_tables(
    k: int, n_ref: int, n_cur: int
) -> None:
    rows = evidence_rows(k, n_ref, n_cur, tests=3_000)
    assert failures(rows) == []
    assert rows[0].events == 0  # p < 1e-6: never, in 3,000 clean tables
