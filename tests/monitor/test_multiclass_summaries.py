"""Multiclass outcome summaries: the confusion matrix built at label-join time.

Oracles: scikit-learn's confusion matrix and accuracy / macro precision, recall, F1
(zero_division=0) on the raw rows, and `evaluate_outcomes` on the raw rows. Counts are exact,
so the metrics of a merge of any split of the rows equal the raw values exactly.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support
from sqlalchemy.engine import Engine

from monitor.app.daemon.names import registry_names
from monitor.config import parse_config
from monitor.errors import ConfigError
from monitor.estimation._realized import class_histograms, summary_macro_auc
from monitor.outcomes import evaluate_outcomes, metrics
from monitor.outcomes._multiclass import MulticlassSummary, ScoredClass, class_of, prediction_of
from monitor.outcomes.from_summary import binned_roc_auc, evaluate_summaries, roc_auc_error
from monitor.outcomes.summary import (
    add_pairs,
    merge_summaries,
    new_summary,
    pair_values,
    summary_from_bytes,
    summary_to_bytes,
)
from monitor.storage import transaction
from monitor.summaries import JoinedPairs, add_joined, outcome_results
from tests.properties import examples

MULTI = ("accuracy", "macro_precision", "macro_recall", "macro_f1")
CLASSES = ["cat", "dog", 3, "bird", 7.0]


def _oracle(y: list[str], p: list[str]) -> dict[str, float]:
    labels = sorted(set(y) | set(p))
    prec, rec, f1, _ = precision_recall_fscore_support(
        y, p, labels=labels, average="macro", zero_division=0
    )
    acc = accuracy_score(y, p)
    return {"accuracy": acc, "macro_precision": prec, "macro_recall": rec, "macro_f1": f1}


def _prediction(draw: st.DrawFn, true: Any) -> Any:
    """A label, or a probability map (ZipMap) / list whose argmax is some class."""
    shape = draw(st.sampled_from(["label", "map", "label"]))
    cls = draw(st.sampled_from([true, *CLASSES]))
    if shape == "label":
        return cls
    probs = {str(c): 0.1 for c in CLASSES}
    probs[str(class_of(cls))] = 0.6
    return probs


@st.composite
def rows(draw: st.DrawFn) -> list[tuple[Any, Any]]:
    n = draw(st.integers(0, 200))
    truths = draw(st.lists(st.sampled_from(CLASSES), min_size=n, max_size=n))
    return [(t, _prediction(draw, t)) for t in truths]


@settings(max_examples=examples(80), deadline=None)
@given(rows(), st.lists(st.integers(0, 200), max_size=4))
def test_merged_summaries_equal_the_raw_rows(data: list[tuple[Any, Any]], cuts: list[int]) -> None:
    bounds = [0, *sorted(c for c in cuts if c <= len(data)), len(data)]
    parts = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        summary = new_summary("multiclass", 0.5)
        values = [pair_values(label, pred, "multiclass", None) for label, pred in data[a:b]]
        add_pairs(summary, [v[0] for v in values], [v[1] for v in values])
        parts.append(summary_from_bytes(summary_to_bytes(summary)))  # stored and read back
    merged = merge_summaries(parts)
    assert isinstance(merged, MulticlassSummary)
    y = [str(class_of(t)) for t, _ in data]
    p = [str(class_of(pred)) for _, pred in data]
    assert merged.n == len(data) and merged.invalid == 0
    classes, matrix = merged.matrix()
    if data:
        assert np.array_equal(matrix, confusion_matrix(y, p, labels=classes))
    results = evaluate_summaries([(None, merged)], task="multiclass", min_support=1)
    assert [r.metric for r in results] == list(MULTI)
    if not data:
        assert all(r.status == "insufficient_data" for r in results)
        return
    expected = _oracle(y, p)
    raw = evaluate_outcomes(y, p, task="multiclass", min_support=1)
    for r, from_raw in zip(results, raw, strict=True):
        assert r.value == pytest.approx(expected[r.metric], abs=1e-12), r.metric
        assert from_raw.value == pytest.approx(expected[r.metric], abs=1e-12), r.metric
        assert r.ci_low is not None and r.ci_high is not None
        assert r.ci_low <= r.value + 1e-12 and r.value <= r.ci_high + 1e-12
    # accuracy is a proportion: the same Wilson interval as the raw path
    assert (results[0].ci_low, results[0].ci_high) == pytest.approx((raw[0].ci_low, raw[0].ci_high))


def _scored_rows(seed: int, n: int, shape: str) -> tuple[np.ndarray, np.ndarray, list[Any]]:
    """(true class indexes, probabilities, predictions as lists or maps) of 3 classes."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 1, (n, 3)) * 2.0
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=row) for row in p], dtype=np.intp)
    rows = p.tolist() if shape == "list" else [dict(zip("012", r, strict=True)) for r in p.tolist()]
    return y, p, rows


