"""Fairness metrics: Fairlearn as the oracle of the values, edge cases, and a simulation that
holds each status to the false-alarm rate it promises."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from monitor.config import FairnessConfig
from monitor.fairness import (
    COMPARISONS,
    FairnessResult,
    GroupCounts,
    evaluate_fairness,
    groups_of,
)
from monitor.outcomes.summary import ClassificationSummary, predicted_positive

THRESHOLD = 0.5


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    """Three groups of different sizes, selection rates and error rates."""
    rng = np.random.default_rng(7)
    sizes = {"a": 900, "b": 700, "c": 500}
    shift = {"a": 0.0, "b": 0.8, "c": -0.6}
    group = np.concatenate([[g] * n for g, n in sizes.items()])
    y = rng.random(group.size) < np.where(group == "c", 0.35, 0.45)
    logit = 1.6 * (y - 0.5) + np.vectorize(shift.get)(group) + rng.normal(0, 1.2, group.size)
    score = 1 / (1 + np.exp(-logit))
    return {"y": y.astype(np.float64), "score": score, "group": group}


def counts_of(
    y: np.ndarray, score: np.ndarray, group: np.ndarray, labelled: np.ndarray | None = None
) -> dict[str, GroupCounts]:
    """Each group's counts: selections over every row, the rest over the `labelled` ones
    (default: all)."""
    labelled = np.ones(y.size, bool) if labelled is None else labelled
    out = {}
    for g in np.unique(group):
        summary = ClassificationSummary(THRESHOLD)
        summary.add(y[(group == g) & labelled], score[(group == g) & labelled])
        scored, selected = predicted_positive(score[group == g], THRESHOLD)
        out[str(g)] = GroupCounts.of(summary, int(scored.sum()), int(selected.sum()))
    return out


def by_key(results: list[FairnessResult]) -> dict[tuple[str, str | None], FairnessResult]:
    return {(r.metric, None if r.slice is None else r.slice["gender"]): r for r in results}


def evaluate(groups: dict[str, GroupCounts] | None, **cfg: Any) -> dict[Any, FairnessResult]:
    config = FairnessConfig(attributes=["gender"], **cfg)
    return by_key(evaluate_fairness({} if groups is None else {"gender": groups}, config))


@pytest.mark.slow  # importing Fairlearn (scikit-learn, pandas) takes seconds
def test_values_equal_fairlearn(data: dict[str, np.ndarray]) -> None:
    from fairlearn import metrics as fl

    y, score, group = data["y"], data["score"], data["group"]
    pred = (score >= THRESHOLD).astype(np.float64)
    got = evaluate(counts_of(y, score, group))
    expected = {
        "demographic_parity_difference": fl.demographic_parity_difference,
        "demographic_parity_ratio": fl.demographic_parity_ratio,
        "equal_opportunity_difference": fl.equal_opportunity_difference,
        "equalized_odds_difference": fl.equalized_odds_difference,
    }
    for metric, oracle in expected.items():
        want = oracle(y, pred, sensitive_features=group)
        assert got[(metric, None)].value == pytest.approx(want, abs=1e-12), metric
    frame = fl.MetricFrame(
        metrics={
            "selection_rate": fl.selection_rate,
            "true_positive_rate": fl.true_positive_rate,
            "false_positive_rate": fl.false_positive_rate,
        },
        y_true=y,
        y_pred=pred,
        sensitive_features=group,
    )
    calibration = fl.MetricFrame(
        metrics=lambda t, s: abs(np.mean(t) - np.mean(s)),
        y_true=y,
        y_pred=score,
        sensitive_features=group,
    )
    for g in ("a", "b", "c"):
        for metric in frame.by_group.columns:
            want = frame.by_group.loc[g, metric]
            assert got[(metric, g)].value == pytest.approx(want, abs=1e-12)
        cal = got[("calibration_error", g)].value
        assert cal == pytest.approx(calibration.by_group[g], abs=1e-9)


@pytest.mark.slow
def test_reference_group_compares_each_group_with_it(data: dict[str, np.ndarray]) -> None:
    from fairlearn import metrics as fl

    y, score, group = data["y"], data["score"], data["group"]
    pred = (score >= THRESHOLD).astype(np.float64)
    got = evaluate(counts_of(y, score, group), reference_group={"gender": "a"})
    rates = fl.MetricFrame(
        metrics=fl.selection_rate, y_true=y, y_pred=pred, sensitive_features=group
    ).by_group
    diff = max(abs(rates[g] - rates["a"]) for g in ("b", "c"))
    ratio = min(min(rates[g], rates["a"]) / max(rates[g], rates["a"]) for g in ("b", "c"))
    assert got[("demographic_parity_difference", None)].value == pytest.approx(diff)
    assert got[("demographic_parity_ratio", None)].value == pytest.approx(ratio)


def test_a_clear_disparity_is_a_violation_with_an_interval_around_it(
    data: dict[str, np.ndarray],
) -> None:
    got = evaluate(counts_of(data["y"], data["score"], data["group"]))
    dp = got[("demographic_parity_difference", None)]
    assert dp.status == "violation" and dp.threshold == 0.1
    assert dp.ci_low is not None and dp.ci_high is not None
    assert 0.1 < dp.ci_low < dp.value < dp.ci_high  # type: ignore[operator]
    ratio = got[("demographic_parity_ratio", None)]
    assert ratio.status == "violation" and ratio.ci_high < 0.8  # type: ignore[operator]


def test_counts_merge_like_the_summaries(data: dict[str, np.ndarray]) -> None:
    y, score = data["y"], data["score"]
    first, second, both = (ClassificationSummary(THRESHOLD) for _ in range(3))
    first.add(y[:1000], score[:1000])
    second.add(y[1000:], score[1000:])
    both.add(y, score)
    merged = GroupCounts.of(first).merge(GroupCounts.of(second))
    assert merged.n == GroupCounts.of(both).n == y.size
    assert merged.tp == GroupCounts.of(both).tp
    assert merged.score_sum == pytest.approx(GroupCounts.of(both).score_sum)


def test_groups_come_from_per_slice_summaries(data: dict[str, np.ndarray]) -> None:
    summaries: list[tuple[dict[str, str] | None, Any]] = [(None, ClassificationSummary(0.5))]
    for g in ("a", "b"):
        s = ClassificationSummary(THRESHOLD)
        s.add(data["y"][data["group"] == g], data["score"][data["group"] == g])
        summaries.append(({"gender": g}, s))
    summaries.append(({"region": "eu"}, ClassificationSummary(0.5)))
    found = groups_of(summaries, ["gender", "age_band"])
    assert set(found) == {"gender"} and set(found["gender"]) == {"a", "b"}


def test_parity_counts_every_prediction_not_only_the_labelled(
    data: dict[str, np.ndarray],
) -> None:
    """Labels that arrive mostly for group b's selected rows (a biased sample) leave
    demographic parity over all predictions as it is; the error rates use the labelled rows."""
    y, score, group = data["y"], data["score"], data["group"]
    pred = score >= THRESHOLD
    labelled = (group != "b") | pred | (np.arange(y.size) % 5 == 0)
    got = evaluate(counts_of(y, score, group, labelled))
    rate = {g: pred[group == g].mean() for g in ("a", "b", "c")}
    seen = {g: pred[(group == g) & labelled].mean() for g in ("a", "b", "c")}
    want = max(rate.values()) - min(rate.values())
    biased = max(seen.values()) - min(seen.values())
    dp = got[("demographic_parity_difference", None)].value
    assert dp == pytest.approx(want, abs=1e-12) and abs(dp - biased) > 0.1
    assert got[("selection_rate", "b")].n == np.sum(group == "b")
    assert got[("true_positive_rate", "b")].n == np.sum((group == "b") & labelled & (y == 1))


def test_without_labels_parity_is_judged_and_the_rest_waits() -> None:
    groups = {g: GroupCounts(scored=400, selected=k) for g, k in (("f", 80), ("m", 200))}
    got = evaluate(groups)
    assert got[("demographic_parity_difference", None)].status == "violation"
    assert got[("selection_rate", "f")].value == 0.2
    for key in [("equal_opportunity_difference", None), ("equalized_odds_difference", None),
                ("true_positive_rate", "f"), ("false_positive_rate", "m"),
                ("calibration_error", "f")]:  # fmt: skip
        assert (got[key].status, got[key].reason) == ("insufficient_data", "no labels yet")


def test_groups_add_the_selection_counts_of_all_predictions() -> None:
    labelled = ClassificationSummary(THRESHOLD)
    labelled.add(np.array([1.0, 0.0]), np.array([0.9, 0.1]))
    found = groups_of(
        [({"gender": "f"}, labelled)],
        ["gender"],
        [({"gender": "f"}, 50, 20), ({"gender": "m"}, 40, 10), ({"region": "eu"}, 9, 9)],
    )
    assert found == {"gender": {"f": GroupCounts(1, 0, 1, 0, 1.0, 50, 20),
                                "m": GroupCounts(scored=40, selected=10)}}  # fmt: skip


def _counts(n: int, selected: int, positives: int = 0, tp: int = 0) -> GroupCounts:
    """Counts of n rows, `selected` predicted positive, `positives` actual positives of which
    `tp` predicted positive."""
    fp = selected - tp
    return GroupCounts(tp=tp, fp=fp, tn=n - positives - fp, fn=positives - tp, score_sum=n / 2,
                       scored=n, selected=selected)  # fmt: skip


@pytest.mark.parametrize(
    ("groups", "reason"),
    [
        (None, "'gender' is missing from the window"),
        ({"(null)": _counts(500, 100, 200, 50)}, "every row's 'gender' is null"),
        ({"f": _counts(500, 100, 200, 50)}, "only one group of 'gender' ('f')"),
        (
            {"f": _counts(12, 4, 6, 2), "m": _counts(9, 3, 4, 2)},
            "fewer than 2 groups of 'gender' with at least 30 predictions (f: 12, m: 9)",
        ),
        ({"(other)": _counts(500, 100), "(null)": _counts(9, 1)}, "has no group"),
    ],
)
def test_bad_input_is_insufficient_data_with_the_reason(
    groups: dict[str, GroupCounts] | None, reason: str
) -> None:
    got = evaluate(groups)
    for metric in COMPARISONS:
        r = got[(metric, None)]
        assert r.status == "insufficient_data" and r.value is None and r.reason
    assert reason in (got[("demographic_parity_difference", None)].reason or "")


def test_a_single_label_class_leaves_the_error_rates_insufficient() -> None:
    groups = {"f": _counts(400, 100), "m": _counts(400, 250)}  # no actual positives
    got = evaluate(groups)
    assert got[("demographic_parity_difference", None)].status == "violation"
    for metric in ("equal_opportunity_difference", "equalized_odds_difference"):
        r = got[(metric, None)]
        assert r.status == "insufficient_data"
        assert (
            r.reason == "labels hold a single class: no actual positives in any group of 'gender'"
        )
    assert got[("true_positive_rate", "f")].status == "insufficient_data"


def test_no_positive_prediction_leaves_the_ratio_undefined() -> None:
    got = evaluate({"f": _counts(400, 0, 100), "m": _counts(300, 0, 100)})
    assert got[("demographic_parity_difference", None)].status == "ok"
    ratio = got[("demographic_parity_ratio", None)]
    assert ratio.status == "insufficient_data" and "undefined" in (ratio.reason or "")


def test_a_small_group_is_left_out_and_a_small_reference_says_so() -> None:
    groups = {"f": _counts(400, 100), "m": _counts(400, 110), "x": _counts(8, 8)}
    got = evaluate(groups)
    assert got[("demographic_parity_difference", None)].value == pytest.approx(0.025)
    assert got[("selection_rate", "x")].status == "insufficient_data"
    small = evaluate(groups, reference_group={"gender": "x"})
    reason = small[("demographic_parity_difference", None)].reason
    assert reason == "reference group 'x' of 'gender' has 8 predictions (fewer than 30)"


def test_groups_past_the_cap_are_left_out() -> None:
    groups = {"a": _counts(500, 100), "b": _counts(400, 100), "c": _counts(300, 290)}
    got = evaluate(groups, max_groups=2)
    assert got[("demographic_parity_difference", None)].value == pytest.approx(0.05)
    assert ("selection_rate", "c") not in got


def test_thresholds_preset_and_explicit() -> None:
    config = FairnessConfig(attributes=["g"])
    assert config.bounds().min_ratio == 0.8
    strict = FairnessConfig(attributes=["g"], thresholds={"min_ratio": 0.9})
    assert strict.bounds().min_ratio == 0.9 and strict.bounds().max_difference == 0.1


def _false_alarms(metric: str, rates: list[float], n: int, reps: int, **cfg: Any) -> float:
    """Share of simulated windows called a violation, each group's selections binomial."""
    rng = np.random.default_rng(11)
    config = FairnessConfig(attributes=["g"], **cfg)
    hits = 0
    for _ in range(reps):
        groups = {f"g{i}": _counts(n, int(rng.binomial(n, p))) for i, p in enumerate(rates)}
        found = evaluate_fairness({"g": groups}, config)
        hits += next(r for r in found if r.metric == metric).status == "violation"
    return hits / reps


