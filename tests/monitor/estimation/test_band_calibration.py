"""CBPE bands cover the realized metric as promised: the fast version of
bench/calibration_decisions.py's `bands` rows.

CBPE fitted on a fresh labelled 5,000-row reference, same-distribution labelled chunks: the
realized metric lies outside the band (±3 SE, or under 1,000 rows the exact interval, widened
by sqrt(1 + chunk / reference) for the calibration map's own error) at most 0.27% of the time
(the normal tail), chunks larger than the reference included. The estimate is `degraded` (under
the reference chunks' mean minus a prediction interval's `band_k` sd, which allows for an sd
estimated from as few as 5 chunks) at most 0.135% of the time. Multiclass (one-vs-rest maps,
macro metrics): the same promises for a 3-class model, calibrated or overconfident
(`mc_bands`). Regression (DLE): the realized MAE and RMSE lie outside their bands at most 0.27%
of the time.
"""

from __future__ import annotations

import pytest

from bench.calibration_decisions import (
    SHARPENED,
    band_rows,
    dle_band_rows,
    failures,
    multiclass_band_rows,
)

# Null simulations (seconds of CPU each): the full lane's; the fast lane stays under 90 s.
pytestmark = pytest.mark.slow

MISSES = "CBPE band misses"


@pytest.mark.parametrize("chunk", [100, 1_000])
def test_bands_cover_and_degraded_is_rare_on_same_distribution_chunks(chunk: int) -> None:
    rows = band_rows(chunk, chunks=10, reps=30)
    # 100-row chunks: 50 reference chunks give the threshold; 1,000-row chunks: 5 (`band_k`)
    assert failures(rows) == []


def test_bands_cover_the_realized_metric_in_chunks_larger_than_the_reference() -> None:
    # The band is widened by sqrt(1 + chunk / reference) for the calibration map's own error:
    # without it, chunks of 2x the reference missed 5-9% of the time.
    rows = band_rows(10_000, chunks=10, reps=15)
    assert failures([r for r in rows if r.decision.startswith(MISSES)]) == []


@pytest.mark.parametrize("chunk", [100, 1_000])
def test_dle_bands_cover_the_realized_mae_and_rmse(chunk: int) -> None:
    # Loss models fitted on a fresh 5,000-row reference per rep (regression_rows: the error
    # grows with |x1| and with kind b, which DLE has to learn); 30 chunks per size.
    assert failures(dle_band_rows(chunk, chunks=10, reps=3)) == []


@pytest.mark.parametrize(("chunk", "sharpen"), [(100, 1.0), (1_000, 1.0), (1_000, SHARPENED)])
def test_multiclass_bands_cover_and_degraded_is_rare(chunk: int, sharpen: float) -> None:
    # 3 classes, Dirichlet(2, 2, 2) probabilities; scores calibrated or squared (overconfident,
    # which the one-vs-rest maps correct); 200 chunks per case, every macro metric. The macro
    # ROC-AUC's SE is the mean of the classes' (their errors correlate): the bench's 2,000
    # chunks per case measured the sqrt(sum SE^2) / k band missing 1-3%.
    assert failures(multiclass_band_rows(chunk, chunks=10, reps=20, sharpen=sharpen)) == []
