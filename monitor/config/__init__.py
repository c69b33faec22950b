"""Typed configuration, validated once at startup with unknown keys rejected."""

from __future__ import annotations

from monitor.common.defaults import DEFAULT_DATABASE_URL
from monitor.config._api import ApiConfig, SchedulerConfig, TokenConfig
from monitor.config._base import StrictModel
from monitor.config._durations import MAX_DURATION, Duration, parse_duration
from monitor.config._names import RegistryNames
from monitor.config._root import (
    ENV_OVERRIDES,
    Config,
    ModelConfig,
    load_config,
    parse_config,
)
from monitor.config._sources import (
    CollectConfig,
    JsonlSourceConfig,
    KafkaSourceConfig,
    SourceConfig,
)
from monitor.config.fairness import PRESETS as FAIRNESS_PRESETS
from monitor.config.fairness import FairnessConfig, FairnessThresholds
from monitor.config.guards import GatePolicyConfig, GuardsConfig
from monitor.config.segments import SegmentCheckConfig
from monitor.config.watch import CanaryPairConfig, FeatureSourceConfig, SkewCheckConfig

__all__ = [
    "MAX_DURATION",
    "Duration",
    "ApiConfig",
    "SchedulerConfig",
    "TokenConfig",
    "DEFAULT_DATABASE_URL",
    "ENV_OVERRIDES",
    "RegistryNames",
    "CanaryPairConfig",
    "CollectConfig",
    "FeatureSourceConfig",
    "SegmentCheckConfig",
    "SkewCheckConfig",
    "Config",
    "FAIRNESS_PRESETS",
    "FairnessConfig",
    "FairnessThresholds",
    "GatePolicyConfig",
    "GuardsConfig",
    "JsonlSourceConfig",
    "KafkaSourceConfig",
    "ModelConfig",
    "SourceConfig",
    "StrictModel",
    "load_config",
    "parse_config",
    "parse_duration",
]
