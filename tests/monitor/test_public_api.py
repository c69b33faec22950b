"""The statistical core's public surface is pinned."""

from __future__ import annotations

import importlib

import pytest

PINNED: dict[str, set[str]] = {
    "monitor.detectors": {
        "DEFAULT_ALPHA",
        "DEFAULT_METHODS",
        "EPSILON",
        "MIN_N",
        "STATUSES",
        "THRESHOLD_STRATEGIES",
        "Bound",
        "ConstantThresholds",
        "Detector",
        "DriftResult",
        "NullScaling",
        "Pair",
        "ReferenceThresholds",
        "Spread",
        "Status",
        "ThresholdStrategy",
        "Variability",
        "adjust_p_values",
        "benjamini_hochberg",
        "chunk_profiles",
        "compare",
        "detector_names",
        "detectors",
        "evaluate",
        "get_detector",
        "profile_variability",
        "rebin",
        "reference_variability",
        "register",
        "threshold_strategy",
    },
    "monitor.estimation": {
        "BinaryData",
        "Calibration",
        "Chunk",
        "Estimate",
        "EstimateOptions",
        "EstimationResult",
        "METRICS",
        "MULTICLASS_METRICS",
        "REGRESSION_METRICS",
        "LOSS_COLUMNS",
        "RegressionData",
        "RegressionModel",
        "StoredRegression",
        "categorical_features",
        "check_features",
        "estimate_regression",
        "fit_regression",
        "fit_stored_regression",
        "loss_values",
        "MULTIVARIATE_KEY",
        "MulticlassCalibration",
        "MulticlassData",
        "MultivariateResult",
        "ReconstructionModel",
        "SETTINGS_KEY",
        "ScoreCounts",
        "StoredEstimation",
        "StoredMultivariate",
        "chunk_bounds",
        "count_scores",
        "empty_counts",
        "estimate_binary",
        "estimate_metrics",
        "estimate_multiclass",
        "fit_calibration",
        "fit_multiclass",
        "fit_reconstruction",
        "fit_stored",
        "fit_stored_multivariate",
        "multivariate_drift",
        "period_chunks",
        "reconstruction_errors",
        "stored_multivariate",
        "DERIVED_COLUMNS",
        "ERROR_COLUMN",
        "SCORE_COLUMN",
        "MULTIVARIATE_METRIC",
        "estimate_changed",
        "score_spec",
        "StoredMulticlass",
        "fit_stored_multiclass",
        "multiclass_specs",
        "multiclass_values",
        "predicted_classes",
        "class_column",
        "stored_calibration",
    },
    "monitor.outcomes": {
        "DEFAULT_METRICS",
        "METRICS",
        "MIN_SUPPORT",
        "Metric",
        "MulticlassSummary",
        "OutcomeResult",
        "OutcomeStatus",
        "bootstrap",
        "class_of",
        "confusion_metrics",
        "evaluate_outcomes",
        "get_metric",
        "wilson",
    },
    "monitor.loadtest": {
        "ACHIEVED_SHARE",
        "ERROR_SHARE",
        "MEDIAN_FACTOR",
        "TAIL_FACTOR",
        "Latency",
        "LoadtestReport",
        "RateResult",
        "RateRun",
        "Target",
        "default_connections",
        "error_kind",
        "percentiles",
        "run_loadtest",
    },
    "monitor.reports": {
        "drift_report",
        "is_stdout",
        "render_html",
        "render_loadtest_html",
        "render_loadtest_markdown",
        "render_skew_html",
        "write_json",
        "write_text",
    },  # fmt: skip
    "monitor.shadow": {
        "CRITERIA",
        "LabelledPair",
        "PairOutcome",
        "ShadowResult",
        "ShadowStatus",
        "ShadowSummary",
        "flip_interval",
        "judge",
        "label_outcome",
        "latest_results",
        "mcnemar_exact",
        "pair_outcome",
        "paired_difference",
        "shadow_results",
        "window_results",
    },
    "monitor.profiles": {
        "DEFAULT_BINS",
        "DEFAULT_TOP_K",
        "NULL_VALUE",
        "OTHER_VALUE",
        "OVERALL",
        "Binning",
        "CategoricalProfile",
        "ColumnSpec",
        "NumericProfile",
        "Profile",
        "ProfileSet",
        "compared_columns",
        "key_of",
        "merge_profiles",
        "parse_slice_key",
        "profile_frame",
        "profile_from_bytes",
        "profiles_from_bytes",
        "profile_spec",
        "profile_subsets",
        "slice_key",
        "slice_key_from_text",
        "slice_label",
        "spec_from_dict",
        "spec_from_reference",
        "spec_of",
        "specs_for",
        "value_text",
    },
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_all_is_pinned(name: str) -> None:
    module = importlib.import_module(name)
    assert set(module.__all__) == PINNED[name]
    for attr in module.__all__:
        assert hasattr(module, attr)


def test_importing_statistical_core_loads_no_heavy_library() -> None:
    import subprocess
    import sys

    from tests.conftest import REPO

    code = (
        "import sys, monitor.profiles, monitor.detectors, monitor.outcomes, monitor.reports\n"
        "print(','.join(m for m in ('evidently', 'pandas', 'scipy') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == ""
