"""Direct loss estimation (DLE) for a regression model, as NannyML's DLE does it.

On the labelled reference, two LightGBM regressors learn each row's loss from its features and
the model's prediction: the absolute error |y − ŷ| (for MAE) and the squared error (y − ŷ)² (for
MSE and RMSE). Applied to rows without labels they give each row's expected loss (clipped at 0);
a chunk's or window's estimate is the mean expected absolute loss (MAE), the mean expected
squared loss (MSE) and its root (RMSE). The state of a set of rows is (rows, Σ expected absolute
loss, Σ expected squared loss): sums that add across windows, slices and replicas.

The band is NannyML's sampling error at the chunk's size, from the reference's per-row losses:
σ_abs/√n for MAE, σ_sq/√n for MSE, √(σ_sq² / (4·n·mean_sq)) for RMSE (σ: population standard
deviation), ±3 of them around the estimate (the lower end clipped at 0), widened by
√(1 + n / reference rows) for the loss models' own error (`widening`). Under EXACT_ROWS rows
the MSE and RMSE bands are a gamma distribution's central interval instead (`_skewed_bands`).

The fitted boosters are kept as LightGBM's own text model format (parsed by LightGBM, never
unpickled). LightGBM is the optional extra `regression`; without it fitting or applying a loss
model is a one-line `InputError` naming the extra.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from monitor.errors import CorruptProfileError, InputError
from monitor.estimation._exact import EXACT_ROWS, gamma_interval, widened
from monitor.estimation._metrics import BAND_Z, Estimate, widening
from monitor.estimation._results import LOSS_METRICS, EstimationResult
from monitor.estimation._run import EstimateOptions, Rows, Side, run
from monitor.profiles import value_text

REGRESSION_METRICS = LOSS_METRICS  # ("mae", "mse", "rmse")
MIN_REFERENCE_ROWS = 100  # labelled reference rows a loss model is fitted on, at least
MISSING = "NML_missing_value"  # a missing categorical value is a category of its own (NannyML)
EXTRA = "pip install 'modelwatch[regression]'"
Loss = Literal["absolute", "squared"]
Floats = NDArray[np.float64]
_NUMBER = (int, float, np.integer, np.floating)
# LightGBM's defaults as NannyML uses them (an untuned `LGBMRegressor()`), made deterministic
# (same model on any thread count; column-wise histograms instead of a timing-based choice) and
# single-threaded: on a busy machine OpenMP's spinning threads make fitting 20x slower (20,000
# rows: 25.7 s with every core, 1.1 s with one, on the 2-core bench machine at load 17), and
# at ingest the collectors run their own threads.
PARAMS: dict[str, Any] = {
    "objective": "regression", "boosting_type": "gbdt", "num_leaves": 31, "max_depth": -1,
    "learning_rate": 0.1, "subsample_for_bin": 200000, "min_split_gain": 0.0,
    "min_child_weight": 0.001, "min_child_samples": 20, "subsample": 1.0, "subsample_freq": 0,
    "colsample_bytree": 1.0, "reg_alpha": 0.0, "reg_lambda": 0.0, "verbosity": -1,
    "deterministic": True, "force_col_wise": True, "num_threads": 1,
}  # fmt: skip
ROUNDS = 100


def lightgbm() -> Any:
    """The `lightgbm` module; InputError naming the extra when it is not installed."""
    try:
        import lightgbm as lgb
    except ImportError:
        raise InputError(f"regression estimation needs LightGBM: {EXTRA}") from None
    return lgb


@dataclass(frozen=True)
class LossModel:
    """One loss's booster (LightGBM text format) and the reference's per-row loss mean and
    population standard deviation (the sampling-error components)."""

    loss: Loss
    text: str
    mean: float
    std: float

    @cached_property
    def booster(self) -> Any:
        try:
            return lightgbm().Booster(model_str=self.text)
        except InputError:
            raise
        except Exception as exc:  # LightGBM's parser rejects a damaged model
            raise CorruptProfileError(f"{self.loss} loss model unreadable: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        return {"loss": self.loss, "text": self.text, "mean": self.mean, "std": self.std}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> LossModel:
        try:
            loss = str(data["loss"])
            if loss not in ("absolute", "squared"):
                raise ValueError(f"unknown loss {loss!r}")
            return cls(loss, str(data["text"]), float(data["mean"]),  # type: ignore[arg-type]
                       float(data["std"]))  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptProfileError(f"{where}: malformed loss model: {exc}") from None


@dataclass(frozen=True)
class RegressionModel:
    """The loss models of a regression model: features in order (the prediction is the last
    input), each categorical feature's reference categories (encoded 1…k in sorted order, an
    unseen value 0, as NannyML's ordinal encoding + 1), and the reference rows fitted on."""

    features: tuple[str, ...]
    categories: Mapping[str, tuple[str, ...]]
    absolute: LossModel
    squared: LossModel
    rows: int

    def matrix(self, columns: Mapping[str, NDArray[Any]], prediction: Floats) -> Floats:
        """The loss models' input: features (numeric as floats, NaN where missing; categorical
        as codes) and the prediction as the last column."""
        return np.column_stack(
            [*(self._column(name, columns[name]) for name in self.features), prediction]
        ).astype(np.float64)

    def _column(self, name: str, values: NDArray[Any]) -> Floats:
        known = self.categories.get(name)
        if known is None:
            return _numbers(values)
        code = {c: i + 1 for i, c in enumerate(known)}
        return np.fromiter((code.get(_category(v), 0) for v in values), np.float64, len(values))

    def losses(self, columns: Mapping[str, NDArray[Any]], prediction: Floats) -> Floats:
        """Each row's expected (absolute, squared) loss, shape (n, 2), clipped at 0; NaN where
        the prediction is missing or not finite."""
        n = len(prediction)
        out = np.full((n, 2), np.nan)
        ok = np.isfinite(prediction)
        if ok.any():
            x = self.matrix({k: np.asarray(v)[ok] for k, v in columns.items()}, prediction[ok])
            for j, model in enumerate((self.absolute, self.squared)):
                out[ok, j] = np.maximum(0.0, model.booster.predict(x, num_threads=1))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": "regression",
            "features": list(self.features),
            "categories": {k: list(v) for k, v in self.categories.items()},
            "absolute": self.absolute.to_dict(),
            "squared": self.squared.to_dict(),
            "rows": self.rows,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> RegressionModel:
        try:
            features = tuple(str(f) for f in data["features"])
            categories = {str(k): tuple(str(c) for c in v)
                          for k, v in dict(data["categories"]).items()}  # fmt: skip
            rows = int(data["rows"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptProfileError(f"{where}: malformed regression model: {exc}") from None
        return cls(features, categories, LossModel.from_dict(data.get("absolute", {}), where),
                   LossModel.from_dict(data.get("squared", {}), where), rows)  # fmt: skip


def _category(value: Any) -> str:
    text = value_text(value)
    return MISSING if text is None else text


def _numbers(values: NDArray[Any]) -> Floats:
    if values.dtype.kind in "biuf":
        return values.astype(np.float64)
    return np.fromiter(
        (float(v) if isinstance(v, _NUMBER) and not isinstance(v, bool | np.bool_) else np.nan
         for v in values), np.float64, len(values),
    )  # fmt: skip


def fit_regression(
    columns: Mapping[str, NDArray[Any]], categorical: Sequence[str], prediction: Floats,
    labels: Floats,
) -> RegressionModel:  # fmt: skip
    """Fit the absolute- and squared-loss models on the reference rows with a finite prediction
    and label. InputError: a non-finite (infinite) value, fewer than MIN_REFERENCE_ROWS such rows,
    or nothing to learn from (every feature and the prediction constant)."""
    for name, values in (("prediction", prediction), ("label", labels)):
        if np.isinf(values).any():
            raise InputError(f"reference {name}: infinite value (predictions and labels must be "
                             "finite numbers; a missing one leaves its row out)")  # fmt: skip
    ok = np.isfinite(prediction) & np.isfinite(labels)
    if int(ok.sum()) < MIN_REFERENCE_ROWS:
        raise InputError(f"reference: {int(ok.sum())} rows with a prediction and a label; "
                         f"regression estimation needs at least {MIN_REFERENCE_ROWS}")  # fmt: skip
    kept = {k: np.asarray(v)[ok] for k, v in columns.items()}
    categories = {c: tuple(sorted({_category(v) for v in kept[c]})) for c in categorical}
    empty = LossModel("absolute", "", 0.0, 0.0)
    shape = RegressionModel(tuple(columns), categories, empty, empty, int(ok.sum()))
    x = shape.matrix(kept, prediction[ok])
    if all(_constant(x[:, j]) for j in range(x.shape[1])):
        raise InputError("reference: every feature and the prediction are constant: "
                         "nothing to learn the loss from")  # fmt: skip
    error = labels[ok] - prediction[ok]
    cat_index = [i for i, f in enumerate(shape.features) if f in categories]
    absolute = _fit_loss("absolute", x, np.abs(error), cat_index)
    squared = _fit_loss("squared", x, error**2, cat_index)
    return RegressionModel(shape.features, categories, absolute, squared, shape.rows)


def _constant(values: Floats) -> bool:
    finite = values[np.isfinite(values)]
    return finite.size == 0 or bool((finite == finite[0]).all())


def _fit_loss(loss: Loss, x: Floats, target: Floats, categorical: list[int]) -> LossModel:
    lgb = lightgbm()
    names = [f"f{i}" for i in range(x.shape[1])]
    data = lgb.Dataset(x, label=target, feature_name=names, params={"verbosity": -1},
                       categorical_feature=categorical or "auto")  # fmt: skip
    booster = lgb.train(PARAMS, data, num_boost_round=ROUNDS)
    return LossModel(loss, booster.model_to_string(), float(target.mean()), float(target.std()))


@dataclass(frozen=True)
class LossSums:
    """What the estimates of a set of rows need: rows with a prediction and their summed
    expected absolute and squared losses (sums that add)."""

    n: int
    absolute: float
    squared: float


def loss_sums(losses: Floats) -> LossSums:
    """The sums of rows' expected losses (`RegressionModel.losses`; NaN rows left out)."""
    ok = np.isfinite(losses).all(axis=1)
    return LossSums(int(ok.sum()), float(losses[ok, 0].sum()), float(losses[ok, 1].sum()))


def estimate_losses(
    model: RegressionModel, sums: LossSums, metrics: Sequence[str] = REGRESSION_METRICS
) -> list[Estimate]:
    """MAE, MSE and RMSE of the rows `sums` describes, each with NannyML's sampling-error band
    (MSE and RMSE under EXACT_ROWS rows: a gamma interval, `_skewed_bands`)."""
    n = sums.n
    if n == 0:
        return [Estimate(m, 0.0, 0.0, 0.0, 0.0, 0) for m in metrics]
    mae, mse = sums.absolute / n, sums.squared / n
    sq = model.squared
    values = {
        "mae": (mae, model.absolute.std / math.sqrt(n)),
        "mse": (mse, sq.std / math.sqrt(n)),
        "rmse": (math.sqrt(mse), math.sqrt(sq.std**2 / (4 * n * sq.mean)) if sq.mean > 0 else 0.0),
    }
    wider = widening(n, model.rows)
    skewed = _skewed_bands(mse, sq.std / math.sqrt(n), wider) if n < EXACT_ROWS else {}
    out = []
    for name in metrics:
        value, se = values[name]
        half = BAND_Z * se * wider
        low, high = skewed.get(name, (max(0.0, value - half), value + half))
        out.append(Estimate(name, value, se, low, high, n))
    return out


def _skewed_bands(mse: float, se: float, wider: float) -> dict[str, tuple[float, float]]:
    """A small window's MSE and RMSE bands: the mean of n squared losses is right-skewed, and
    ±3 SE missed the realized MSE 0.40% of the time at 100 rows (39 of 40 misses above;
    nominal 0.27%). The gamma distribution of the same mean and SE leaves at most the normal
    tail on each side (a mean squared error over normal errors is exactly gamma: χ²); RMSE's
    band is its root. Each side widened for the loss model's own error (`widened`)."""
    if mse <= 0.0 or se <= 0.0:
        return {}
    low, high = gamma_interval(mse, se)
    if not (math.isfinite(low) and math.isfinite(high)):  # beyond scipy's range: ±3 SE
        return {}
    # never under +3 SE: a window whose MSE is far under the reference's (the SE is the
    # reference's) makes the gamma so skewed that its upper quantile collapses towards 0
    high = max(high, mse + BAND_Z * se)
    rmse = math.sqrt(mse)
    return {"mse": widened(mse, (low, high), wider),
            "rmse": widened(rmse, (math.sqrt(low), math.sqrt(high)), wider)}  # fmt: skip


def realized_loss(metric: str, labels: Floats, prediction: Floats) -> float | None:
    """MAE, MSE or RMSE over the rows with a finite label and prediction (None: none)."""
    ok = np.isfinite(labels) & np.isfinite(prediction)
    if not ok.any():
        return None
    error = labels[ok] - prediction[ok]
    mse = float(np.mean(error**2))
    return {"mae": float(np.mean(np.abs(error))), "mse": mse, "rmse": math.sqrt(mse)}[metric]


@dataclass(frozen=True)
class RegressionData:
    """Per row: the features (by name), the prediction, the label (None: no label column;
    NaN where unknown) and the slice values."""

    columns: Mapping[str, NDArray[Any]]
    prediction: Floats
    labels: Floats | None = None
    slices: Mapping[str, NDArray[np.object_]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.prediction)
        for name, values in [("label", self.labels), *self.columns.items(),
                             *self.slices.items()]:  # fmt: skip
            if values is not None and len(values) != n:
                raise InputError(f"{name} has {len(values)} rows, predictions have {n}")
        for name, values in (("prediction", self.prediction), ("label", self.labels)):
            if values is not None and np.isinf(values).any():
                raise InputError(f"{name}: infinite value (must be a finite number)")


def estimate_regression(
    model: RegressionModel, reference: RegressionData, current: RegressionData,
    options: EstimateOptions | None = None,
) -> list[EstimationResult]:  # fmt: skip
    """Results per (slice, chunk, metric) for a regression model: estimated MAE, MSE, RMSE with
    their bands, realized where labels are known, `degraded` above the reference chunks' upper
    threshold and `drift` below their lower one."""
    how = options or EstimateOptions(metrics=REGRESSION_METRICS)
    unknown = set(how.metrics) - set(REGRESSION_METRICS)
    if unknown:
        raise InputError(f"regression estimates {', '.join(REGRESSION_METRICS)}, "
                         f"not {', '.join(sorted(unknown))}")  # fmt: skip
    return run(_side(model, reference, how), _side(model, current, how), how)


def _side(model: RegressionModel, data: RegressionData, how: EstimateOptions) -> Side:
    n = len(data.prediction)
    losses = model.losses(data.columns, data.prediction) if n else np.empty((0, 2))
    return Side(n, data.slices, partial(_estimate, model, losses, how.metrics),
                partial(_realized, data))  # fmt: skip


def _estimate(
    model: RegressionModel, losses: Floats, metrics: tuple[str, ...], rows: Rows
) -> list[Estimate]:
    return estimate_losses(model, loss_sums(losses[rows]), metrics)


def _realized(data: RegressionData, metric: str, rows: Rows) -> float | None:
    if data.labels is None:
        return None
    return realized_loss(metric, data.labels[rows], data.prediction[rows])
