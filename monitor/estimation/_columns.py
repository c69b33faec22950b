"""The derived columns the collectors add at ingest when a baseline stores estimation models, and
how a window's profiles of them turn back into the estimator's inputs (one owner for both ends).

- `__cbpe_score`: the model's score, profiled on a spec whose buckets are exactly the
  calibration's bins (bucket i = calibration bin i), so a window's profile holds the rows per
  bin: times each bin's calibrated probability that is the window's expected confusion matrix,
  and counts add across batches, slices and replicas.
- `__pca_error`: each event's reconstruction error (missing values imputed as on the
  reference), profiled like any numeric column; the window's mean error is its profile's mean.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from monitor.errors import CorruptProfileError
from monitor.estimation._calibration import Calibration
from monitor.estimation._counts import ScoreCounts
from monitor.profiles import ColumnSpec

SCORE_COLUMN = "__cbpe_score"
ERROR_COLUMN = "__pca_error"
DERIVED_COLUMNS = (SCORE_COLUMN, ERROR_COLUMN)


def score_spec(calibration: Calibration) -> ColumnSpec:
    """The spec of `__cbpe_score`: the calibration's edges plus a closing edge above the last.

    A numeric spec's last interior bucket is closed at its last edge, the calibration's last
    bin is open above; the extra edge (last + 1) makes every calibration bin one bucket, and
    scores past it land in the overflow bucket, which `score_counts` folds into the last bin.
    """
    edges = calibration.edges or (calibration.threshold,)
    return ColumnSpec(SCORE_COLUMN, "numeric", edges=(*edges, edges[-1] + 1.0))


def score_counts(calibration: Calibration, profile: Any) -> ScoreCounts:
    """The window's rows per (calibration bin, predicted class) from its `__cbpe_score` profile;
    predicted positive: the bin lies at or above the calibration's threshold."""
    if profile.spec.fingerprint != score_spec(calibration).fingerprint:
        raise CorruptProfileError(
            f"column '{SCORE_COLUMN}': profiled on other bins than the baseline's calibration "
            "(the baseline was replaced within the window)"
        )
    per_bin = np.asarray(profile.counts, dtype=np.int64)
    if not calibration.edges:  # one calibration bin: the spec's threshold edge splits nothing
        per_bin = np.array([per_bin.sum()], dtype=np.int64)
    else:
        per_bin = np.concatenate([per_bin[:-2], [per_bin[-2] + per_bin[-1]]])
    positive = calibration.predicted_positive()
    pairs = tuple(
        (0, int(c)) if pos else (int(c), 0) for c, pos in zip(per_bin, positive, strict=True)
    )
    return ScoreCounts(pairs, int(profile.null_count))
