"""Real models built with onnx.helper, optimized with onnxruntime's own tools, once per session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from monitor.app.demo import _models as builders


@dataclass(frozen=True)
class Suite:
    """The fraud-like model family, its golden set, and a multi-input regression model."""

    directory: Path
    models: dict[str, Path]
    golden: Path
    regressor: Path
    regressor_golden: Path


def _reexport(source: Path, target: Path) -> Path:
    import onnx

    model = onnx.load(str(source))
    model.producer_name = "re-export"
    onnx.save_model(model, str(target))
    return target


def _regressor_golden(path: Path, n: int = 600) -> Path:
    rng = np.random.default_rng(21)
    frame = pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(n)],
            "age": rng.uniform(18, 80, n),
            "amount": rng.lognormal(3, 1, n),
            "tenure": rng.integers(0, 20, n).astype(float),
            "segment": rng.choice(["a", "b"], n),
        }
    )
    frame["target"] = rng.normal(0, 1, n)
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="session")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    directory = tmp_path_factory.mktemp("models")
    models = builders.fraud_suite(directory)
    models["reexport"] = _reexport(models["reference"], directory / "fraud_reexport.onnx")
    models["int8_dynamic"] = builders.to_int8_dynamic(
        models["reference"], directory / "fraud_int8_dynamic.onnx"
    )
    golden = directory / "golden.parquet"
    builders.fraud_golden(reference=models["reference"]).to_parquet(golden)
    regressor = builders.save(builders.multi_input_regressor(), directory / "regressor.onnx")
    return Suite(directory, models, golden, regressor, _regressor_golden(directory / "reg.csv"))