def _scored_summary(y: np.ndarray, rows: list[Any]) -> MulticlassSummary:
    summary = new_summary("multiclass", 0.5)
    values = [
        pair_values(int(t), pred, "multiclass", None) for t, pred in zip(y, rows, strict=True)
    ]
    add_pairs(summary, [v[0] for v in values], [v[1] for v in values])
    assert isinstance(summary, MulticlassSummary)
    return summary


@settings(max_examples=examples(25), deadline=None)
@given(
    st.integers(0, 2**32 - 1), st.integers(1, 400), st.sampled_from(["list", "map"]),
    st.lists(st.integers(0, 400), max_size=3),
)  # fmt: skip
def test_class_score_histograms_give_the_one_vs_rest_auc_of_the_raw_rows(
    seed: int, n: int, shape: str, cuts: list[int]
) -> None:
    y, p, rows = _scored_rows(seed, n, shape)
    bounds = [0, *sorted(c for c in cuts if c <= n), n]
    parts = [summary_from_bytes(summary_to_bytes(_scored_summary(y[a:b], rows[a:b])))
             for a, b in zip(bounds, bounds[1:], strict=False)]  # fmt: skip
    merged = merge_summaries(parts)
    assert isinstance(merged, MulticlassSummary)
    # merge equals the summary of the concatenation, histograms included
    assert summary_to_bytes(merged) == summary_to_bytes(_scored_summary(y, rows))
    histograms = class_histograms(["0", "1", "2"], merged)
    assert histograms is not None
    raw = [metrics.roc_auc((y == k).astype(np.float64), p[:, k]) for k in range(3)]
    for k, h in enumerate(histograms):
        assert h.count.sum() == n and h.count[1].sum() == (y == k).sum()
        assert abs(binned_roc_auc(h) - raw[k]) <= roc_auc_error(h) + 1e-12, k
    bound = float(np.mean([roc_auc_error(h) for h in histograms]))
    macro = summary_macro_auc(["0", "1", "2"], merged)
    assert macro is not None and abs(macro - float(np.mean(raw))) <= bound + 1e-12


_values = st.one_of(
    st.floats(allow_nan=True), st.integers(-3, 3), st.booleans(), st.none(),
    st.sampled_from(["x", "", "0.5"]),
)  # fmt: skip
_predictions = st.one_of(
    _values,
    st.lists(_values, max_size=4),
    st.lists(st.floats(-0.5, 1.5), max_size=4),
    st.dictionaries(st.one_of(st.sampled_from(["a", "b", "", "1"]), st.integers(0, 2)), _values),
    st.dictionaries(st.sampled_from(["a", "b", "1", "2"]), st.floats(0, 1)),
)


@settings(max_examples=examples(300), deadline=None)
@given(_predictions)
def test_a_scored_prediction_names_the_class_class_of_names(value: Any) -> None:
    got = prediction_of(value)
    predicted = got.predicted if isinstance(got, ScoredClass) else got
    assert predicted == class_of(value)
    if isinstance(got, ScoredClass):
        assert len(set(got.classes)) == len(got.classes) == len(got.probabilities)
        assert all(0.0 <= p <= 1.0 for p in got.probabilities)


def test_which_predictions_add_class_scores() -> None:
    assert prediction_of([0.2, 0.8]) == ScoredClass("1", ("0", "1"), (0.2, 0.8))
    nested = {"label": "dog", "probabilities": {"cat": 0.3, "dog": 0.7}}
    assert prediction_of(nested, "probabilities") == ScoredClass("dog", ("cat", "dog"), (0.3, 0.7))
    assert prediction_of(nested, "label") == "dog"  # a label: no scores
    assert prediction_of([0.5, 1.5]) == "1"  # not probabilities: the class only
    assert prediction_of({3: 0.4, "3": 0.6}) == "3"  # two names of one class
    s = MulticlassSummary()
    probs = {"cat": 0.6, "dog": 0.4}
    # "bird" is no scored class and "dog" a bare label: both in the matrix, neither scored
    s.add(["cat", "bird", "dog"], [probs, probs, "dog"])
    assert s.n == 3 and sorted(s.scores) == ["cat", "dog"]
    assert s.class_counts("cat")[1].sum() == 1 and s.class_counts("cat")[0].sum() == 0
    assert s.class_counts("dog")[0].sum() == 1 and s.class_counts("dog")[1].sum() == 0
    # a class without positives (dog) or negatives (cat): 0.5, as the file-based realized value
    assert summary_macro_auc(["cat", "dog"], s) == 0.5
    assert summary_macro_auc(["ant"], s) is None  # no score of the baseline's classes
    s.add(["cat"], [probs], sign=-1)
    assert s.scores == {} and s.n == 2


