"""The one assembly of a gate request from guards configuration.

`modelwatch gate`, the release API and the demo all build their request here, so a policy is
layered the same way everywhere: the named preset, then `guards.presets.<name>` from config, then
the caller's overrides (flags, a request's thresholds); runtime settings come from config. A
golden set is a loaded one (the CLI's file and flags) or a configured entry
(`guards.golden_sets`, what the release API names), read here with its columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from guards.gate import GateRequest
from guards.golden import GoldenSet, load_golden
from guards.policy import GatePolicy, preset
from monitor.config import GuardsConfig
from monitor.config.guards import GoldenSetConfig


def layered_policy(
    cfg: GuardsConfig, preset_name: str, overrides: Sequence[Mapping[str, Any]] = ()
) -> GatePolicy:
    """The preset, then its configured overrides, then each of `overrides` (None values kept)."""
    policy = preset(preset_name)
    configured = next((v for k, v in cfg.presets.items() if k == preset_name), None)
    if configured is not None:
        policy = policy.with_overrides(configured.model_dump(exclude_none=True))
    for layer in overrides:
        policy = policy.with_overrides(layer)
    return policy


def gate_request(
    reference: Path,
    candidate: Path,
    golden: GoldenSet | GoldenSetConfig,
    cfg: GuardsConfig,
    preset_name: str = "fp32",
    overrides: Sequence[Mapping[str, Any]] = (),
    *,
    latency_batch_sizes: tuple[int, ...] | None = None,
    output: str | None = None,
    model: str | None = None,
    version: str | None = None,
    localize: Literal["never", "on_fail", "always"] = "never",
    localize_budget_s: float = 30.0,
    localize_rows: int = 2048,
) -> GateRequest:
    """A request with the layered policy (`layered_policy`) and providers, batch size and
    threads from `cfg`; latency batch sizes from `cfg` unless given (an empty tuple skips the
    latency measurement). A configured golden set is read with its own columns."""
    sizes = tuple(cfg.latency_batch_sizes) if latency_batch_sizes is None else latency_batch_sizes
    return GateRequest(
        reference=reference,
        candidate=candidate,
        golden=golden if isinstance(golden, GoldenSet) else _configured_golden(golden),
        policy=layered_policy(cfg, preset_name, overrides),
        output=output,
        providers=tuple(cfg.providers) or None,
        batch_size=cfg.batch_size,
        latency_batch_sizes=sizes,
        intra_op_threads=cfg.intra_op_threads,
        model=model,
        version=version,
        localize=localize,
        localize_budget_s=localize_budget_s,
        localize_rows=localize_rows,
    )


def _configured_golden(entry: GoldenSetConfig) -> GoldenSet:
    return load_golden(
        Path(entry.path),
        id_column=entry.id_column,
        label_column=entry.label_column,
        slice_by=entry.slice_by,
        features=entry.features,
    )
