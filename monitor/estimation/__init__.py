"""Performance estimation before labels arrive (confidence-based performance estimation, CBPE).

A calibration map fitted on labelled reference data turns each score into the probability that
the row is positive; summed per window it gives the expected confusion matrix, hence estimated
accuracy, precision, recall, F1, specificity and ROC-AUC, each with a band of ±3 standard errors
at the window's size. The per-window state is counts per calibration bin, which merge exactly
(multiclass: per class and bin, rows and summed calibrated probability).
"""

from __future__ import annotations

from monitor.estimation._binary import BinaryData, estimate_binary
from monitor.estimation._calibration import Calibration, fit_calibration
from monitor.estimation._columns import (
    DERIVED_COLUMNS,
    ERROR_COLUMN,
    LOSS_COLUMNS,
    SCORE_COLUMN,
    loss_values,
    multiclass_specs,
    multiclass_values,
    score_spec,
)
from monitor.estimation._counts import ScoreCounts, count_scores, empty_counts
from monitor.estimation._metrics import METRICS, Estimate, estimate_metrics
from monitor.estimation._multiclass import (
    MULTICLASS_METRICS,
    MulticlassCalibration,
    MulticlassData,
    class_column,
    estimate_multiclass,
    fit_multiclass,
    predicted_classes,
)
from monitor.estimation._reconstruction import (
    MultivariateResult,
    ReconstructionModel,
    fit_reconstruction,
    multivariate_drift,
    reconstruction_errors,
)
from monitor.estimation._regression import (
    REGRESSION_METRICS,
    RegressionData,
    RegressionModel,
    estimate_regression,
    fit_regression,
)
from monitor.estimation._results import Chunk, EstimationResult, chunk_bounds, period_chunks
from monitor.estimation._run import EstimateOptions
from monitor.estimation._stored import (
    SETTINGS_KEY,
    StoredEstimation,
    StoredMulticlass,
    fit_stored,
    fit_stored_multiclass,
)
from monitor.estimation._stored_choice import stored_calibration
from monitor.estimation._stored_multivariate import (
    MULTIVARIATE_KEY,
    StoredMultivariate,
    fit_stored_multivariate,
    stored_multivariate,
)
from monitor.estimation._stored_regression import (
    StoredRegression,
    categorical_features,
    check_features,
    fit_stored_regression,
)
from monitor.estimation._window import (
    MULTIVARIATE_METRIC,
    estimate_changed,
)

__all__ = [
    "MULTIVARIATE_METRIC",
    "estimate_changed",
    "DERIVED_COLUMNS",
    "ERROR_COLUMN",
    "LOSS_COLUMNS",
    "loss_values",
    "SCORE_COLUMN",
    "METRICS",
    "MULTIVARIATE_KEY",
    "MULTICLASS_METRICS",
    "REGRESSION_METRICS",
    "StoredRegression",
    "categorical_features",
    "check_features",
    "fit_stored_regression",
    "RegressionData",
    "RegressionModel",
    "estimate_regression",
    "fit_regression",
    "SETTINGS_KEY",
    "BinaryData",
    "Calibration",
    "Chunk",
    "Estimate",
    "EstimateOptions",
    "EstimationResult",
    "MulticlassCalibration",
    "MulticlassData",
    "MultivariateResult",
    "ReconstructionModel",
    "ScoreCounts",
    "StoredEstimation",
    "StoredMulticlass",
    "StoredMultivariate",
    "chunk_bounds",
    "class_column",
    "period_chunks",
    "count_scores",
    "empty_counts",
    "estimate_binary",
    "estimate_metrics",
    "estimate_multiclass",
    "fit_calibration",
    "fit_multiclass",
    "fit_reconstruction",
    "fit_stored",
    "fit_stored_multiclass",
    "fit_stored_multivariate",
    "multivariate_drift",
    "reconstruction_errors",
    "multiclass_specs",
    "multiclass_values",
    "predicted_classes",
    "score_spec",
    "stored_calibration",
    "stored_multivariate",
]