@pytest.mark.slow  # calibration simulations run in the full lane
@pytest.mark.parametrize(
    ("metric", "rates", "n"),
    [
        # true difference exactly at the 0.1 bound: the worst case a status promises for
        ("demographic_parity_difference", [0.3, 0.4], 150),
        ("demographic_parity_difference", [0.3, 0.35, 0.4], 400),
        # true ratio exactly at the 0.8 bound
        ("demographic_parity_ratio", [0.4, 0.5], 200),
        ("demographic_parity_ratio", [0.08, 0.1], 2000),
    ],
)
def test_violations_at_the_bound_stay_within_alpha(metric: str, rates: list[float], n: int) -> None:
    """A status promises at most `alpha` (0.05) false alarms per metric and window when the
    true metric sits on its bound (within it: fewer)."""
    assert _false_alarms(metric, rates, n, reps=1000) <= 0.05


@pytest.mark.slow
def test_a_real_disparity_is_found() -> None:
    """Twice the bound's disparity in 1,000 rows a group is nearly always called."""
    assert _false_alarms("demographic_parity_difference", [0.2, 0.4], 1000, reps=200) > 0.95
    assert _false_alarms("demographic_parity_ratio", [0.3, 0.5], 1000, reps=200) > 0.95


@pytest.mark.slow
def test_calibration_at_the_bound_stays_within_alpha() -> None:
    """Groups whose observed rate is 0.1 off their mean score (the bound): few violations."""
    rng = np.random.default_rng(3)
    config = FairnessConfig(attributes=["g"])
    hits = 0
    for _ in range(1000):
        groups = {}
        for name in ("a", "b"):
            positives = int(rng.binomial(200, 0.4))
            groups[name] = GroupCounts(tp=positives, tn=200 - positives, score_sum=200 * 0.3)
        found = evaluate_fairness({"g": groups}, config)
        hits += sum(r.status == "violation" for r in found if r.metric == "calibration_error")
    assert hits / 1000 <= 0.05


@pytest.mark.parametrize(
    ("fairness", "extra", "message"),
    [
        ({"attributes": ["gender"], "treshold": 1}, {}, "treshold"),
        ({"attributes": ["age"]}, {}, "'age' must also be in slices"),
        ({"attributes": ["gender"]}, {"outcomes": {"task": "regression"}}, "not regression"),
        ({"attributes": ["gender"], "reference_group": {"age": "30"}}, {}, "'age' is not an"),
        ({"attributes": ["gender"], "thresholds": "three_quarters"}, {}, "thresholds"),
        ({"attributes": []}, {}, "attributes"),
    ],
)
def test_bad_config_names_the_key(
    fairness: dict[str, Any], extra: dict[str, Any], message: str
) -> None:
    from monitor.config import parse_config
    from monitor.errors import ConfigError

    model = {"name": "m", "slices": ["gender"], "fairness": fairness, **extra}
    with pytest.raises(ConfigError, match=message) as caught:
        parse_config({"models": [model]}, env={})
    assert "fairness" in str(caught.value)
