"""The registry of per-event measures: generative timings and token counts, resource samples.

A measure is a non-negative finite number an event may carry besides its latency stages, kept
per (model, version, window, slice) as one mergeable log-scale sketch (`window_serving.measures`),
so its percentiles of any range are a merge, never a rescan. Each measure has one canonical event
field (`ttft_ms`) and the names serving stacks already use for it (OpenTelemetry GenAI
`gen_ai.server.time_to_first_token`, vLLM's per-request `time_to_first_token_ms`, NVIDIA NIM's
`time_to_first_token_seconds`), each with the factor that turns its unit into the canonical one.
Generative measures (timings per token, token counts) are accepted only on models declared
`generative: true`; resource measures (CPU, memory, GPU, batch size, queue depth) on any model.

Everything built on measures reads this registry: the edge's validation (`collectors`), SLO
objectives (`<stem>_<stat>[_<unit>]`: `ttft_p95_ms`, `gpu_memory_max_mb`), canary criteria,
the Prometheus metrics (named after the OpenTelemetry metric, in its unit) and the docs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from monitor.common.registry import Registry

__all__ = [
    "ALIASES",
    "MEASURES",
    "OBJECTIVE_STATS",
    "Measure",
    "MeasureKind",
    "Objective",
    "objective_of",
    "objectives",
]

MeasureKind = Literal["generative", "resource"]
# Statistics an objective may bound: a quantile of the window's sketch (max: its largest value).
OBJECTIVE_STATS: Mapping[str, float] = MappingProxyType(
    {"min": 0.0, "p5": 0.05, "p50": 0.5, "p95": 0.95, "p99": 0.99, "max": 1.0}
)


@dataclass(frozen=True)
class Measure:
    """One per-event measure: its canonical field, unit, aliases and exported metric.

    `aliases` maps another field name to the factor that turns its value into this unit (an
    OpenTelemetry time in seconds × 1000 is milliseconds). `prometheus` is the exported gauge,
    in its own unit (`prometheus_scale` × the canonical value). `higher_is_better`: objectives
    and canary criteria bound it from below. `canary`: judged by live canary analysis at p95
    (p5 when higher is better).
    """

    name: str
    stem: str
    unit: str
    kind: MeasureKind
    description: str
    prometheus: str
    prometheus_scale: float = 1.0
    aliases: Mapping[str, float] = field(default_factory=dict)
    higher_is_better: bool = False
    canary: bool = False

    def objective(self, stat: str) -> str:
        """The SLO objective bounding `stat` of this measure (`ttft_p95_ms`)."""
        return f"{self.stem}_{stat}_{self.unit}" if self.unit else f"{self.stem}_{stat}"

    @property
    def canary_stat(self) -> str:
        """The statistic canary analysis compares: the tail that hurts."""
        return "p5" if self.higher_is_better else "p95"


@dataclass(frozen=True)
class Objective:
    """An SLO objective on a measure: its statistic, quantile and direction."""

    name: str
    measure: Measure
    stat: str

    @property
    def q(self) -> float:
        return OBJECTIVE_STATS[self.stat]

    def breached(self, value: float, bound: float) -> bool:
        """Whether `value` is on the wrong side of `bound`."""
        return value < bound if self.measure.higher_is_better else value > bound


MEASURES: Registry[Measure] = Registry("measure")
_S = 1000.0  # seconds → milliseconds


def _add(m: Measure) -> None:
    MEASURES.add(m.name, m)


_add(Measure(
    "ttft_ms", "ttft", "ms", "generative", "Time to first token (prefill and queueing).",
    "gen_ai_server_time_to_first_token_seconds", 1 / _S,
    {"gen_ai.server.time_to_first_token": _S, "time_to_first_token_ms": 1.0,
     "time_to_first_token_seconds": _S},
    canary=True,
))  # fmt: skip
_add(Measure(
    "tpot_ms", "tpot", "ms", "generative", "Time per output token after the first.",
    "gen_ai_server_time_per_output_token_seconds", 1 / _S,
    {"gen_ai.server.time_per_output_token": _S, "mean_itl_ms": 1.0,
     "time_per_output_token_seconds": _S},
    canary=True,
))  # fmt: skip
_add(Measure(
    "tokens_per_s", "tokens_per_s", "", "generative", "Output tokens per second of a request.",
    "gen_ai_server_output_tokens_per_second", 1.0, {"tokens_per_second": 1.0},
    higher_is_better=True, canary=True,
))  # fmt: skip
_add(Measure(
    "input_tokens", "input_tokens", "", "generative", "Tokens of the prompt.",
    "gen_ai_usage_input_tokens", 1.0,
    {"gen_ai.usage.input_tokens": 1.0, "prompt_tokens": 1.0},
))  # fmt: skip
_add(Measure(
    "output_tokens", "output_tokens", "", "generative", "Tokens generated.",
    "gen_ai_usage_output_tokens", 1.0,
    {"gen_ai.usage.output_tokens": 1.0, "completion_tokens": 1.0},
))  # fmt: skip
_add(Measure(
    "cpu_percent", "cpu", "percent", "resource", "CPU use of the replica (100 = one core).",
    "modelwatch_resource_cpu_percent", 1.0, {"process_cpu_percent": 1.0},
))  # fmt: skip
_add(Measure(
    "rss_mb", "rss", "mb", "resource", "Resident memory of the replica (MiB).",
    "modelwatch_resource_rss_megabytes", 1.0, {"process_resident_memory_mb": 1.0},
))  # fmt: skip
_add(Measure(
    "gpu_utilization_percent", "gpu_utilization", "percent", "resource",
    "GPU utilisation of the replica's device (DCGM's DCGM_FI_DEV_GPU_UTIL).",
    "modelwatch_resource_gpu_utilization_percent", 1.0, {"DCGM_FI_DEV_GPU_UTIL": 1.0},
))  # fmt: skip
_add(Measure(
    "gpu_memory_mb", "gpu_memory", "mb", "resource",
    "GPU memory in use (MiB; DCGM's DCGM_FI_DEV_FB_USED).",
    "modelwatch_resource_gpu_memory_megabytes", 1.0, {"DCGM_FI_DEV_FB_USED": 1.0},
))  # fmt: skip
_add(Measure(
    "batch_size", "batch_size", "", "resource", "Requests in the batch that served this one.",
    "modelwatch_resource_batch_size", 1.0,
))  # fmt: skip
_add(Measure(
    "queue_depth", "queue_depth", "", "resource",
    "Requests waiting when this one arrived (vLLM's and NIM's num_requests_waiting).",
    "modelwatch_resource_queue_depth", 1.0, {"num_requests_waiting": 1.0},
))  # fmt: skip


def _aliases() -> Mapping[str, tuple[str, float]]:
    out = {m.name: (m.name, 1.0) for m in MEASURES.values()}
    for m in MEASURES.values():
        for alias, factor in m.aliases.items():
            if alias in out:
                raise ValueError(f"measure field {alias!r} is registered twice")
            out[alias] = (m.name, factor)
    return MappingProxyType(out)


# Every field name an event may carry a measure under → (canonical name, factor to its unit).
ALIASES = _aliases()


def objectives() -> dict[str, Objective]:
    """Every SLO objective the registry defines, by name."""
    return {
        m.objective(stat): Objective(m.objective(stat), m, stat)
        for m in MEASURES.values()
        for stat in OBJECTIVE_STATS
    }


def objective_of(name: str) -> Objective:
    """The objective named `name`; ValueError listing a few valid ones otherwise."""
    found = objectives().get(name)
    if found is None:
        raise ValueError(
            f"unknown measure objective {name!r}; valid: <measure stem>_<stat>[_<unit>] with "
            f"stat one of {', '.join(OBJECTIVE_STATS)}, e.g. ttft_p95_ms, gpu_memory_max_mb"
        )
    return found