def test_a_payload_without_class_scores_still_loads_and_merges() -> None:
    old = b'{"task":"multiclass","cells":[["a","a",2],["b","a",1]],"invalid":1}'
    stored = summary_from_bytes(old)
    assert isinstance(stored, MulticlassSummary) and stored.scores == {} and stored.n == 3
    assert summary_to_bytes(stored) == old  # label-only summaries keep their stored form
    assert summary_macro_auc(["a", "b"], stored) is None
    scored = MulticlassSummary()
    scored.add(["a", "b"], [{"a": 0.9, "b": 0.1}, {"a": 0.2, "b": 0.8}])
    merged = stored.merge(scored)
    assert merged.n == 5 and merged.invalid == 1 and merged.scores == scored.scores
    assert summary_macro_auc(["a", "b"], merged) == 1.0


def test_removing_pairs_is_exact_and_empty_cells_vanish() -> None:
    s = MulticlassSummary()
    s.add(["a", "b", "b"], ["a", "a", "b"])
    s.add(["b"], ["a"], sign=-1)
    assert s.cells == {("a", "a"): 1, ("b", "b"): 1} and s.n == 2


def test_classes_as_users_send_them() -> None:
    assert class_of(3) == class_of(3.0) == class_of("3") == "3"
    assert class_of(True) == "1" and class_of("") is None and class_of(float("nan")) is None
    assert class_of({"cat": 0.2, "dog": 0.7, "bird": 0.1}) == "dog"  # ZipMap
    assert class_of([0.1, 0.7, 0.2]) == "1"  # probabilities per class index
    assert class_of({"label": "dog", "probabilities": {"dog": 0.9}}, "label") == "dog"
    assert class_of({"cat": "high"}) is None and class_of([]) is None and class_of(None) is None
    assert class_of(2.5) == "2.5"


def test_unusable_pairs_are_invalid_and_the_rest_are_scored() -> None:
    s = new_summary("multiclass", 0.5)
    values = [
        pair_values(label, pred, "multiclass", None)
        for label, pred in [("a", "a"), (None, "a"), ("b", {"x": "not a prob"}), ("b", "a")]
    ]
    add_pairs(s, [v[0] for v in values], [v[1] for v in values])
    assert isinstance(s, MulticlassSummary) and s.n == 2 and s.invalid == 2


def test_a_day_of_joined_multiclass_pairs_through_the_store(engine: Engine) -> None:
    config = parse_config(
        {"models": [{"name": "m", "slices": ["region"], "outcomes": {"task": "multiclass"}}]},
        env={},
    )
    cfg = config.models[0]
    t0 = datetime(2026, 11, 30, tzinfo=UTC)
    rng = np.random.default_rng(4)
    pairs = []
    for i in range(600):
        true = str(rng.choice(["cat", "dog", "bird"]))
        pred = true if rng.random() < 0.7 else str(rng.choice(["cat", "dog", "bird"]))
        region = "eu" if i % 3 else "us"
        ts = t0 + timedelta(minutes=i * 2)  # 20 hourly windows
        pairs.append({"version": "1", "ts": ts, "label": true, "prediction": {pred: 0.9},
                      "slice_values": {"region": region}})  # fmt: skip
    with transaction(engine) as s:  # the label join's call, in two batches
        add_joined(s, "m", JoinedPairs.from_rows(pairs[:250], cfg.slices), cfg, 3600)
        add_joined(s, "m", JoinedPairs.from_rows(pairs[250:], cfg.slices), cfg, 3600)
    got = outcome_results(engine, cfg, "1", t0, t0 + timedelta(days=1))
    y = [p["label"] for p in pairs]
    p = [next(iter(x["prediction"])) for x in pairs]
    overall = {r.metric: r for r in got if r.slice is None}
    assert overall.keys() == set(MULTI) and overall["accuracy"].n == 600
    for name, value in _oracle(y, p).items():
        assert overall[name].value == pytest.approx(value, abs=1e-12)
    eu = [i for i, x in enumerate(pairs) if x["slice_values"]["region"] == "eu"]
    eu_acc = next(r for r in got if r.slice == {"region": "eu"} and r.metric == "accuracy")
    assert eu_acc.value == pytest.approx(accuracy_score([y[i] for i in eu], [p[i] for i in eu]))


def test_config_accepts_multiclass_metrics_and_names_the_task_of_others() -> None:
    names = registry_names()
    model = {"name": "m", "outcomes": {"task": "multiclass", "metrics": ["accuracy", "macro_f1"]}}
    assert parse_config({"models": [model]}, env={}, names=names).models[0].outcomes.metrics
    bad = {"name": "m", "outcomes": {"task": "multiclass", "metrics": ["roc_auc"]}}
    with pytest.raises(ConfigError, match="roc_auc"):
        parse_config({"models": [bad]}, env={}, names=names)
