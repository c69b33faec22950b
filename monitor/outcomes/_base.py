"""Outcome metric registry and the frozen per-slice result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from monitor.common.registry import Registry
from monitor.outcomes import metrics as m
from monitor.outcomes._ece import ece_with_interval

OutcomeStatus = Literal["ok", "degraded", "insufficient_data"]
Task = Literal["classification", "regression", "multiclass"]
Array = NDArray[np.float64]


@dataclass(frozen=True)
class Metric:
    """An outcome metric: its function, task, interval method and direction.

    ``support`` says which rows the metric's sample size counts: all rows, predicted
    positives (precision) or actual positives (recall). Proportions get Wilson intervals
    (``successes`` gives the numerator); ``estimate``, where given, computes the value and its
    interval together from (labels, scores, seed) (ECE: bias-corrected, `_ece`); the rest a
    percentile bootstrap of ``fn``. ``interval_centre``: the point the interval is built about,
    from which a stricter level moves its ends (`_family`): the value, or the interval's
    midpoint (ECE's interval is centred on its plug-in, not on the bias-corrected value).
    ``also``: other
    tasks the metric's name is valid for (multiclass accuracy), computed by that task's own
    function (``for_task``).
    """

    name: str
    fn: Callable[[Array, Array, float], float]
    task: Task
    higher_is_better: bool
    support: Literal["rows", "predicted_positive", "actual_positive"] = "rows"
    proportion: bool = False
    also: tuple[Task, ...] = ()
    estimate: Callable[[Array, Array, int], tuple[float, float, float]] | None = None
    interval_centre: Literal["value", "midpoint"] = "value"

    def accepts(self, task: Task) -> bool:
        """Whether the metric is defined for `task`."""
        return task == self.task or task in self.also

    def for_task(self, task: Task) -> Metric:
        """This metric as `task` computes it (multiclass accuracy counts classes, not scores)."""
        if task == self.task:
            return self
        return METRICS_BY_TASK[(self.name, task)]


METRICS: Registry[Metric] = Registry("outcome metric")
for _metric in (
    Metric("accuracy", m.accuracy, "classification", True, proportion=True, also=("multiclass",)),
    Metric("precision", m.precision, "classification", True, "predicted_positive", True),
    Metric("recall", m.recall, "classification", True, "actual_positive", True),
    Metric("f1", m.f1, "classification", True),
    Metric("roc_auc", m.roc_auc, "classification", True),
    Metric("log_loss", m.log_loss, "classification", False),
    Metric(
        "ece",
        m.ece,
        "classification",
        False,
        estimate=ece_with_interval,
        interval_centre="midpoint",
    ),
    Metric("mae", m.mae, "regression", False),
    Metric("rmse", m.rmse, "regression", False),
    Metric("mape", m.mape, "regression", False),
    Metric("macro_precision", m.macro_precision, "multiclass", True),
    Metric("macro_recall", m.macro_recall, "multiclass", True),
    Metric("macro_f1", m.macro_f1, "multiclass", True),
):
    METRICS.add(_metric.name, _metric)
# Metrics whose name other tasks share, as those tasks compute them.
METRICS_BY_TASK: dict[tuple[str, Task], Metric] = {
    ("accuracy", "multiclass"): Metric(
        "accuracy", m.multiclass_accuracy, "multiclass", True, proportion=True
    ),
}
DEFAULT_METRICS: dict[Task, tuple[str, ...]] = {
    "classification": ("accuracy", "precision", "recall", "f1", "roc_auc", "log_loss", "ece"),
    "regression": ("mae", "rmse", "mape"),
    "multiclass": ("accuracy", "macro_precision", "macro_recall", "macro_f1"),
}


def get_metric(name: str) -> Metric:
    """The metric called `name`; RegistryError listing valid names otherwise."""
    return METRICS.lookup(name)


@dataclass(frozen=True)
class OutcomeResult:
    """One metric of one slice (None = all rows) in one window, compared with its baseline.

    ``ci_low``/``ci_high``: the 95% interval. ``level``: the one-sided level the `degraded`
    decision tested the interval at (0.025 per result; stricter across a family of results,
    `monitor.outcomes._family`); None where there is no verdict (no baseline, or
    ``insufficient_data``).
    """

    metric: str
    slice: dict[str, str] | None
    value: float | None
    ci_low: float | None
    ci_high: float | None
    baseline_value: float | None
    tolerance: float | None
    n: int
    status: OutcomeStatus
    level: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of the result: every field, by name."""
        # Not `asdict`: its recursive deep copy was a tenth of a burst's evaluation (soak).
        doc = {f.name: getattr(self, f.name) for f in fields(self)}
        doc["slice"] = None if self.slice is None else dict(self.slice)
        return doc
