"""Names that config refers to in registries owned by higher layers: drift methods, outcome
metrics, payload formats (adapters), receiver types and alert signal kinds.

Config is the bottom layer and cannot import those registries, so whoever loads a config (the
composition root: `serve`, the CLI) reads the registries' own name lists into a
:class:`RegistryNames` and passes it to `parse_config`/`load_config`. Each name is then checked
where it is written, and an error names the key (`models[0].drift.methods[0]`), the valid
choices, and the nearest one when a typo is likely. Without `names` no registry check is made.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import AfterValidator, ValidationInfo

Registry = Literal["drift_methods", "outcome_metrics", "formats", "receiver_types", "signal_kinds"]
CONTEXT_KEY = "registry_names"

_WHAT: Mapping[Registry, str] = {
    "drift_methods": "drift method",
    "outcome_metrics": "outcome metric",
    "formats": "format",
    "receiver_types": "receiver type",
    "signal_kinds": "signal kind",
}


@dataclass(frozen=True)
class RegistryNames:
    """Valid names per registry, as the registries list them."""

    drift_methods: Sequence[str]
    formats: Sequence[str]
    receiver_types: Sequence[str]
    signal_kinds: Sequence[str]
    # Outcome metrics per task ("classification", "regression").
    outcome_metrics: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def valid(self, registry: Registry, task: str | None = None) -> Sequence[str]:
        if registry == "outcome_metrics":
            if task is not None and task in self.outcome_metrics:
                return self.outcome_metrics[task]
            return sorted({n for names in self.outcome_metrics.values() for n in names})
        choices: Sequence[str] = getattr(self, registry)
        return choices


def unknown_name(value: str, what: str, valid: Sequence[str], where: str = "") -> str:
    """`unknown drift method 'pis' (did you mean 'psi'?); valid: chi2, ...`."""
    close = difflib.get_close_matches(value, list(valid), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown {what} {value!r}{where}{hint}; valid: {', '.join(valid) or 'none'}"


def _checker(registry: Registry) -> AfterValidator:
    def check(value: str, info: ValidationInfo) -> str:
        names = (info.context or {}).get(CONTEXT_KEY)
        if not isinstance(names, RegistryNames):
            return value
        task = info.data.get("task") if registry == "outcome_metrics" else None
        valid = names.valid(registry, task)
        if value not in valid:
            where = f" for task {task}" if task else ""
            raise ValueError(unknown_name(value, _WHAT[registry], valid, where))
        return value

    return AfterValidator(check)


DriftMethod = Annotated[str, _checker("drift_methods")]
OutcomeMetric = Annotated[str, _checker("outcome_metrics")]
FormatName = Annotated[str, _checker("formats")]
ReceiverType = Annotated[str, _checker("receiver_types")]
SignalKind = Annotated[str, _checker("signal_kinds")]
