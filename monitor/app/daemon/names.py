"""The registries' own names, read for config validation at load (composition root).

Config sits below the registries and cannot import them; every command that loads a config
passes `registry_names()` so a typo (`methods: ["pis"]`) stops it before the first job.
"""

from __future__ import annotations

from alerts import SIGNAL_KINDS
from alerts.receivers import receiver_types
from collectors import adapter_names
from monitor.config import RegistryNames
from monitor.detectors import detector_names
from monitor.outcomes import METRICS


def registry_names() -> RegistryNames:
    """Valid drift methods, outcome metrics per task, formats, receiver types, signal kinds."""
    by_task: dict[str, list[str]] = {}
    for metric in sorted(METRICS.values(), key=lambda m: m.name):
        for task in (metric.task, *metric.also):
            by_task.setdefault(task, []).append(metric.name)
    return RegistryNames(
        drift_methods=tuple(detector_names()),
        formats=tuple(adapter_names()),
        receiver_types=tuple(receiver_types()),
        signal_kinds=tuple(SIGNAL_KINDS),
        outcome_metrics={task: tuple(names) for task, names in by_task.items()},
    )
