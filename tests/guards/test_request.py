"""One assembly of a gate request: preset, then configured preset overrides, then the caller's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from guards import gate_request, layered_policy, load_golden, preset
from monitor.config import GuardsConfig
from monitor.config.guards import GoldenSetConfig


def _config() -> GuardsConfig:
    return GuardsConfig.model_validate(
        {
            "presets": {"fp16": {"atol": 0.5, "max_flip_rate": 0.2}},
            "providers": ["CPUExecutionProvider"],
            "batch_size": 128,
            "latency_batch_sizes": [8],
            "intra_op_threads": 2,
        }
    )


def test_policy_layers_preset_then_config_then_caller() -> None:
    cfg = _config()
    assert layered_policy(cfg, "int8") == preset("int8")  # nothing configured for int8
    configured = layered_policy(cfg, "fp16")
    assert (configured.atol, configured.max_flip_rate) == (0.5, 0.2)
    assert configured.rtol == preset("fp16").rtol
    flagged = layered_policy(cfg, "fp16", [{"atol": 0.25, "max_flip_rate": None}])
    assert (flagged.atol, flagged.max_flip_rate) == (0.25, 0.2)  # None: flag not given


def test_request_takes_runtime_settings_from_config(tmp_path: Path) -> None:
    path = tmp_path / "golden.csv"
    pd.DataFrame({"id": [1, 2], "f0": [0.1, 0.2], "label": [0, 1]}).to_csv(path, index=False)
    golden = load_golden(path, id_column="id", label_column="label")
    cfg = _config()
    request = gate_request(Path("r.onnx"), Path("c.onnx"), golden, cfg, "fp16")
    assert request.policy == layered_policy(cfg, "fp16")
    assert request.providers == ("CPUExecutionProvider",)
    assert (request.batch_size, request.intra_op_threads) == (128, 2)
    assert request.latency_batch_sizes == (8,)
    skipped = gate_request(Path("r"), Path("c"), golden, cfg, latency_batch_sizes=())
    assert skipped.latency_batch_sizes == ()
    defaults = gate_request(Path("r"), Path("c"), golden, GuardsConfig())
    assert (defaults.providers, defaults.batch_size) == (None, 4096)


def test_configured_golden_set_is_read_with_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "golden.csv"
    frame = {"id": [1, 2], "f0": [0.1, 0.2], "f1": [1.0, 2.0], "seg": ["a", "b"], "label": [0, 1]}
    pd.DataFrame(frame).to_csv(path, index=False)
    entry = GoldenSetConfig(
        path=str(path), id_column="id", label_column="label", slice_by=["seg"], features=["f1"]
    )
    request = gate_request(Path("r"), Path("c"), entry, _config(), "int8", [{"atol": 0.3}])
    golden = request.golden
    assert (golden.rows, golden.id_column, golden.label_column) == (2, "id", "label")
    assert (golden.slice_columns, golden.features) == (("seg",), ("f1",))
    assert request.policy.atol == 0.3
    assert request.policy.rtol == preset("int8").rtol
